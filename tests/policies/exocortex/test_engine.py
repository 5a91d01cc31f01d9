"""The Exocortex weighting against hand-computed values, and its decay curves' properties from 5 days to 30 years."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memory.policies.exocortex.engine.decay import (
    CORE,
    REACTION,
    RECOLLECTION,
    DecaySettings,
    TypeWeights,
    curve_points,
    decay_curve,
    exocortex_weight,
    generative_agents_recency,
    generative_agents_weight,
    intersection_age,
    nostalgia,
    recencies,
    recency,
    relevance_from_cosine,
    short_term_threshold,
)

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0
YEAR = 365.25 * DAY
S = 25 * MINUTE
DEFAULTS = DecaySettings()
SPANS = {"5 days": 5 * DAY, "30 days": 30 * DAY, "1 year": YEAR, "5 years": 5 * YEAR, "30 years": 30 * YEAR}
AGES_TO_100 = {**SPANS, "45 years": 45 * YEAR, "100 years": 100 * YEAR}


def rec(age: float, span: float, settings: DecaySettings = DEFAULTS) -> float:
    return recency(age, oldest_age_seconds=span, settings=settings)


def long_term_ages(span: float, count: int = 400) -> np.ndarray:
    """Ages spread evenly over the long-term part of the span (S, L]."""
    return np.linspace(S, span, count + 1)[1:]


# --- weights ----------------------------------------------------------------------------------

def test_exocortex_weight_hand_values():
    # relevance 0.6, recency 0.3: nostalgia 0.7, (0.6 · 0.7 + 0.3) · 1 = 0.72
    core = exocortex_weight(relevance=0.6, recency=0.3, kind=CORE)
    assert core.weight == pytest.approx(0.72)
    assert core.as_dict() == pytest.approx({"relevance": 0.6, "recency": 0.3, "nostalgia": 0.7,
                                            "type_weight": 1.0, "weight": 0.72})
    assert (core.policy, core.kind) == ("exocortex", "core")
    # the same as a recollection: 0.72 · 1.1
    assert exocortex_weight(relevance=0.6, recency=0.3, kind=RECOLLECTION).weight == pytest.approx(0.792)
    # a probabilistic OR: 1 − (1 − 0.2)(1 − 0.9) = 0.92
    assert exocortex_weight(relevance=0.2, recency=0.9, kind=REACTION).weight == pytest.approx(0.92)
    assert exocortex_weight(relevance=1.0, recency=0.0, kind=CORE).weight == pytest.approx(1.0)
    assert exocortex_weight(relevance=0.0, recency=0.0, kind=CORE).weight == 0.0


def test_generative_agents_weight_hand_values():
    ga = generative_agents_weight(relevance=0.6, recency=0.3, kind=CORE)
    assert ga.weight == pytest.approx(0.18)
    assert ga.nostalgia is None
    assert ga.as_dict() == pytest.approx({"relevance": 0.6, "recency": 0.3, "type_weight": 1.0, "weight": 0.18})
    assert generative_agents_weight(relevance=0.6, recency=0.3, kind=RECOLLECTION).weight == pytest.approx(0.198)
    custom = TypeWeights(core=1.0, recollection=1.3, reaction=0.5)
    assert generative_agents_weight(relevance=0.5, recency=0.5, kind=REACTION, type_weights=custom).weight == 0.125
    # the paper's recency: 0.995 per hour since last access
    assert generative_agents_recency(hours_since_access=24) == pytest.approx(0.995 ** 24)
    assert generative_agents_recency(hours_since_access=-3) == 1.0


def test_type_weights_default_to_a_slight_recollection_boost():
    weights = TypeWeights()
    assert (weights.of(CORE), weights.of(RECOLLECTION), weights.of(REACTION)) == (1.0, 1.1, 1.0)
    with pytest.raises(ValueError, match="unknown memory kind 'page'"):
        weights.of("page")
    with pytest.raises(ValueError, match="recollection"):
        TypeWeights(recollection=-1.0)


@pytest.mark.parametrize("relevance, recency_value", [(1.2, 0.5), (-0.1, 0.5), (0.5, 1.01), (math.nan, 0.5)])
def test_weights_refuse_terms_outside_unit_range(relevance, recency_value):
    with pytest.raises(ValueError, match="must lie in"):
        exocortex_weight(relevance=relevance, recency=recency_value, kind=CORE)
    with pytest.raises(ValueError, match="must lie in"):
        generative_agents_weight(relevance=relevance, recency=recency_value, kind=CORE)


def test_relevance_from_cosine_clamps_the_negative_side():
    assert relevance_from_cosine(0.42) == 0.42
    assert relevance_from_cosine(-0.3) == 0.0
    assert relevance_from_cosine(1.0000001) == 1.0
    with pytest.raises(ValueError, match="cosine"):
        relevance_from_cosine(1.5)
    with pytest.raises(ValueError, match="cosine"):
        relevance_from_cosine(math.nan)


# --- curves: hand values ----------------------------------------------------------------------

def test_short_term_threshold_hand_values():
    # θ_st = θ_lt + Δ + (1 − θ_lt − Δ) / (1 + ln(1 + L/S)); θ_lt = 0.01, Δ = 0.1
    assert short_term_threshold(oldest_age_seconds=0, settings=DEFAULTS) == pytest.approx(1.0)
    # L/S = e − 1: ln(1 + L/S) = 1, θ_st = 0.11 + 0.89 / 2
    assert short_term_threshold(oldest_age_seconds=S * (math.e - 1), settings=DEFAULTS) == pytest.approx(0.555)
    settings = DecaySettings(short_term_seconds=600, long_term_threshold=0.1, long_term_band_floor=0.0)
    assert short_term_threshold(oldest_age_seconds=600 * (math.e ** 2 - 1), settings=settings) == pytest.approx(
        0.1 + 0.9 / 3)


def test_recency_hand_values_on_both_parts():
    span = S * (math.e - 1)  # θ_st = 0.555, long-term band 0.545
    assert rec(0, span) == 1.0
    assert rec(S / 2, span) == pytest.approx(math.sqrt(0.555))  # exp(−λ S/2) = θ_st^(1/2)
    assert rec(S, span) == pytest.approx(0.555)
    # half-way down the logarithm: ln(1 + 100 u) = ln(101) / 2, u = (√101 − 1) / 100
    share = (math.sqrt(101) - 1) / 100
    assert rec(S + share * (span - S), span) == pytest.approx(0.555 - 0.545 / 2)
    assert rec(span, span) == pytest.approx(0.01)
    assert nostalgia(span, oldest_age_seconds=span, settings=DEFAULTS) == pytest.approx(0.99)


def test_intersection_hand_value():
    # θ_st = 0.25 when 1 + ln(1 + L/S) = 0.89 / 0.14; then r = 1/2 at S · ln 2 / ln 4 = S / 2
    span = S * (math.exp(0.89 / 0.14 - 1) - 1)
    assert short_term_threshold(oldest_age_seconds=span, settings=DEFAULTS) == pytest.approx(0.25)
    assert intersection_age(oldest_age_seconds=span, settings=DEFAULTS) == pytest.approx(S / 2)
    # no crossing when the floor itself is above a half, nor in a store younger than S
    assert intersection_age(oldest_age_seconds=YEAR, settings=DecaySettings(long_term_threshold=0.6)) is None
    assert intersection_age(oldest_age_seconds=10 * MINUTE, settings=DEFAULTS) is None


def test_intersection_in_the_long_term_part_of_a_young_store():
    span = 40 * MINUTE  # θ_st above a half: recency crosses it after S
    crossing = intersection_age(oldest_age_seconds=span, settings=DEFAULTS)
    assert short_term_threshold(oldest_age_seconds=span, settings=DEFAULTS) > 0.5
    assert S < crossing < span
    assert rec(crossing, span) == pytest.approx(0.5)


def test_bulk_recencies_match_the_scalar_curve():
    span = 2 * YEAR
    ages = [-5.0, 0.0, 60.0, S, S + 1, DAY, 200 * DAY, span]
    assert recencies(ages, oldest_age_seconds=span, settings=DEFAULTS) == pytest.approx(
        [rec(max(a, 0.0), span) for a in ages])
    young = [0.0, 5 * MINUTE]  # a store younger than S has no long-term part
    assert recencies(young, oldest_age_seconds=5 * MINUTE, settings=DEFAULTS) == pytest.approx(
        [rec(a, 5 * MINUTE) for a in young])
    just_past = [S + 10.0, 30 * MINUTE]  # a long-term part shorter than S
    assert recencies(just_past, oldest_age_seconds=30 * MINUTE, settings=DEFAULTS) == pytest.approx(
        [rec(a, 30 * MINUTE) for a in just_past])


def test_bad_ages_and_settings_are_refused():
    with pytest.raises(ValueError, match="older than the oldest memory"):
        rec(2 * DAY, DAY)
    with pytest.raises(ValueError, match="older than the oldest memory"):
        recencies([DAY, 3 * DAY], oldest_age_seconds=2 * DAY, settings=DEFAULTS)
    with pytest.raises(ValueError, match="finite"):
        rec(math.inf, DAY)
    with pytest.raises(ValueError, match="finite"):
        rec(10.0, math.nan)
    with pytest.raises(ValueError, match="short-term duration"):
        DecaySettings(short_term_seconds=0)
    with pytest.raises(ValueError, match="long-term decay threshold"):
        DecaySettings(long_term_threshold=0.95)  # no room for the band above it
    with pytest.raises(ValueError, match="long-term decay threshold"):
        DecaySettings(long_term_threshold=0.0)
    with pytest.raises(ValueError, match="at least 4 points"):
        curve_points(oldest_age_seconds=DAY, settings=DEFAULTS, count=3)
    assert rec(-30.0, DAY) == 1.0  # clock skew: a memory from the future counts as now


# --- curves: the seed's properties over 5 days to 30 years ------------------------------------

@pytest.mark.parametrize("span", SPANS.values(), ids=SPANS.keys())
def test_recent_memories_are_favoured(span):
    ages = np.unique(np.concatenate([np.linspace(0, S, 50), np.geomspace(S, span, 400), long_term_ages(span)]))
    values = recencies(ages, oldest_age_seconds=span, settings=DEFAULTS)
    assert values[0] == 1.0 and values[-1] == pytest.approx(DEFAULTS.long_term_threshold)
    assert np.all(np.diff(values) < 0)


@pytest.mark.parametrize("span", SPANS.values(), ids=SPANS.keys())
def test_a_short_term_memory_is_above_every_long_term_one(span):
    short = recencies(np.linspace(0, S, 200), oldest_age_seconds=span, settings=DEFAULTS)
    long = recencies(np.concatenate([[S + 1.0], long_term_ages(span)]), oldest_age_seconds=span, settings=DEFAULTS)
    assert short.min() > long.max()


@pytest.mark.parametrize("span", SPANS.values(), ids=SPANS.keys())
def test_old_relevant_memories_are_not_drowned(span):
    oldest, minute_old = rec(span, span), rec(MINUTE, span)
    old_match = exocortex_weight(relevance=1.0, recency=oldest, kind=CORE).weight
    assert old_match > exocortex_weight(relevance=0.0, recency=minute_old, kind=CORE).weight
    assert old_match > exocortex_weight(relevance=0.05, recency=minute_old, kind=CORE).weight
    # The product drowns it: the old perfect match weighs θ_lt = 0.01, and a barely related
    # memory of a minute ago (relevance 0.05) already outranks it.
    old_ga = generative_agents_weight(relevance=1.0, recency=oldest, kind=CORE).weight
    assert old_ga == pytest.approx(0.01)
    assert generative_agents_weight(relevance=0.05, recency=minute_old, kind=CORE).weight > old_ga
    # A realistic pair: a relevant page from the start of the span against an hour-old aside.
    hour_old = rec(HOUR, span)
    assert exocortex_weight(relevance=0.8, recency=oldest, kind=CORE).weight > exocortex_weight(
        relevance=0.3, recency=hour_old, kind=CORE).weight
    assert generative_agents_weight(relevance=0.8, recency=oldest, kind=CORE).weight < generative_agents_weight(
        relevance=0.3, recency=hour_old, kind=CORE).weight


@pytest.mark.parametrize("span", AGES_TO_100.values(), ids=AGES_TO_100.keys())
def test_long_term_strength_does_not_collapse(span):
    # The stated bound: over the long-term span, the band θ_st − θ_lt stays ≥ Δ = 0.1 and the
    # memories between the 10th and 90th percentile of age differ in recency by ≥ 0.04.
    values = recencies(long_term_ages(span), oldest_age_seconds=span, settings=DEFAULTS)
    assert decay_curve(oldest_age_seconds=span, settings=DEFAULTS).long_term_band >= 0.1
    assert np.percentile(values, 90) - np.percentile(values, 10) >= 0.04


def test_without_the_band_floor_long_term_strength_would_narrow_with_age():
    bare = DecaySettings(long_term_band_floor=0.0)
    bands = [decay_curve(oldest_age_seconds=span, settings=bare).long_term_band for span in AGES_TO_100.values()]
    assert all(later < earlier for earlier, later in zip(bands, bands[1:], strict=False))
    assert bands[-1] < 0.07  # under the floor's 0.1: the squeeze the counter prevents


def test_the_intersection_moves_into_short_term_memory_ever_more_slowly():
    spans = list(SPANS.values())
    crossings = [intersection_age(oldest_age_seconds=span, settings=DEFAULTS) for span in spans]
    assert all(0 < crossing < S for crossing in crossings)
    assert all(later < earlier for earlier, later in zip(crossings, crossings[1:], strict=False))
    per_e_fold = [(crossings[i] - crossings[i + 1]) / math.log(spans[i + 1] / spans[i]) for i in range(len(spans) - 1)]
    assert all(later < earlier for earlier, later in zip(per_e_fold, per_e_fold[1:], strict=False))
    # It has entered by the time the store is two hours old, and was not there at 30 minutes.
    assert intersection_age(oldest_age_seconds=2 * HOUR, settings=DEFAULTS) < S
    assert intersection_age(oldest_age_seconds=30 * MINUTE, settings=DEFAULTS) > S


def test_the_short_term_threshold_moves_logarithmically_and_short_term_memory_survives_45_years():
    spans = [5 * DAY * 2 ** i for i in range(14)]  # 5 days to 112 years, doubling
    thresholds = [short_term_threshold(oldest_age_seconds=span, settings=DEFAULTS) for span in spans]
    steps = [earlier - later for earlier, later in zip(thresholds, thresholds[1:], strict=False)]
    assert all(0 < step < 0.013 for step in steps)  # falls, but by little per doubling
    assert all(later < earlier for earlier, later in zip(steps, steps[1:], strict=False))
    # At 45 years short-term memory still decays over its duration (it has not turned flat) and
    # its end still stands clear of the long-term floor (it has not sunk into it).
    for span in (45 * YEAR, 100 * YEAR):
        curve = decay_curve(oldest_age_seconds=span, settings=DEFAULTS)
        assert 1 - curve.short_term_threshold > 0.8
        assert curve.long_term_band >= 0.1
        assert 0 < intersection_age(oldest_age_seconds=span, settings=DEFAULTS) < S
    # The short-term curve at 45 years is close to the one at 5 days: halfway through it, recency
    # differs by less than 0.1.
    assert abs(rec(S / 2, 45 * YEAR) - rec(S / 2, 5 * DAY)) < 0.1


def test_curve_points_for_the_inspector():
    span = YEAR
    points = curve_points(oldest_age_seconds=span, settings=DEFAULTS, count=100)
    ages = [p.age_seconds for p in points]
    assert ages == sorted(ages) and ages[0] == 0 and ages[-1] == pytest.approx(span)
    assert points[0].recency == 1.0 and points[-1].recency == pytest.approx(0.01)
    assert all(p.recency + p.nostalgia == pytest.approx(1.0) for p in points)
    assert {p.phase for p in points if p.age_seconds <= S} == {"short"}
    assert {p.phase for p in points if p.age_seconds > S} == {"long"}
    crossing = intersection_age(oldest_age_seconds=span, settings=DEFAULTS)
    at_crossing = [p for p in points if p.age_seconds == crossing]
    assert len(at_crossing) == 1 and at_crossing[0].recency == pytest.approx(0.5)
    assert sum(p.age_seconds <= S for p in points) >= 50  # the short part is not lost on a year's axis
    young = curve_points(oldest_age_seconds=10 * MINUTE, settings=DEFAULTS, count=20)
    assert young[-1].age_seconds == S and all(p.phase == "short" for p in young)
