"""The Exocortex memory model: its weighting and its decay curves (seed 002, issue 20).

Weighting. Generative Agents (as the seed renders it) multiplies the three factors:
    weight_GA = relevance · recency · type_weight
The Exocortex adds the relevance, scaled by the nostalgia 1 − recency, to the recency:
    weight_EXO = (relevance · nostalgia + recency) · type_weight,   nostalgia = 1 − recency
which is 1 − (1 − relevance)(1 − recency) times the type weight: a probabilistic OR of relevance
and recency where the product is an AND. A low recency cannot pull a high relevance down: an old
memory with relevance 1 weighs the full type weight, as much as a memory of this instant.
(The Generative Agents paper itself sums min-max normalised scores; the product is the seed's
reading and what issue 20 asks to compare against.) Relevance must lie in [0, 1]:
`relevance_from_cosine` clamps a cosine's negative side to 0 rather than mapping [−1, 1] onto
[0, 1] as (1 + cos)/2, which would give every unrelated memory (cos ≈ 0) half a perfect match and,
through the nostalgia term, let old unrelated memories outweigh recent ones.

Type weights: core page 1.0, reaction 1.0, recollection 1.1. A recollection summarises several
memories with their dates, so one slot of context carries more, and it should win ties and near
ties (within 10 %). The reference implementation's 1.3 is not a slight boost: MiniLM cosines of
related texts lie around 0.3–0.7, where 30 % lets a loosely related recollection (0.45 · 1.3)
outrank a clearly relevant page (0.55); and recollections are made from what was recalled, so a
large boost feeds on itself (recollections of recollections crowding out the pages).

Decay. Two user settings: the short-term duration S (default 25 minutes) and the long-term decay
threshold θ_lt (default 0.01, the value the seed's text gives; its plots used 0.1 for legibility).
0.01 keeps an old irrelevant memory near zero while an old relevant one keeps 0.99 of its
relevance, and leaves long-term strength the widest band above the floor. Everything else follows
from S, θ_lt and the long-term span L, the age of the user's oldest memory (t = a memory's age):

    x      = L / S                                            the span in short-term durations
    θ_st   = θ_lt + Δ + (1 − θ_lt − Δ) / (1 + ln(1 + x))      short-term threshold (recency at t = S)
    r(t)   = θ_st ^ (t / S)                     for t ≤ S     = exp(−λ t), λ = ln(1/θ_st) / S
    r(t)   = θ_st − (θ_st − θ_lt) · ln(1 + k u) / ln(1 + k),  u = (t − S) / (L − S),  for S < t ≤ L

- The short-term curve is exponential and reaches θ_st exactly at the end of the short-term
  duration; the long-term curve is a reversed logarithm from θ_st (continuous at S) down to θ_lt at
  the oldest memory. Time in the long-term phase is measured as the share u of the span, so the
  curve has the same shape at 5 days as at 30 years (normalised to the oldest memory); k = 100
  (`long_term_bend`) makes it clearly logarithmic: half the band is lost by u ≈ 0.09.
- θ_st is a logarithmic function of the span: it falls as the store ages (older stores hold
  short-term memories more loosely, as the seed wants), by less than 0.013 per doubling of the
  span beyond 5 days (0.003 at 30 years), so it never races to a limit the way the seed's first,
  exponential threshold did ("memory loss at 45"): 0.244 at 5 days, 0.191 at a year, 0.172 at 30
  years, 0.170 at 45, 0.167 at 100.
- The counter to the lower bound: 1/(1 + ln(1 + x)) tends to 0, so without a counter θ_st would
  sink towards θ_lt and squeeze every long-term memory into a band that narrows with age (the
  seed's second problem). Δ = 0.1 (`long_term_band_floor`) reserves a band of at least Δ between
  θ_st and θ_lt at any age; with k = 100 the memories at 10 % and 90 % of the span then differ in
  recency by at least 0.46 · Δ = 0.046, at 5 days as at 100 years.
- The intersection of recency and nostalgia (r = 1/2, where nostalgia starts to outweigh recency)
  enters the short-term duration once the store is about an hour old (θ_st < 1/2) and keeps moving
  towards its start ever more slowly: 0.49 · S at 5 days, 0.45 · S at 30 days, 0.42 · S at a year,
  0.39 · S at 30 years. The seed saw this between ages 10 and 30 and wished it came sooner.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CORE = "core"
RECOLLECTION = "recollection"
REACTION = "reaction"
MEMORY_KINDS = (CORE, RECOLLECTION, REACTION)

EXOCORTEX = "exocortex"
GENERATIVE_AGENTS = "generative_agents"

# How far past the oldest memory an age may lie and still count as the oldest (float rounding
# when the caller computes both ages from the same `now`).
_AGE_SLACK_SECONDS = 1e-6


@dataclass(frozen=True)
class TypeWeights:
    """The type weight of each memory kind (seed: recollections slightly boosted)."""

    core: float = 1.0
    recollection: float = 1.1
    reaction: float = 1.0

    def __post_init__(self) -> None:
        for kind in MEMORY_KINDS:
            value = getattr(self, kind)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"type weight for {kind!r} must be a finite number ≥ 0, got {value!r}")

    def of(self, kind: str) -> float:
        if kind not in MEMORY_KINDS:
            raise ValueError(f"unknown memory kind {kind!r}; expected one of {', '.join(MEMORY_KINDS)}")
        weight: float = getattr(self, kind)
        return weight


@dataclass(frozen=True)
class DecaySettings:
    """The user's two settings and the curve's two shape constants (module docstring)."""

    short_term_seconds: float = 25 * 60.0
    long_term_threshold: float = 0.01
    long_term_band_floor: float = 0.1
    long_term_bend: float = 100.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.short_term_seconds) and self.short_term_seconds > 0):
            raise ValueError("short-term duration must be a positive number of seconds, "
                             f"got {self.short_term_seconds!r}")
        if not (math.isfinite(self.long_term_band_floor) and self.long_term_band_floor >= 0):
            raise ValueError(f"long-term band floor must be ≥ 0, got {self.long_term_band_floor!r}")
        top = 1.0 - self.long_term_band_floor
        if not (0.0 < self.long_term_threshold < top):
            raise ValueError(f"long-term decay threshold must lie in (0, {top:g}), got {self.long_term_threshold!r}")
        if not (math.isfinite(self.long_term_bend) and self.long_term_bend > 0):
            raise ValueError(f"long-term bend must be a positive number, got {self.long_term_bend!r}")


@dataclass(frozen=True)
class DecayCurve:
    """The curve for one long-term span; compute once per recall, apply to every candidate."""

    settings: DecaySettings
    oldest_age_seconds: float
    short_term_threshold: float

    @property
    def short_term_rate(self) -> float:
        """λ per second: the exponential reaches θ_st at the end of the short-term duration."""
        return math.log(1.0 / self.short_term_threshold) / self.settings.short_term_seconds

    @property
    def long_term_band(self) -> float:
        """θ_st − θ_lt: the range long-term recency spreads over (never below the band floor)."""
        return self.short_term_threshold - self.settings.long_term_threshold


@dataclass(frozen=True)
class CurvePoint:
    age_seconds: float
    recency: float
    nostalgia: float
    phase: str  # "short" | "long"


@dataclass(frozen=True)
class WeightBreakdown:
    """A memory's weight and the terms it came from, for the trace and the recall panel."""

    policy: str
    kind: str
    relevance: float
    recency: float
    type_weight: float
    weight: float
    nostalgia: float | None = None  # the Generative Agents product has none

    def as_dict(self) -> dict[str, float]:
        terms = {"relevance": self.relevance, "recency": self.recency, "type_weight": self.type_weight,
                 "weight": self.weight}
        if self.nostalgia is not None:
            terms["nostalgia"] = self.nostalgia
        return terms


# --- decay curves -----------------------------------------------------------------------------

def _checked_span(oldest_age_seconds: float) -> float:
    if not math.isfinite(oldest_age_seconds):
        raise ValueError(f"the oldest memory's age must be a finite number of seconds, got {oldest_age_seconds!r}")
    return max(0.0, oldest_age_seconds)  # a clock slightly behind the newest row reads as now


def short_term_threshold(*, oldest_age_seconds: float, settings: DecaySettings) -> float:
    """θ_st = θ_lt + Δ + (1 − θ_lt − Δ) / (1 + ln(1 + L/S)): 1 for a new store, falling with ln L."""
    span = _checked_span(oldest_age_seconds) / settings.short_term_seconds
    floor = settings.long_term_threshold + settings.long_term_band_floor
    return floor + (1.0 - floor) / (1.0 + math.log1p(span))


def decay_curve(*, oldest_age_seconds: float, settings: DecaySettings) -> DecayCurve:
    span = _checked_span(oldest_age_seconds)
    return DecayCurve(settings=settings, oldest_age_seconds=span,
                      short_term_threshold=short_term_threshold(oldest_age_seconds=span, settings=settings))


def curve_recency(curve: DecayCurve, age_seconds: float) -> float:
    """r(t) on a computed curve (module docstring); ages past the oldest memory's are an error."""
    if not math.isfinite(age_seconds):
        raise ValueError(f"a memory's age must be a finite number of seconds, got {age_seconds!r}")
    if age_seconds > curve.oldest_age_seconds + _AGE_SLACK_SECONDS:
        raise ValueError(f"a memory aged {age_seconds:g} s is older than the oldest memory "
                         f"({curve.oldest_age_seconds:g} s): pass the age of the user's oldest memory")
    return _curve_value(curve, max(0.0, age_seconds))  # clock skew: a memory from the future is now


def _curve_value(curve: DecayCurve, age: float) -> float:
    short = curve.settings.short_term_seconds
    if age <= short:
        return curve.short_term_threshold ** (age / short)
    share = min(1.0, (age - short) / (curve.oldest_age_seconds - short))
    bend = curve.settings.long_term_bend
    return curve.short_term_threshold - curve.long_term_band * math.log1p(bend * share) / math.log1p(bend)


def recency(age_seconds: float, *, oldest_age_seconds: float, settings: DecaySettings) -> float:
    """The Exocortex recency of a memory aged `age_seconds` in [0, 1] (module docstring)."""
    return curve_recency(decay_curve(oldest_age_seconds=oldest_age_seconds, settings=settings), age_seconds)


def recencies(ages_seconds: Sequence[float], *, oldest_age_seconds: float, settings: DecaySettings) -> np.ndarray:
    """`recency` of many memories at once (a recall weighs hundreds of candidates)."""
    curve = decay_curve(oldest_age_seconds=oldest_age_seconds, settings=settings)
    ages = np.asarray(ages_seconds, dtype=np.float64)
    if ages.size and not np.all(np.isfinite(ages)):
        raise ValueError("memory ages must be finite numbers of seconds")
    if ages.size and ages.max() > curve.oldest_age_seconds + _AGE_SLACK_SECONDS:
        raise ValueError(f"a memory aged {ages.max():g} s is older than the oldest memory "
                         f"({curve.oldest_age_seconds:g} s): pass the age of the user's oldest memory")
    ages = np.maximum(ages, 0.0)
    short = settings.short_term_seconds
    short_part = curve.short_term_threshold ** (np.minimum(ages, short) / short)
    span = curve.oldest_age_seconds - short if curve.oldest_age_seconds > short else 1.0  # 1.0: no age is past S
    share = np.clip((ages - short) / span, 0.0, 1.0)
    bend = settings.long_term_bend
    long_part = curve.short_term_threshold - curve.long_term_band * np.log1p(bend * share) / math.log1p(bend)
    result: np.ndarray = np.where(ages <= short, short_part, long_part)
    return result


def nostalgia(age_seconds: float, *, oldest_age_seconds: float, settings: DecaySettings) -> float:
    """1 − recency: how much of a memory's relevance the Exocortex weight lets through."""
    return 1.0 - recency(age_seconds, oldest_age_seconds=oldest_age_seconds, settings=settings)


def intersection_age(*, oldest_age_seconds: float, settings: DecaySettings) -> float | None:
    """The age at which recency falls to 1/2 and nostalgia starts to exceed it; None if never.

    In the short-term part when θ_st ≤ 1/2 (t = S · ln 2 / ln(1/θ_st)), else in the long-term
    part by inverting the logarithm; None when θ_lt ≥ 1/2 or the store is younger than S and
    its short-term curve stays above 1/2.
    """
    curve = decay_curve(oldest_age_seconds=oldest_age_seconds, settings=settings)
    short = settings.short_term_seconds
    if settings.long_term_threshold >= 0.5:
        return None
    if curve.short_term_threshold <= 0.5:
        return short * math.log(2.0) / math.log(1.0 / curve.short_term_threshold)
    if curve.oldest_age_seconds <= short:
        return None
    fallen = (curve.short_term_threshold - 0.5) / curve.long_term_band  # share of ln(1 + k) to fall
    bend = settings.long_term_bend
    share = math.expm1(fallen * math.log1p(bend)) / bend
    return short + share * (curve.oldest_age_seconds - short)


def curve_points(*, oldest_age_seconds: float, settings: DecaySettings, count: int = 120) -> tuple[CurvePoint, ...]:
    """Points to plot recency and nostalgia from age 0 to the oldest memory, with the intersection.

    Half the points lie evenly over the short-term duration (all of it, even in a store younger
    than S, so its shape shows), the rest geometrically over the long-term span, which may be a
    million times longer: a log-scaled axis shows both.
    """
    if count < 4:
        raise ValueError(f"a curve needs at least 4 points, got {count}")
    curve = decay_curve(oldest_age_seconds=oldest_age_seconds, settings=settings)
    short, oldest = settings.short_term_seconds, curve.oldest_age_seconds
    ages = set(np.linspace(0.0, short, count // 2).tolist())
    if oldest > short:
        ages.update(np.geomspace(short, oldest, count - count // 2).tolist())
    crossing = intersection_age(oldest_age_seconds=oldest, settings=settings)
    if crossing is not None:
        ages.add(crossing)
    return tuple(CurvePoint(age_seconds=age, recency=(value := _curve_value(curve, age)), nostalgia=1.0 - value,
                            phase="short" if age <= short else "long") for age in sorted(ages))


# --- weights ----------------------------------------------------------------------------------

def relevance_from_cosine(cosine: float) -> float:
    """A cosine in [−1, 1] as a relevance in [0, 1]: pointing away counts as unrelated (0)."""
    if not (math.isfinite(cosine) and -1.0 - 1e-6 <= cosine <= 1.0 + 1e-6):
        raise ValueError(f"a cosine lies in [-1, 1], got {cosine!r}")
    return min(1.0, max(0.0, cosine))


def _unit(name: str, value: float) -> float:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return value


def exocortex_weight(*, relevance: float, recency: float, kind: str,
                     type_weights: TypeWeights = TypeWeights()) -> WeightBreakdown:
    """((relevance · nostalgia) + recency) · type_weight, nostalgia = 1 − recency (seed 002)."""
    relevance, recency = _unit("relevance", relevance), _unit("recency", recency)
    type_weight = type_weights.of(kind)
    nostalgia = 1.0 - recency
    return WeightBreakdown(policy=EXOCORTEX, kind=kind, relevance=relevance, recency=recency,
                           type_weight=type_weight, nostalgia=nostalgia,
                           weight=(relevance * nostalgia + recency) * type_weight)


def generative_agents_weight(*, relevance: float, recency: float, kind: str,
                             type_weights: TypeWeights = TypeWeights()) -> WeightBreakdown:
    """relevance · recency · type_weight: the Generative Agents product as seed 002 states it."""
    relevance, recency = _unit("relevance", relevance), _unit("recency", recency)
    type_weight = type_weights.of(kind)
    return WeightBreakdown(policy=GENERATIVE_AGENTS, kind=kind, relevance=relevance, recency=recency,
                           type_weight=type_weight, weight=relevance * recency * type_weight)


def generative_agents_recency(*, hours_since_access: float, decay: float = 0.995) -> float:
    """decay ** hours since the memory was last retrieved (Generative Agents, §4.1: 0.995 per hour)."""
    if not math.isfinite(hours_since_access):
        raise ValueError(f"hours since access must be finite, got {hours_since_access!r}")
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"the decay factor must lie in (0, 1], got {decay!r}")
    return float(decay ** max(0.0, hours_since_access))
