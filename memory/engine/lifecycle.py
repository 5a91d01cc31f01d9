"""The memory's lifecycle rebuilt from its event log: the tiers at any event, and heat over time.

The services record every change to memory as an event (kind, subject, the memory's own time, a
payload). Replaying them in order rebuilds what STM, MTM and LPM held after any event: which pages
were in STM, which segments were active with which pages and counters, which were evicted, which
facts, agent traits and trait scores long-term memory held. The inspector's replay and its heat and
membership figures are built from this, and a test checks that the replay of a real conversation
ends in the state the database holds.

Events and what they change:
  page_added           the page enters STM
  moved_to_mtm         the page leaves STM (the segment event that follows says where it went)
  segment_created      a new segment with the page (L_interaction 1, last access = the event's time)
  segment_merged       the page joins the segment: L_interaction + 1
  segments_visited     a recall visited them: N_visit + 1, last access = the event's time
  segment_promoted     promoted to LPM: L_interaction resets to 0
  segment_evicted      leaves MTM; its pages are archived
  fact_added/_dropped, agent_trait_added/_dropped, trait_updated (the score after), edited (profile)
  fact_superseded      the fact is kept, marked as ended; supersession_rejected undoes it
Later kinds (edits by operators) are applied by `apply` as they are added.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .heat import recency
from .types import MemoryParams


@dataclass(frozen=True)
class EventRecord:
    """One lifecycle event as the engine reads it."""

    id: int
    kind: str
    subject: str
    at: datetime  # the memory's own time
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class SegmentState:
    id: str
    created_at: datetime
    last_access: datetime
    pages: list[str] = field(default_factory=list)
    n_visit: int = 0
    l_interaction: int = 0
    promotions: int = 0
    evicted_at: datetime | None = None


@dataclass
class TierState:
    """What the three tiers held after the events applied so far."""

    stm: list[str] = field(default_factory=list)  # page ids, oldest first
    mtm: dict[str, SegmentState] = field(default_factory=dict)  # active segments, oldest first
    evicted: dict[str, SegmentState] = field(default_factory=dict)
    archived: set[str] = field(default_factory=set)  # pages of evicted segments
    facts: dict[str, str] = field(default_factory=dict)  # id -> text, oldest first
    agent_traits: dict[str, str] = field(default_factory=dict)
    traits: dict[str, float] = field(default_factory=dict)  # dimension key -> score
    profile: dict[str, Any] = field(default_factory=dict)
    superseded: dict[str, datetime] = field(default_factory=dict)  # fact id -> when it stopped being true
    applied: int = 0  # how many events
    last: EventRecord | None = None

    def counts(self) -> dict[str, int]:
        return {"stm": len(self.stm), "mtm_segments": len(self.mtm),
                "mtm_pages": sum(len(s.pages) for s in self.mtm.values()), "evicted_segments": len(self.evicted),
                "archived_pages": len(self.archived), "kb_facts": len(self.facts),
                "agent_traits": len(self.agent_traits), "user_traits": sum(1 for v in self.traits.values() if v > 0)}

    def copy(self) -> TierState:
        """A snapshot that later events do not change."""
        def seg(s: SegmentState) -> SegmentState:
            return SegmentState(id=s.id, created_at=s.created_at, last_access=s.last_access, pages=list(s.pages),
                                n_visit=s.n_visit, l_interaction=s.l_interaction, promotions=s.promotions,
                                evicted_at=s.evicted_at)

        return TierState(stm=list(self.stm), mtm={k: seg(v) for k, v in self.mtm.items()},
                         evicted={k: seg(v) for k, v in self.evicted.items()}, archived=set(self.archived),
                         facts=dict(self.facts), agent_traits=dict(self.agent_traits), traits=dict(self.traits),
                         profile=dict(self.profile), superseded=dict(self.superseded), applied=self.applied,
                         last=self.last)


def _page_added(state: TierState, event: EventRecord) -> None:
    state.stm.append(event.subject)


def _moved_to_mtm(state: TierState, event: EventRecord) -> None:
    if event.subject in state.stm:
        state.stm.remove(event.subject)


def _segment_joined(state: TierState, event: EventRecord) -> None:
    segment = state.mtm.get(event.subject)
    if segment is None:  # segment_created (or a merge into a segment the log began after)
        segment = state.mtm[event.subject] = SegmentState(id=event.subject, created_at=event.at,
                                                           last_access=event.at)
    page = str(event.payload.get("page_id") or "")
    if page:  # a page joins a segment once: its move is recorded once
        segment.pages.append(page)
    segment.l_interaction += 1


def _segments_visited(state: TierState, event: EventRecord) -> None:
    for sid in event.payload.get("segments") or ():
        segment = state.mtm.get(sid)
        if segment is not None:
            segment.n_visit += 1
            segment.last_access = event.at


def _segment_promoted(state: TierState, event: EventRecord) -> None:
    segment = state.mtm.get(event.subject)
    if segment is not None:
        segment.l_interaction = 0
        segment.promotions += 1


def _segment_evicted(state: TierState, event: EventRecord) -> None:
    segment = state.mtm.pop(event.subject, None)
    if segment is not None:
        segment.evicted_at = event.at
        state.evicted[segment.id] = segment
        state.archived.update(segment.pages)


def _edited(state: TierState, event: EventRecord) -> None:
    if event.subject == "profile":
        state.profile.update(event.payload.get("values") or {})


def _supersession_rejected(state: TierState, event: EventRecord) -> None:
    """An operator undid a decided supersession (a rejected candidate had changed nothing)."""
    if event.payload.get("before") in ("superseded", "accepted"):
        state.superseded.pop(event.subject, None)


APPLY = {
    "page_added": _page_added,
    "moved_to_mtm": _moved_to_mtm,
    "segment_created": _segment_joined,
    "segment_merged": _segment_joined,
    "segments_visited": _segments_visited,
    "segment_promoted": _segment_promoted,
    "segment_evicted": _segment_evicted,
    "fact_added": lambda s, e: s.facts.__setitem__(e.subject, str(e.payload.get("text", ""))),
    "fact_dropped": lambda s, e: s.facts.pop(e.subject, None),
    "agent_trait_added": lambda s, e: s.agent_traits.__setitem__(e.subject, str(e.payload.get("text", ""))),
    "agent_trait_dropped": lambda s, e: s.agent_traits.pop(e.subject, None),
    "trait_updated": lambda s, e: s.traits.__setitem__(e.subject, float(e.payload.get("after", 0.0))),
    "edited": _edited,
    # Facts that change: the old fact is kept, marked with when it stopped (undone by a rejection).
    "fact_superseded": lambda s, e: s.superseded.__setitem__(e.subject, e.at),
    "supersession_rejected": _supersession_rejected,
}


def apply(state: TierState, event: EventRecord) -> None:
    """Apply one event in place (events that change no tier only count)."""
    handler = APPLY.get(event.kind)
    if handler is not None:
        handler(state, event)
    state.applied += 1
    state.last = event


def replay(events: Iterable[EventRecord], *, until: int | None = None) -> TierState:
    """The tiers after the first `until` events (all of them when None)."""
    state = TierState()
    for index, event in enumerate(events):
        if until is not None and index >= until:
            break
        apply(state, event)
    return state


class Replay:
    """Random access into a log: the state after any number of events, from snapshots taken every
    `every` events, so a step costs at most `every` applications, whatever the log's length."""

    def __init__(self, events: Sequence[EventRecord], *, every: int = 200) -> None:
        self.events = events
        self.every = every
        self._snapshots: list[TierState] = [TierState()]

    def __len__(self) -> int:
        return len(self.events)

    def state_after(self, count: int) -> TierState:
        count = max(0, min(count, len(self.events)))
        slot = count // self.every
        while len(self._snapshots) <= slot:  # fill the snapshots up to this one, once
            state = self._snapshots[-1].copy()
            start = state.applied
            for event in self.events[start:start + self.every]:
                apply(state, event)
            self._snapshots.append(state)
        state = self._snapshots[slot].copy()
        for event in self.events[state.applied:count]:
            apply(state, event)
        return state


# ------------------------------------------------------------------ heat over time

@dataclass(frozen=True)
class HeatPoint:
    """A segment's heat at one moment, with its three weighted terms (paper Eq. 4)."""

    at: datetime
    visits: float
    interaction: float
    recency: float

    @property
    def heat(self) -> float:
        return self.visits + self.interaction + self.recency


def heat_point(segment: SegmentState, at: datetime, params: MemoryParams) -> HeatPoint:
    return HeatPoint(at=at, visits=params.heat_alpha * segment.n_visit,
                     interaction=params.heat_beta * segment.l_interaction,
                     recency=params.heat_gamma * recency(last_access=segment.last_access, now=at,
                                                         mu_seconds=params.recency_mu_seconds))


@dataclass
class HeatHistory:
    """Each segment's heat over the log's time span, and the eviction cut where MTM was full."""

    series: dict[str, list[HeatPoint]]
    cut: list[tuple[datetime, float]]  # (time, heat of the coldest segment) while MTM was at capacity
    start: datetime | None
    end: datetime | None


def _grid(start: datetime, end: datetime, samples: int) -> list[datetime]:
    if samples < 2 or end <= start:
        return [start]
    step = (end - start) / (samples - 1)
    return [start + step * i for i in range(samples)]


CHANGES_HEAT = {"segment_created", "segment_merged", "segments_visited", "segment_promoted", "segment_evicted"}


@dataclass
class HeatLog:
    """What one pass over the log leaves for drawing heat: each segment's counters at its changes
    (None once evicted), the grid of sample times and the eviction cut on it."""

    changes: dict[str, list[tuple[datetime, SegmentState | None]]]
    grid: list[datetime]
    cut: list[tuple[datetime, float]]
    start: datetime | None
    end: datetime | None


def heat_history(events: Sequence[EventRecord], *, params: MemoryParams, end: datetime | None = None,
                 samples: int = 60, segments: set[str] | None = None, hottest: int | None = None) -> HeatHistory:
    """Heat of each segment (of `segments` only, or of the `hottest` by peak heat) from its creation
    to its eviction or `end`: the value just before and after every event that changes it, and on a
    grid of `samples` times between, where only the recency term moves. The cut is the coldest active
    segment's heat at the grid times when MTM held `mtm_capacity` segments or more (the heat a
    segment must beat to stay).

    One pass over the log records each segment's counters at its changes; the lines are drawn from
    those afterwards, so choosing the hottest costs no second pass. Heat peaks just after an event
    (between events only the recency term moves, and it falls)."""
    return heat_lines(heat_log(events, params=params, end=end, samples=samples), params=params,
                      segments=segments, hottest=hottest)


def heat_log(events: Sequence[EventRecord], *, params: MemoryParams, end: datetime | None = None,
             samples: int = 60) -> HeatLog:
    """The single pass of heat_history."""
    if not events:
        return HeatLog(changes={}, grid=[], cut=[], start=None, end=end)
    start = events[0].at
    end = max(end or events[-1].at, events[-1].at)
    grid = _grid(start, end, samples)
    state = TierState()
    changes: dict[str, list[tuple[datetime, SegmentState | None]]] = {}  # None: evicted at that time
    cut: list[tuple[datetime, float]] = []
    g = 0
    for event in events:
        while g < len(grid) and grid[g] < event.at:  # the cut at grid times before this event
            if len(state.mtm) >= params.mtm_capacity:
                cut.append((grid[g], _coldest(state, grid[g], params)))
            g += 1
        touched = _touched(event)
        before = {sid: _counters(state.mtm[sid]) for sid in touched if sid in state.mtm}
        apply(state, event)
        for sid in touched:
            seg = state.mtm.get(sid)
            if sid in before:
                changes.setdefault(sid, []).append((event.at, before[sid]))
            if seg is not None or sid in before:
                changes.setdefault(sid, []).append((event.at, _counters(seg) if seg is not None else None))
    while g < len(grid):
        if len(state.mtm) >= params.mtm_capacity:
            cut.append((grid[g], _coldest(state, grid[g], params)))
        g += 1
    return HeatLog(changes=changes, grid=grid, cut=cut, start=start, end=end)


def heat_lines(log: HeatLog, *, params: MemoryParams, segments: set[str] | None = None,
               hottest: int | None = None) -> HeatHistory:
    """The lines of `segments`, or of the `hottest` by peak heat, or of all."""
    if segments is None:
        segments = set(log.changes) if hottest is None else set(_by_peak(log.changes, params)[:hottest])
    series = {sid: _series(log.changes[sid], log.grid, log.end, params) for sid in segments if sid in log.changes}
    return HeatHistory(series=series, cut=log.cut, start=log.start, end=log.end)


def _counters(segment: SegmentState) -> SegmentState:
    return SegmentState(id=segment.id, created_at=segment.created_at, last_access=segment.last_access,
                        n_visit=segment.n_visit, l_interaction=segment.l_interaction)


def _by_peak(changes: Mapping[str, list[tuple[datetime, SegmentState | None]]], params: MemoryParams) -> list[str]:
    peak = {sid: max(heat_point(seg, at, params).heat for at, seg in points if seg is not None)
            for sid, points in changes.items() if any(seg is not None for _, seg in points)}
    return sorted(peak, key=lambda sid: (-peak[sid], sid))


def _series(points: list[tuple[datetime, SegmentState | None]], grid: list[datetime], end: datetime,
            params: MemoryParams) -> list[HeatPoint]:
    """A segment's line: its points at its changes, and the grid times of its life between them."""
    line: list[HeatPoint] = []
    current: SegmentState | None = None
    i = 0
    for moment in [*(t for t in grid if points[0][0] < t <= end), None]:
        while i < len(points) and (moment is None or points[i][0] <= moment):
            at, current = points[i]
            if current is not None:
                line.append(heat_point(current, at, params))
            i += 1
        if moment is None or current is None:
            if current is None and i >= len(points):
                break
            continue
        if not line or line[-1].at != moment:
            line.append(heat_point(current, moment, params))
    return line


def _coldest(state: TierState, at: datetime, params: MemoryParams) -> float:
    mu, alpha, beta, gamma = params.recency_mu_seconds, params.heat_alpha, params.heat_beta, params.heat_gamma
    return min(alpha * s.n_visit + beta * s.l_interaction
               + gamma * math.exp(-max(0.0, (at - s.last_access).total_seconds()) / mu) for s in state.mtm.values())


def _touched(event: EventRecord) -> list[str]:
    if event.kind not in CHANGES_HEAT:
        return []
    if event.kind == "segments_visited":
        return [str(s) for s in event.payload.get("segments") or ()]
    return [event.subject]


def decay_curve(*, span_seconds: float, mu_seconds: float, samples: int = 80) -> list[tuple[float, float]]:
    """(Δt in seconds, exp(−Δt/μ)) from 0 to the span: the recency term alone."""
    span = max(span_seconds, 1.0)
    return [(span * i / (samples - 1), math.exp(-(span * i / (samples - 1)) / mu_seconds)) for i in range(samples)]


def span_of(events: Sequence[EventRecord], end: datetime | None = None) -> timedelta:
    if not events:
        return timedelta(0)
    return max(end or events[-1].at, events[-1].at) - events[0].at
