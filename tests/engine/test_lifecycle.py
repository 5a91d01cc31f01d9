"""The lifecycle rebuilt from a hand-made event log: tier states, random access, heat over time."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.engine.lifecycle import EventRecord, Replay, decay_curve, heat_history, replay, span_of
from memory.engine.types import MemoryParams

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
DAY = timedelta(days=1)
MU = 1e7


def ev(n: int, kind: str, subject: str = "", days: float = 0.0, **payload) -> EventRecord:
    return EventRecord(id=n, kind=kind, subject=subject, at=T0 + days * DAY, payload=payload)


def log() -> list[EventRecord]:
    """Three pages; p1 forms segment A, p2 joins it, A is visited, promoted, p3 forms B, B evicted."""
    return [
        ev(1, "page_added", "p1", 0, seq=1),
        ev(2, "page_added", "p2", 1, seq=2),
        ev(3, "moved_to_mtm", "p1", 2, seq=1, segment_id="A"),
        ev(4, "segment_created", "A", 2, page_id="p1", seq=1),
        ev(5, "page_added", "p3", 3, seq=3),
        ev(6, "moved_to_mtm", "p2", 3, seq=2, segment_id="A"),
        ev(7, "segment_merged", "A", 3, page_id="p2", seq=2),
        ev(8, "segments_visited", "", 4, segments=["A"]),
        ev(9, "segment_promoted", "A", 5, heat=3.0),
        ev(10, "fact_added", "f1", 5, text="User has a dog named Max"),
        ev(11, "trait_updated", "openness", 5, before=0.0, after=0.5, page_id="p1"),
        ev(12, "agent_trait_added", "a1", 5, text="Assistant suggested a walk"),
        ev(13, "moved_to_mtm", "p3", 6, seq=3, segment_id="B"),
        ev(14, "segment_created", "B", 6, page_id="p3", seq=3),
        ev(15, "segment_evicted", "B", 7, heat=1.0),
        ev(16, "fact_dropped", "f1", 8),
        ev(17, "edited", "profile", 8, fields=["name"], values={"name": "Ana"}),
    ]


def test_the_tiers_after_each_stage():
    events = log()
    assert replay(events, until=2).stm == ["p1", "p2"]
    after_merge = replay(events, until=7)
    assert after_merge.stm == ["p3"] and list(after_merge.mtm) == ["A"]
    segment = after_merge.mtm["A"]
    assert segment.pages == ["p1", "p2"] and segment.l_interaction == 2 and segment.n_visit == 0
    assert segment.last_access == T0 + 2 * DAY  # a merge does not refresh recency; creation set it
    visited = replay(events, until=8).mtm["A"]
    assert visited.n_visit == 1 and visited.last_access == T0 + 4 * DAY
    promoted = replay(events, until=12)
    assert promoted.mtm["A"].l_interaction == 0 and promoted.mtm["A"].promotions == 1
    assert promoted.facts == {"f1": "User has a dog named Max"} and promoted.traits == {"openness": 0.5}
    assert promoted.agent_traits == {"a1": "Assistant suggested a walk"}
    end = replay(events)
    assert end.stm == [] and list(end.mtm) == ["A"] and list(end.evicted) == ["B"]
    assert end.archived == {"p3"} and end.evicted["B"].evicted_at == T0 + 7 * DAY
    assert end.facts == {} and end.profile == {"name": "Ana"}
    assert end.counts() == {"stm": 0, "mtm_segments": 1, "mtm_pages": 2, "evicted_segments": 1, "archived_pages": 1,
                            "kb_facts": 0, "agent_traits": 1, "user_traits": 1}
    assert end.applied == 17 and end.last.id == 17


def test_random_access_from_snapshots_equals_replaying_from_the_start():
    events = log() * 1  # the same 17 events
    stepper = Replay(events, every=4)
    for count in [17, 0, 5, 12, 3, 16, 8, 9, 1]:  # out of order, across snapshot boundaries
        fast, slow = stepper.state_after(count), replay(events, until=count)
        assert (fast.stm, fast.facts, fast.traits, fast.applied) == (slow.stm, slow.facts, slow.traits, slow.applied)
        assert {k: (s.pages, s.n_visit, s.l_interaction) for k, s in fast.mtm.items()} == \
            {k: (s.pages, s.n_visit, s.l_interaction) for k, s in slow.mtm.items()}
    # A snapshot is not changed by the steps taken from it.
    assert stepper.state_after(4).mtm["A"].pages == ["p1"] and stepper.state_after(8).mtm["A"].n_visit == 1
    assert stepper.state_after(4).mtm["A"].n_visit == 0


def recency_at(days_since: float) -> float:
    return math.exp(-days_since * 86400 / MU)


def test_heat_follows_the_formula_at_known_times():
    params = MemoryParams(recency_mu_seconds=MU)
    history = heat_history(log(), params=params, samples=9, end=T0 + 8 * DAY)  # a grid point every day
    a = {p.at: p for p in history.series["A"]}
    # Day 3, after the merge: L = 2, N = 0, last access day 2.
    after_merge = [p for p in history.series["A"] if p.at == T0 + 3 * DAY][-1]
    assert after_merge.interaction == 2 and after_merge.visits == 0
    assert after_merge.heat == pytest.approx(2 + recency_at(1))
    # Day 4, the visit: N_visit 1 and recency back to 1.
    visit = [p for p in history.series["A"] if p.at == T0 + 4 * DAY][-1]
    assert visit.heat == pytest.approx(1 + 2 + 1.0)
    # Day 5, after the promotion L resets: heat = 1 + 0 + exp(-1 day / μ).
    promoted = [p for p in history.series["A"] if p.at == T0 + 5 * DAY][-1]
    assert promoted.interaction == 0 and promoted.heat == pytest.approx(1 + recency_at(1))
    # Day 8 on the grid: only recency moved.
    assert a[T0 + 8 * DAY].heat == pytest.approx(1 + recency_at(4))
    # B lives from day 6 to its eviction on day 7, and is not sampled after.
    assert max(p.at for p in history.series["B"]) == T0 + 7 * DAY
    assert history.cut == []  # MTM never held 200 segments


def test_the_eviction_cut_is_the_coldest_heat_while_mtm_is_full():
    params = MemoryParams(recency_mu_seconds=MU, mtm_capacity=2)
    events = log()[:14]  # A (visited, promoted) and B both active from day 6
    history = heat_history(events, params=params, samples=7, end=T0 + 6 * DAY)
    assert [at for at, _ in history.cut] == [T0 + 6 * DAY]
    # B: L 1, last access day 6 (heat 2); A: N 1, L 0, last access day 4 (heat 1 + r(2 days)).
    assert history.cut[0][1] == pytest.approx(min(2.0, 1 + recency_at(2)))


def test_decay_curve_and_span():
    curve = decay_curve(span_seconds=30 * 86400, mu_seconds=MU, samples=4)
    assert [round(d / 86400) for d, _ in curve] == [0, 10, 20, 30]
    assert curve[0][1] == 1.0 and curve[-1][1] == pytest.approx(recency_at(30))
    assert span_of(log()) == 8 * DAY and span_of([]) == timedelta(0)
