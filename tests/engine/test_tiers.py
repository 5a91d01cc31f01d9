"""Tier decisions: STM FIFO, merge vs new segment at θ, eviction, promotion, FIFO LPM queues."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.engine import mid_term
from memory.engine.long_term import fifo_overflow, normalise_fact
from memory.engine.short_term import chain_link, stm_overflow
from memory.engine.types import MemoryParams, PageView, SegmentView

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def seg(sid: str, *, embedding=(1.0, 0.0), keywords=(), n_visit=0, l_interaction=0, age_s=0.0, pages=0):
    return SegmentView(id=sid, summary="", keywords=frozenset(keywords), embedding=tuple(embedding),
                       n_visit=n_visit, l_interaction=l_interaction,
                       last_access=NOW - timedelta(seconds=age_s), page_count=pages)


def page(*, embedding=(1.0, 0.0), keywords=()):
    return PageView(id="p", query="q", response="r", timestamp=NOW, keywords=frozenset(keywords),
                    embedding=tuple(embedding))


def test_eighth_page_moves_the_oldest():
    ids = [f"p{i}" for i in range(1, 9)]
    assert stm_overflow(ids, capacity=7).move_to_mtm == ("p1",)
    assert stm_overflow(ids[:7], capacity=7).move_to_mtm == ()
    assert stm_overflow(ids, capacity=5).move_to_mtm == ("p1", "p2", "p3")
    with pytest.raises(ValueError):
        stm_overflow(ids, capacity=0)


def test_chain_link():
    assert chain_link(similarity=None, threshold=0.3).continues is False
    assert chain_link(similarity=0.31, threshold=0.3).continues is True
    assert chain_link(similarity=0.29, threshold=0.3).continues is False


@pytest.mark.parametrize(("cos_y", "expect_merge"), [(0.61, True), (0.59, False)])
def test_merge_vs_new_segment_on_both_sides_of_theta(cos_y, expect_merge):
    # page embedding (1,0); segment embedding (cos, sqrt(1-cos²)); no keywords → Fscore = cos
    segment = seg("s1", embedding=(cos_y, math.sqrt(1 - cos_y ** 2)))
    plan = mid_term.plan_merge(page(), [segment], params=MemoryParams())
    assert plan.candidates[0].fscore == pytest.approx(cos_y)
    assert plan.segment_id == ("s1" if expect_merge else None)


def test_keywords_lift_fscore_over_theta():
    # cos 0.4 alone stays under 0.6; Jaccard 2/4 = 0.5 lifts it to 0.9
    segment = seg("s1", embedding=(0.4, math.sqrt(1 - 0.16)), keywords=("dog", "park", "walk"))
    plan = mid_term.plan_merge(page(keywords=("dog", "park", "vet")), [segment], params=MemoryParams())
    assert plan.candidates[0].jaccard == pytest.approx(0.5)
    assert plan.segment_id == "s1"


def test_merge_picks_best_fscore():
    a = seg("a", embedding=(0.7, math.sqrt(1 - 0.49)))
    b = seg("b", embedding=(0.9, math.sqrt(1 - 0.81)))
    plan = mid_term.plan_merge(page(), [a, b], params=MemoryParams())
    assert plan.segment_id == "b"
    assert [c.segment_id for c in plan.candidates] == ["b", "a"]


def test_merge_reads_topics_with_float32_vectors_as_whole_segments():
    # A move scores SegmentTopic rows (id, keywords, the stored float32 vector): the same plan,
    # to the bit, as whole segments whose vectors are the same float32 values as Python floats.
    import numpy as np

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5, 8)).astype(np.float32)
    words = [("dog",), ("dog", "park"), (), ("vet",), ("park", "walk")]
    pairs = list(enumerate(zip(vectors, words, strict=True)))
    whole = [seg(f"s{i}", embedding=v.tolist(), keywords=w) for i, (v, w) in pairs]
    topics = [mid_term.SegmentTopic(f"s{i}", frozenset(w), v) for i, (v, w) in pairs]
    query = page(embedding=tuple(float(x) for x in vectors[1] + 0.1), keywords=("dog", "park"))
    assert mid_term.plan_merge(query, topics, params=MemoryParams()) == \
        mid_term.plan_merge(query, whole, params=MemoryParams())
    assert mid_term.plan_merge(query, topics, params=MemoryParams()).segment_id == "s1"


def test_no_segments_means_new_segment():
    assert mid_term.plan_merge(page(), [], params=MemoryParams()).segment_id is None


def test_at_capacity_plus_one_the_coldest_goes():
    params = MemoryParams(mtm_capacity=3)
    segments = [seg("hot", n_visit=5), seg("warm", l_interaction=2), seg("cold", age_s=1e8),
                seg("mild", n_visit=1)]
    plan = mid_term.plan_eviction(segments, now=NOW, params=params)
    assert plan.segment_ids == ("cold",)
    assert plan.heats[0] == pytest.approx(math.exp(-10))
    assert mid_term.plan_eviction(segments[:3], now=NOW, params=params).segment_ids == ()


def test_eviction_default_capacity_200():
    segments = [seg(f"s{i:03d}", n_visit=i + 1) for i in range(201)]
    plan = mid_term.plan_eviction(segments, now=NOW, params=MemoryParams())
    assert plan.segment_ids == ("s000",)


def test_promotion_over_tau_only_with_new_pages():
    params = MemoryParams()
    # heat = 0 + 5 + 1 = 6 > 5 → promote; heat = 0 + 4 + 1 = 5 is not > 5
    over = seg("over", l_interaction=5)
    at = seg("at", l_interaction=4)
    visited = seg("visited", n_visit=9, l_interaction=0)  # hot but nothing new since promotion
    promotions = mid_term.plan_promotions([over, at, visited], now=NOW, params=params)
    assert [p.segment_id for p in promotions] == ["over"]
    assert promotions[0].heat == pytest.approx(6.0)


def test_promotion_floor_is_tau_less_the_most_recency_can_add():
    # heat = α·n + β·l + γ·R with R in (0, 1]: only α·n + β·l > τ − max(γ, 0) can pass τ
    assert mid_term.promotion_floor(MemoryParams()) == pytest.approx(4.0)  # τ 5, γ 1
    assert mid_term.promotion_floor(MemoryParams(heat_threshold=2.5, heat_gamma=0.5)) == pytest.approx(2.0)
    assert mid_term.promotion_floor(MemoryParams(heat_gamma=-1.0)) == pytest.approx(5.0)
    # A segment just above the floor passes τ by its recency alone; one at the floor cannot.
    params = MemoryParams(heat_threshold=4.5)
    lifted, at_floor = seg("lifted", l_interaction=4), seg("old", l_interaction=3, n_visit=0)
    assert 4 > mid_term.promotion_floor(params) and 3 <= mid_term.promotion_floor(params)
    assert [p.segment_id for p in mid_term.plan_promotions([lifted, at_floor], now=NOW, params=params)] == ["lifted"]


def test_state_transitions():
    s = seg("s", embedding=(1.0, 0.0), l_interaction=2, pages=2, n_visit=1, age_s=100)
    merged = mid_term.segment_after_merge(s, page(embedding=(0.0, 1.0)))
    assert (merged.l_interaction, merged.page_count) == (3, 3)
    assert merged.embedding == pytest.approx((2 / math.sqrt(5), 1 / math.sqrt(5)))
    visited = mid_term.segment_after_visit(s, now=NOW)
    assert (visited.n_visit, visited.last_access) == (2, NOW)
    assert mid_term.segment_after_promotion(s).l_interaction == 0
    assert s.l_interaction == 2  # inputs are never mutated


def test_segment_keywords_prefers_recurring():
    sets = [frozenset({"dog", "park"}), frozenset({"dog", "vet"}), frozenset({"dog", "park", "ball"})]
    assert mid_term.segment_keywords(sets, limit=2) == frozenset({"dog", "park"})


def test_fifo_overflow_keeps_newest_100():
    ids = [str(i) for i in range(103)]
    assert fifo_overflow(ids, capacity=100) == ("0", "1", "2")
    assert fifo_overflow(ids[:100], capacity=100) == ()
    assert normalise_fact("  User likes   Hiking. ") == "user likes hiking"
