"""Fscore, heat and recency against hand-computed values."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.engine.heat import heat_breakdown, recency, segment_heat
from memory.engine.similarity import cosine, fscore, jaccard, mean_vector, running_centroid
from memory.engine.types import MemoryParams, SegmentView

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def make_segment(**overrides) -> SegmentView:
    fields = dict(id="s1", summary="", keywords=frozenset(), embedding=(1.0, 0.0), n_visit=0,
                  l_interaction=0, last_access=NOW, page_count=0)
    fields.update(overrides)
    return SegmentView(**fields)


def test_paper_defaults():
    p = MemoryParams()
    assert (p.stm_capacity, p.fscore_threshold, p.mtm_capacity, p.kb_capacity, p.agent_trait_capacity) == (
        7, 0.6, 200, 100, 100)
    assert (p.trait_dimensions, p.heat_threshold, p.recency_mu_seconds) == (90, 5.0, 1e7)
    assert (p.heat_alpha, p.heat_beta, p.heat_gamma, p.top_m_segments, p.top_k_pages) == (1, 1, 1, 5, 10)
    assert (p.top_kb_facts, p.top_agent_traits) == (10, 10)


def test_cosine_hand_values():
    assert cosine((1.0, 0.0), (0.0, 1.0)) == 0.0
    assert cosine((1.0, 1.0), (1.0, 0.0)) == pytest.approx(1 / math.sqrt(2))
    assert cosine((3.0, 4.0), (6.0, 8.0)) == pytest.approx(1.0)
    assert cosine((), (1.0,)) == 0.0
    with pytest.raises(ValueError):
        cosine((1.0, 0.0), (1.0,))


def test_jaccard_hand_values():
    assert jaccard(frozenset({"dog", "park", "run"}), frozenset({"dog", "run", "cat", "vet"})) == pytest.approx(2 / 5)
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(frozenset({"a"}), frozenset({"b"})) == 0.0


def test_fscore_is_cosine_plus_jaccard():
    # cos = 0.5 (given), Jaccard({a,b,c},{b,c,d}) = 2/4 → 1.0
    assert fscore(cos=0.5, keywords_a=frozenset("abc"), keywords_b=frozenset("bcd")) == pytest.approx(1.0)


def test_recency_hand_values():
    assert recency(last_access=NOW, now=NOW, mu_seconds=1e7) == 1.0
    later = NOW + timedelta(seconds=1e7)
    assert recency(last_access=NOW, now=later, mu_seconds=1e7) == pytest.approx(math.exp(-1))
    # an access in the future (clock skew) counts as now, never above 1
    assert recency(last_access=later, now=NOW, mu_seconds=1e7) == 1.0


def test_segment_heat_hand_value():
    # Heat = 1·3 + 1·4 + 1·exp(-5e6/1e7) = 7 + e^-0.5 = 7.60653...
    seg = make_segment(n_visit=3, l_interaction=4, last_access=NOW - timedelta(seconds=5e6))
    assert segment_heat(seg, now=NOW, params=MemoryParams()) == pytest.approx(7 + math.exp(-0.5))
    weighted = MemoryParams(heat_alpha=2.0, heat_beta=0.5, heat_gamma=3.0)
    assert segment_heat(seg, now=NOW, params=weighted) == pytest.approx(6 + 2 + 3 * math.exp(-0.5))
    parts = heat_breakdown(seg, now=NOW, params=MemoryParams())
    assert parts["visits"] == 3 and parts["interaction"] == 4
    assert parts["heat"] == pytest.approx(7 + math.exp(-0.5))


def test_mean_vector_and_running_centroid():
    assert mean_vector([(1.0, 0.0), (0.0, 1.0)]) == pytest.approx((1 / math.sqrt(2), 1 / math.sqrt(2)))
    assert running_centroid((), 0, (0.0, 2.0)) == pytest.approx((0.0, 1.0))
    # centroid of 3 copies of x then add y: (3, 1)/sqrt(10)
    assert running_centroid((1.0, 0.0), 3, (0.0, 1.0)) == pytest.approx((3 / math.sqrt(10), 1 / math.sqrt(10)))


def test_mean_vector_of_stored_float32_vectors_is_the_python_float_sum_to_the_bit():
    import numpy as np

    rows = np.random.default_rng(3).standard_normal((13, 384)).astype(np.float32)
    sums = [0.0] * 384  # the sum of Python floats, one vector after another
    for row in rows.tolist():
        for i, value in enumerate(row):
            sums[i] += value
    norm = math.sqrt(sum(v * v for v in sums))
    expected = tuple(v / norm for v in sums)
    assert mean_vector(list(rows)) == expected
    assert mean_vector([tuple(row) for row in rows.tolist()]) == expected


def test_cosines_are_cosine_row_by_row_with_empty_and_zero_rows_at_zero():
    from memory.engine.similarity import cosine, cosines

    query = [1.0, 2.0, 2.0]
    others = [[2.0, 4.0, 4.0], [0.0, 0.0, 0.0], (), [1.0, 0.0, 0.0], [-1.0, -2.0, -2.0]]
    # hand-computed: parallel 1, zero 0, empty 0, 1/3, opposite -1
    assert cosines(query, others) == pytest.approx([1.0, 0.0, 0.0, 1 / 3, -1.0])
    assert cosines(query, others) == pytest.approx([cosine(query, list(o)) for o in others])
    assert cosines(query, []) == [] and cosines((), [[1.0]]) == [0.0]
