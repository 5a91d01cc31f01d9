"""The inspector's figures: pure functions from plain data to a plotly figure (as JSON).

Built with plotly.graph_objects, handed to the page with `json_script` and drawn by the plotly.js
the app serves itself (static/js/charts.js). Figures aggregate or thin their data so a page stays
fast for a user with 10,000 pages: at most MAX_SEGMENT_LINES heat lines, MAX_POINTS_PER_LINE points
a line, MAX_MEMBERSHIP_POINTS page markers (beyond that, pages are counted per segment and day).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from memory.engine.lifecycle import HeatHistory, HeatPoint

MAX_SEGMENT_LINES = 12
MAX_POINTS_PER_LINE = 240
MAX_MEMBERSHIP_POINTS = 4000
CATEGORY_COLOURS = {"basic_needs_personality": "#3f5bd9", "ai_alignment": "#8a4fd1", "content_interest": "#1f8a57"}
TIER_COLOURS = {"stm": "#3f5bd9", "mtm": "#8a4fd1", "lpm": "#1f8a57"}
CONFIG = {"displaylogo": False, "responsive": True}


def _layout(*, title: str = "", **extra: Any) -> dict[str, Any]:
    """The layout every figure shares; `title` names the figure (also its text alternative's name)."""
    base = {"margin": {"l": 56, "r": 16, "t": 56 if title else 36, "b": 44}, "font": {"size": 12},
            "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff", "hovermode": "closest",
            "legend": {"orientation": "h", "y": -0.18}}
    if title:
        base["title"] = {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 14}}
    base.update(extra)
    return base


def data_span(history: HeatHistory) -> tuple[datetime, datetime] | None:
    """When the plotted heat lines start and end (the log's own span can differ: an imported
    conversation's clock beside today's profile edit or operator actions)."""
    points = [p.at for series in history.series.values() for p in series]
    return (min(points), max(points)) if points else None


def active_span(history: HeatHistory) -> tuple[datetime, datetime] | None:
    """From the first point to the last change of a line's visits or interaction: after it the lines
    only decay, which a wide axis would spend most of its width on (zoom out to see it)."""
    changes = []
    for series in history.series.values():
        for before, point in zip([None, *series], series, strict=False):
            if before is None or (before.visits, before.interaction) != (point.visits, point.interaction):
                changes.append(point.at)
    return (min(changes), max(changes)) if changes else None


def to_json(figure: go.Figure) -> str:
    """The figure as plotly JSON. Array data is handed to plotly as numpy arrays, which it checks
    whole; lists are checked element by element, which made a 10,000-page figure take seconds."""
    return pio.to_json(figure, validate=False)


def _arr(values: Sequence[Any]) -> np.ndarray:
    """Numbers as a float array, anything else (text, ISO times) as an object array."""
    values = list(values)
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=float)
    return np.asarray(values, dtype=object)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _thin(points: Sequence[HeatPoint], limit: int) -> list[HeatPoint]:
    """At most `limit` points, keeping the first, the last and the peak."""
    if len(points) <= limit:
        return list(points)
    step = len(points) / (limit - 2)
    kept = {0, len(points) - 1, max(range(len(points)), key=lambda i: points[i].heat)}
    kept.update(int(i * step) for i in range(limit - 2))
    return [points[i] for i in sorted(kept)]


def heat_figure(history: HeatHistory, *, labels: Mapping[str, str], threshold: float,
                decay: Sequence[tuple[float, float]], mu_seconds: float) -> str:
    """Top: each segment's heat over the conversation's time (the hottest MAX_SEGMENT_LINES by peak),
    the promotion threshold τ and the eviction cut; hover shows the three terms. Bottom: the
    recency term exp(−Δt/μ) alone over the user's time span."""
    figure = make_subplots(rows=2, cols=1, row_heights=[0.68, 0.32], vertical_spacing=0.24,
                           # short: a phone's width shows them whole (the page states the formula)
                           subplot_titles=("Heat", f"Recency exp(−Δt/μ), μ = {mu_seconds:,.0f} s"))
    ranked = sorted(history.series.items(), key=lambda item: -max(p.heat for p in item[1]))
    for sid, points in ranked[:MAX_SEGMENT_LINES]:
        shown = _thin(points, MAX_POINTS_PER_LINE)
        figure.add_trace(go.Scatter(
            x=_arr([_iso(p.at) for p in shown]), y=_arr([round(p.heat, 4) for p in shown]), mode="lines",
            name=labels.get(sid, sid[:8]), line={"shape": "linear", "width": 2},
            customdata=np.asarray([[p.visits, p.interaction, p.recency] for p in shown], dtype=float).round(4),
            hovertemplate=("%{x}<br>heat %{y:.3f}<br>α·N_visit %{customdata[0]:.2f} · β·L_interaction "
                           "%{customdata[1]:.2f} · γ·recency %{customdata[2]:.3f}<extra>%{fullData.name}</extra>"),
            meta={"segment_id": sid},
        ), row=1, col=1)
    span = data_span(history)
    if span is not None:
        figure.add_trace(go.Scatter(x=[_iso(span[0]), _iso(span[1])], y=[threshold, threshold],
                                    mode="lines", name=f"promotion threshold τ = {threshold:g}",
                                    line={"dash": "dash", "color": "#c0392b"}, meta={"role": "threshold"}),
                         row=1, col=1)
    if history.cut:
        figure.add_trace(go.Scatter(x=_arr([_iso(at) for at, _ in history.cut]),
                                    y=_arr([round(h, 4) for _, h in history.cut]),
                                    mode="lines", name="eviction cut (coldest segment while MTM is full)",
                                    line={"dash": "dot", "color": "#7a8396"}, meta={"role": "eviction_cut"}),
                         row=1, col=1)
    figure.add_trace(go.Scatter(x=[round(seconds / 86400, 3) for seconds, _ in decay],
                                y=[round(value, 5) for _, value in decay], mode="lines", name="exp(−Δt/μ)",
                                line={"color": "#1f8a57"}, meta={"role": "decay"},
                                hovertemplate="Δt %{x:.1f} days<br>recency %{y:.4f}<extra></extra>"),
                     row=2, col=1)
    figure.update_xaxes(title_text="memory time", row=1, col=1)
    active = active_span(history)
    if active is not None and active[1] > active[0]:
        pad = (active[1] - active[0]) * 0.05
        figure.update_xaxes(range=[_iso(active[0] - pad), _iso(active[1] + pad)], row=1, col=1)
    figure.update_xaxes(title_text="days since last access (Δt)", row=2, col=1)
    figure.update_yaxes(title_text="heat", row=1, col=1)
    figure.update_yaxes(title_text="recency", range=[0, 1.05], row=2, col=1)
    figure.update_layout(_layout(height=660, title="Segments' heat over time, and the recency term"))
    return to_json(figure)


@dataclass(frozen=True)
class Membership:
    """A page's place in a segment: when it joined and whether it started the segment."""

    page_id: str
    segment_id: str
    at: datetime
    created: bool


def membership_figure(joins: Sequence[Membership], *, evictions: Mapping[str, datetime],
                      labels: Mapping[str, str]) -> str:
    """Every MTM page on a time axis, one row per segment; a diamond where a page started its
    segment, a cross where the segment was evicted. Beyond MAX_MEMBERSHIP_POINTS pages, markers are
    pages per segment and day, sized by count."""
    rows = list(dict.fromkeys(j.segment_id for j in sorted(joins, key=lambda j: j.at)))
    row_label = {sid: f"{labels.get(sid, sid[:8])}" for sid in rows}
    figure = go.Figure()
    merged = [j for j in joins if not j.created]
    if len(merged) <= MAX_MEMBERSHIP_POINTS:
        figure.add_trace(go.Scattergl(
            x=_arr([_iso(j.at) for j in merged]), y=_arr([row_label[j.segment_id] for j in merged]), mode="markers",
            name="page joined", marker={"size": 7, "color": "#8a4fd1", "opacity": 0.75},
            customdata=_arr([j.page_id for j in merged]), meta={"role": "joined"},
            hovertemplate="%{x}<br>%{y}<br>page %{customdata}<extra></extra>"))
    else:
        counts = Counter((j.segment_id, j.at.date()) for j in merged)
        figure.add_trace(go.Scattergl(
            x=_arr([day.isoformat() for _, day in counts]), y=_arr([row_label[sid] for sid, _ in counts]),
            mode="markers",
            name="pages joined (per day)", meta={"role": "joined", "aggregated": True},
            marker={"size": _arr([min(4 + n, 24) for n in counts.values()]), "color": "#8a4fd1", "opacity": 0.6},
            customdata=_arr(list(counts.values())), hovertemplate="%{x}<br>%{y}<br>%{customdata} pages<extra></extra>"))
    started = [j for j in joins if j.created]
    figure.add_trace(go.Scatter(
        x=_arr([_iso(j.at) for j in started]), y=_arr([row_label[j.segment_id] for j in started]), mode="markers",
        name="segment formed", marker={"symbol": "diamond", "size": 10, "color": "#3f5bd9"},
        meta={"role": "formed"}, hovertemplate="%{x}<br>%{y} formed<extra></extra>"))
    gone = [(sid, at) for sid, at in evictions.items() if sid in row_label]
    figure.add_trace(go.Scatter(
        x=[_iso(at) for _, at in gone], y=[row_label[sid] for sid, _ in gone], mode="markers",
        name="segment evicted", marker={"symbol": "x", "size": 11, "color": "#c0392b"},
        meta={"role": "evicted"}, hovertemplate="%{x}<br>%{y} evicted<extra></extra>"))
    figure.update_layout(_layout(height=max(320, 24 * len(rows) + 160), title="Segment membership over time",
                                 xaxis={"title": "memory time"},
                                 yaxis={"title": "segment", "categoryorder": "array",
                                        "categoryarray": [row_label[s] for s in reversed(rows)],
                                        "automargin": True}))
    return to_json(figure)


@dataclass(frozen=True)
class TraitBar:
    key: str
    name: str
    category: str
    score: float
    url: str  # where its evidence is shown


def traits_figure(traits: Sequence[TraitBar], *, categories: Mapping[str, str]) -> str:
    """The 90 dimensions as one polar bar chart, a colour per category, scores 0–1; a bar's click
    opens its evidence (charts.js follows customdata[1])."""
    figure = go.Figure()
    for category, title in categories.items():
        bars = [t for t in traits if t.category == category]
        figure.add_trace(go.Barpolar(
            r=[round(t.score, 4) for t in bars], theta=[t.name for t in bars], name=title,
            marker={"color": CATEGORY_COLOURS.get(category, "#7a8396")},
            customdata=[[t.key, t.url] for t in bars], meta={"category": category, "clickable": True},
            hovertemplate="%{theta}<br>score %{r:.2f}<br>click for its evidence<extra>" + title + "</extra>"))
    # 90 names round one circle print over each other: the bars are named on hover, and in the
    # figure's data table and the list beside it.
    polar = {"radialaxis": {"range": [0, 1], "tickfont": {"size": 10}, "angle": 90, "tickangle": 90},
             "angularaxis": {"showticklabels": False, "ticks": "", "direction": "clockwise"}}
    figure.update_layout(_layout(height=560, polar=polar, title="The 90 trait dimensions, scored 0 to 1"))
    return to_json(figure)


def tiers_figure(counts: Mapping[str, tuple[int, int]]) -> str:
    """Each tier's fill against its capacity (label -> (count, capacity))."""
    labels = list(counts)
    used = [counts[k][0] for k in labels]
    capacity = [counts[k][1] for k in labels]
    # The counts ride on the tier's name ("MTM segments 17/200"): inside a bar of 17 of 200 they were
    # written small or on end, unreadable at a phone's width.
    named = [f"{label} {u}/{c}" for label, u, c in zip(labels, used, capacity, strict=True)]
    figure = go.Figure([
        go.Bar(y=named, x=used, orientation="h", name="held", marker={"color": "#3f5bd9"}),
        go.Bar(y=named, x=[max(c - u, 0) for u, c in zip(used, capacity, strict=True)], orientation="h",
               name="free", marker={"color": "#e3e6ec"}, hoverinfo="skip"),
    ])
    figure.update_layout(_layout(height=240, barmode="stack", showlegend=False, title="What each tier holds",
                                 xaxis={"title": "items held, of the tier's capacity"}))
    return to_json(figure)


@dataclass(frozen=True)
class GraphNode:
    key: str  # "kind:id"
    label: str
    kind: str
    url: str
    level: int  # 0 the memory shown; -n what it came from; +n what was derived from it


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    relation: str
    weight: float


KIND_COLOURS = {"page": "#3f5bd9", "segment": "#8a4fd1", "fact": "#1f8a57", "agent_trait": "#a66300",
                "user_trait": "#c0392b", "recollection": "#0f7c8c", "file": "#5d6b82"}


MAX_NODES_PER_LEVEL = 10  # more in one column and their labels print over each other: grouped


def group_crowded(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge], *,
                  limit: int = MAX_NODES_PER_LEVEL) -> tuple[list[GraphNode], list[GraphEdge]]:
    """Columns of more than `limit` nodes become one node per kind ("22 pages"); the edges to their
    members become one edge to the group, labelled with how many it stands for. The page lists
    every node under the figure."""
    by_level: dict[int, list[GraphNode]] = {}
    for node in nodes:
        by_level.setdefault(node.level, []).append(node)
    group_of: dict[str, str] = {}
    kept: list[GraphNode] = []
    for level, members in by_level.items():
        if len(members) <= limit or level == 0:
            kept += members
            continue
        for kind in dict.fromkeys(n.kind for n in members):
            same = [n for n in members if n.kind == kind]
            key = f"group:{level}:{kind}"
            noun = kind.replace("_", " ")
            kept.append(GraphNode(key=key, label=f"{len(same)} {noun}{'' if len(same) == 1 else 's'} (listed below)",
                                  kind=kind, url="", level=level))
            group_of.update({n.key: key for n in same})
    merged: dict[tuple[str, str, str], list[GraphEdge]] = {}
    for edge in edges:
        source, target = group_of.get(edge.source, edge.source), group_of.get(edge.target, edge.target)
        merged.setdefault((source, target, edge.relation), []).append(edge)
    grouped = [GraphEdge(source=source, target=target,
                         relation=relation if len(found) == 1 else f"{relation} ×{len(found)}",
                         weight=max(e.weight for e in found)) for (source, target, relation), found in merged.items()]
    return kept, grouped


def provenance_figure(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge]) -> str:
    """A layered graph: the memory in the middle, what it came from to the left, what was derived
    from it to the right; edges labelled by relation and weight; a node's click opens it. A column
    too crowded to read is grouped by kind (group_crowded)."""
    nodes, edges = group_crowded(nodes, edges)
    by_level: dict[int, list[GraphNode]] = {}
    for node in nodes:
        by_level.setdefault(node.level, []).append(node)
    position = {}
    for level, members in by_level.items():
        for i, node in enumerate(members):
            position[node.key] = (level, (len(members) - 1) / 2 - i)
    drawn = [(position[e.source], position[e.target], e) for e in edges
             if e.source in position and e.target in position]
    xs: list[float | None] = []
    ys: list[float | None] = []
    for (x0, y0), (x1, y1), _ in drawn:  # one trace for every edge: a trace each is slow to build
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    traces = [
        go.Scatter(x=xs, y=ys, mode="lines", line={"color": "#c9cdd6", "width": 1.5}, hoverinfo="skip",
                   showlegend=False, meta={"role": "edges"}),
        go.Scatter(x=[(a[0] + b[0]) / 2 for a, b, _ in drawn], y=[(a[1] + b[1]) / 2 for a, b, _ in drawn],
                   mode="text", text=[e.relation if "×" in e.relation else f"{e.relation} {e.weight:.2f}"
                                      for _, _, e in drawn],
                   textfont={"size": 9, "color": "#7a8396"}, hoverinfo="skip", showlegend=False,
                   meta={"role": "edge_labels"}),
    ]
    for kind in dict.fromkeys(n.kind for n in nodes):
        members = [n for n in nodes if n.kind == kind]
        traces.append(go.Scatter(
            x=[position[n.key][0] for n in members], y=[position[n.key][1] for n in members], mode="markers+text",
            text=[_wrapped(n.label if n.key.startswith("group:") else _short(n.label)) for n in members],
            textposition="top center", name=kind.replace("_", " "), cliponaxis=False,
            marker={"size": [18 if n.level == 0 else 12 for n in members], "color": KIND_COLOURS.get(kind, "#7a8396")},
            customdata=[[n.key, n.url] for n in members], meta={"role": "nodes", "clickable": True},
            hovertemplate="%{text}<extra>" + kind + "</extra>"))
    tallest = max((len(members) for members in by_level.values()), default=1)
    levels = sorted(by_level)
    return to_json(go.Figure(data=traces, layout=_layout(height=max(360, 70 * tallest + 120),
                                                         xaxis={"visible": False,
                                                                "range": [levels[0] - 0.6, levels[-1] + 0.6]},
                                                         yaxis={"visible": False,
                                                                "range": [-tallest / 2 - 0.2, tallest / 2 + 0.4]},
                                                         title="Where this memory came from and what came of it")))


def _wrapped(label: str, width: int = 16) -> str:
    """A node's label on lines of about `width` characters, so that three columns fit a phone."""
    lines, line = [], ""
    for word in label.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "<br>".join([*lines, line] if line else lines)


def _short(label: str, limit: int = 30) -> str:
    """A node's label cut at a word, so neighbouring labels keep apart."""
    if len(label) <= limit:
        return label
    cut = label[:limit - 1]
    return (cut[:cut.rfind(" ")] if " " in cut else cut) + "…"


@dataclass(frozen=True)
class DecayLine:
    """One decay curve to draw: its points (engine CurvePoints), the crossing age, and how to show it."""

    label: str
    ages_seconds: Sequence[float]
    recency: Sequence[float]
    nostalgia: Sequence[float] | None  # drawn for the user's own curve only
    crossing_seconds: float | None
    dash: str = "solid"


def decay_figure(lines: Sequence[DecayLine], *, oldest_seconds: float, short_term_seconds: float) -> str:
    """Recency and nostalgia over a memory's age (days, log axis: minutes and decades on one plot),
    the point where they cross marked, the end of the short-term duration and the oldest memory
    shown as vertical lines; variants with other settings dashed beside the user's own."""
    day = 86400.0
    figure = go.Figure()
    for number, line in enumerate(lines):
        ages = [max(age, 1.0) / day for age in line.ages_seconds]  # age 0 cannot sit on a log axis
        colour = "#3f5bd9" if number == 0 else ["#8a4fd1", "#a66300", "#1f8a57"][(number - 1) % 3]
        figure.add_trace(go.Scatter(x=_arr(ages), y=_arr(list(line.recency)), mode="lines",
                                    name=f"recency · {line.label}", line={"color": colour, "dash": line.dash}))
        if line.nostalgia is not None:
            figure.add_trace(go.Scatter(x=_arr(ages), y=_arr(list(line.nostalgia)), mode="lines",
                                        name=f"nostalgia · {line.label}", line={"color": "#c0392b"}))
        if line.crossing_seconds is not None:
            figure.add_trace(go.Scatter(
                x=_arr([max(line.crossing_seconds, 1.0) / day]), y=_arr([0.5]), mode="markers",
                name=f"recency = nostalgia · {line.label}", marker={"color": colour, "size": 10, "symbol": "x"},
                hovertemplate=f"crossing at {age_words(line.crossing_seconds)}<extra></extra>"))
    # The two markers' labels on either side of their lines: near each other they would overprint.
    for seconds, text, side in ((short_term_seconds, "end of short-term", "top left"),
                                (oldest_seconds, "oldest memory", "top right")):
        if seconds > 0:
            figure.add_vline(x=max(seconds, 1.0) / day, line={"color": "#9aa0a6", "dash": "dot"},
                             annotation_text=text, annotation_position=side)
    figure.update_layout(_layout(height=380, title="Recency and nostalgia by a memory's age",
                                 xaxis={"title": "age of a memory (days, log scale)", "type": "log"},
                                 yaxis={"title": "weight", "range": [0, 1.02]}))
    return to_json(figure)


def age_words(seconds: float) -> str:
    """A duration as people read it: "3.2 days", "25 minutes"."""
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} seconds"
