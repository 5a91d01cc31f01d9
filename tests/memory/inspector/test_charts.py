"""The inspector's figures, built from hand-made data: the traces and values they must carry."""

from __future__ import annotations

import base64
import json
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memory.engine.lifecycle import EventRecord, decay_curve, heat_history
from memory.engine.traits import CATEGORIES, TRAIT_CATALOGUE
from memory.engine.types import MemoryParams
from memory.inspector import charts

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
MU = 1e7


def values(array):
    """A trace's array as plotly.io wrote it: a list, or a base64 typed array."""
    if isinstance(array, dict) and "bdata" in array:
        flat = np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
        shape = array.get("shape")
        return flat.reshape([int(n) for n in shape.split(",")]).tolist() if shape else flat.tolist()
    return list(array)


def figure(text: str) -> dict:
    return json.loads(text)


def traces(fig: dict, **meta) -> list[dict]:
    return [t for t in fig["data"] if all((t.get("meta") or {}).get(k) == v for k, v in meta.items())]


def ev(n, kind, subject="", days=0.0, **payload):
    return EventRecord(id=n, kind=kind, subject=subject, at=T0 + days * DAY, payload=payload)


HISTORY_LOG = [
    ev(1, "page_added", "p1", 0, seq=1), ev(2, "moved_to_mtm", "p1", 1, segment_id="A"),
    ev(3, "segment_created", "A", 1, page_id="p1"), ev(4, "segment_merged", "A", 2, page_id="p2"),
    ev(5, "segments_visited", "", 3, segments=["A"]), ev(6, "segment_created", "B", 4, page_id="p3"),
]


def test_heat_figure_has_a_line_per_segment_the_threshold_and_the_decay():
    params = MemoryParams(recency_mu_seconds=MU, heat_threshold=5.0)
    history = heat_history(HISTORY_LOG, params=params, samples=5, end=T0 + 5 * DAY)
    fig = figure(charts.heat_figure(history, labels={"A": "topic A", "B": "topic B"}, threshold=5.0,
                                    decay=decay_curve(span_seconds=5 * 86400, mu_seconds=MU, samples=6),
                                    mu_seconds=MU))
    a = traces(fig, segment_id="A")[0]
    assert a["name"] == "topic A" and traces(fig, segment_id="B")[0]["name"] == "topic B"
    points = dict(zip(values(a["x"]), zip(values(a["y"]), values(a["customdata"]), strict=True), strict=True))
    # Day 5 (the grid's end): N_visit 1, L_interaction 2, last access day 3.
    heat, terms = points[(T0 + 5 * DAY).isoformat()]
    expected = 1 + 2 + math.exp(-2 * 86400 / MU)
    assert heat == pytest.approx(expected, abs=1e-4) and terms == pytest.approx([1, 2, expected - 3], abs=1e-4)
    assert sum(terms) == pytest.approx(heat, abs=1e-3)
    threshold = traces(fig, role="threshold")[0]
    assert values(threshold["y"]) == [5.0, 5.0] and "τ = 5" in threshold["name"]
    assert values(threshold["x"]) == [(T0 + DAY).isoformat(), (T0 + 5 * DAY).isoformat()]  # the lines' span
    decay = traces(fig, role="decay")[0]
    assert values(decay["x"])[-1] == 5.0 and values(decay["y"])[-1] == pytest.approx(math.exp(-5 * 86400 / MU))
    assert not traces(fig, role="eviction_cut")  # MTM was never full


def test_heat_figure_draws_the_eviction_cut_and_keeps_the_hottest_lines_only():
    events = [ev(i, "segment_created", f"S{i}", i / 10, page_id=f"p{i}") for i in range(1, 16)]
    events += [ev(100 + i, "segment_merged", f"S{i}", 2, page_id=f"q{i}") for i in range(1, 16) for _ in range(i % 4)]
    params = MemoryParams(recency_mu_seconds=MU, mtm_capacity=15)
    history = heat_history(events, params=params, samples=4, end=T0 + 3 * DAY)
    fig = figure(charts.heat_figure(history, labels={}, threshold=5.0, decay=[(0.0, 1.0), (1.0, 0.9)],
                                    mu_seconds=MU))
    assert len([t for t in fig["data"] if (t.get("meta") or {}).get("segment_id")]) == charts.MAX_SEGMENT_LINES
    cut = traces(fig, role="eviction_cut")[0]
    assert len(values(cut["y"])) >= 1 and min(values(cut["y"])) >= 1.0


def test_membership_rows_match_the_segment_assignments():
    joins = [charts.Membership(page_id="p1", segment_id="A", at=T0, created=True),
             charts.Membership(page_id="p2", segment_id="A", at=T0 + DAY, created=False),
             charts.Membership(page_id="p3", segment_id="B", at=T0 + 2 * DAY, created=True),
             charts.Membership(page_id="p4", segment_id="A", at=T0 + 3 * DAY, created=False)]
    fig = figure(charts.membership_figure(joins, evictions={"B": T0 + 4 * DAY}, labels={"A": "alpha", "B": "beta"}))
    joined = traces(fig, role="joined")[0]
    assert list(zip(values(joined["customdata"]), values(joined["y"]), strict=True)) == [("p2", "alpha"),
                                                                                           ("p4", "alpha")]
    formed = traces(fig, role="formed")[0]
    assert values(formed["y"]) == ["alpha", "beta"]
    evicted = traces(fig, role="evicted")[0]
    assert values(evicted["y"]) == ["beta"] and values(evicted["x"]) == [(T0 + 4 * DAY).isoformat()]


def test_membership_aggregates_pages_per_segment_and_day_beyond_the_point_limit(monkeypatch):
    monkeypatch.setattr(charts, "MAX_MEMBERSHIP_POINTS", 3)
    joins = [charts.Membership(page_id=f"p{i}", segment_id="A", at=T0 + timedelta(hours=i), created=i == 0)
             for i in range(10)]
    joined = traces(figure(charts.membership_figure(joins, evictions={}, labels={})), role="joined")[0]
    assert joined["meta"]["aggregated"] and values(joined["customdata"]) == [9]  # p1..p9 on 1 March


def test_traits_figure_has_all_90_dimensions_by_category_with_their_evidence_links():
    bars = [charts.TraitBar(key=d.key, name=d.name, category=d.category, score=0.25 if d.key == "openness" else 0.0,
                            url=f"/evidence/{d.key}/") for d in TRAIT_CATALOGUE]
    fig = figure(charts.traits_figure(bars, categories=CATEGORIES))
    assert [t["meta"]["category"] for t in fig["data"]] == list(CATEGORIES)
    assert sum(len(values(t["r"])) for t in fig["data"]) == 90
    basic = fig["data"][0]
    position = values(basic["theta"]).index("Openness")
    assert values(basic["r"])[position] == 0.25 and basic["customdata"][position] == ["openness", "/evidence/openness/"]
    assert fig["layout"]["polar"]["radialaxis"]["range"] == [0, 1]


def test_provenance_figure_lays_out_sources_left_and_derivations_right():
    nodes = [charts.GraphNode(key="segment:S", label="seg", kind="segment", url="/s", level=0),
             charts.GraphNode(key="page:P", label="page", kind="page", url="/p", level=-1),
             charts.GraphNode(key="fact:F", label="fact", kind="fact", url="/f", level=1)]
    edges = [charts.GraphEdge(source="segment:S", target="page:P", relation="contains", weight=1.0),
             charts.GraphEdge(source="segment:S", target="fact:F", relation="extracted_from", weight=0.5)]
    fig = figure(charts.provenance_figure(nodes, edges))
    positions = {t["name"]: values(t["x"])[0] for t in traces(fig, role="nodes")}
    assert positions == {"segment": 0, "page": -1, "fact": 1}
    assert values(traces(fig, role="edge_labels")[0]["text"]) == ["contains 1.00", "extracted_from 0.50"]
    assert traces(fig, role="nodes")[0]["customdata"] == [["segment:S", "/s"]]


def test_every_figure_has_a_title_and_named_axes():
    params = MemoryParams(recency_mu_seconds=MU, heat_threshold=5.0)
    history = heat_history(HISTORY_LOG, params=params, samples=5, end=T0 + 5 * DAY)
    built = [charts.heat_figure(history, labels={}, threshold=5.0, decay=decay_curve(span_seconds=86400, mu_seconds=MU),
                                mu_seconds=MU),
             charts.tiers_figure({"STM pages": (3, 7)}),
             charts.membership_figure([], evictions={}, labels={}),
             charts.traits_figure([], categories=CATEGORIES)]
    for fig in map(figure, built):
        assert fig["layout"]["title"]["text"]
    tiers = figure(built[1])
    assert tiers["layout"]["xaxis"]["title"]["text"] == "items held, of the tier's capacity"  # counts, not shares


def test_the_heat_figures_threshold_and_recency_span_the_plotted_lines_not_the_logs_clock():
    """An imported conversation of 2025 beside a profile edit made 600 days later: the threshold line
    spans the lines' days, not the months between the two clocks (the demo's data was squeezed into
    the left 15 % of the width)."""
    from memory.engine.lifecycle import HeatHistory, HeatPoint

    line = [HeatPoint(at=T0 + d * DAY, visits=0.0, interaction=float(d), recency=1.0) for d in range(6)]
    history = HeatHistory(series={"A": line}, cut=[], start=T0, end=T0 + 600 * DAY)
    fig = figure(charts.heat_figure(history, labels={}, threshold=5.0, decay=[(0.0, 1.0)], mu_seconds=MU))
    assert values(traces(fig, role="threshold")[0]["x"]) == [T0.isoformat(), (T0 + 5 * DAY).isoformat()]
    assert charts.data_span(history) == (T0, T0 + 5 * DAY)


def test_decay_figures_marker_labels_sit_on_either_side_of_their_lines():
    line = charts.DecayLine(label="yours", ages_seconds=[1, 10, 100], recency=[1, .5, .1], nostalgia=None,
                            crossing_seconds=None)
    fig = figure(charts.decay_figure([line], oldest_seconds=200.0, short_term_seconds=150.0))
    anchors = {a["text"]: a["xanchor"] for a in fig["layout"]["annotations"]}
    assert anchors["end of short-term"] != anchors["oldest memory"]


def test_a_provenance_graph_of_200_nodes_groups_its_crowded_columns():
    centre = charts.GraphNode(key="fact:F", label="the fact", kind="fact", url="/f", level=0)
    pages = [charts.GraphNode(key=f"page:{i}", label=f"page {i} with a long text that would be cut", kind="page",
                              url=f"/p/{i}", level=-1) for i in range(198)]
    segment = charts.GraphNode(key="segment:S", label="Porto, Lia, birthday", kind="segment", url="/s", level=-1)
    edges = [charts.GraphEdge(source="fact:F", target=n.key, relation="contains", weight=1.0) for n in pages]
    edges.append(charts.GraphEdge(source="fact:F", target="segment:S", relation="extracted_from", weight=1.0))
    fig = figure(charts.provenance_figure([centre, *pages, segment], edges))
    labels = [label.replace("<br>", " ") for t in traces(fig, role="nodes") for label in values(t["text"])]
    assert len(labels) == 3 and "198 pages (listed below)" in labels and "1 segment (listed below)" in labels
    assert sorted(values(traces(fig, role="edge_labels")[0]["text"])) == ["contains ×198", "extracted_from 1.00"]
    small = figure(charts.provenance_figure([centre, segment], edges[-1:]))
    assert "Porto, Lia, birthday" in [label.replace("<br>", " ") for t in traces(small, role="nodes")
                                      for label in values(t["text"])]


def test_the_heat_axis_shows_where_the_lines_change_not_months_of_decay_after():
    from memory.engine.lifecycle import HeatHistory, HeatPoint

    line = [HeatPoint(at=T0 + d * DAY, visits=0.0, interaction=float(min(d, 4)), recency=1.0) for d in range(6)]
    line.append(HeatPoint(at=T0 + 600 * DAY, visits=0.0, interaction=4.0, recency=0.1))
    history = HeatHistory(series={"A": line}, cut=[], start=T0, end=T0 + 600 * DAY)
    fig = figure(charts.heat_figure(history, labels={}, threshold=5.0, decay=[(0.0, 1.0)], mu_seconds=MU))
    start, end = fig["layout"]["xaxis"]["range"]
    assert start < T0.isoformat() and (T0 + 4 * DAY).isoformat() < end < (T0 + 5 * DAY).isoformat()
