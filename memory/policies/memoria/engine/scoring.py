"""Memoria's recall policy: a weighted sum of five terms, importance by EWMA, then budgeted expansion.

score = w_recency·recency + w_vector·vector + w_fts·fulltext + w_importance·importance + w_sona·sona

Every term is brought to [0, 1] so that a weight says how much its term may move the score, and the
highest score possible is the sum of the weights:

- recency = 0.5 ** (age / half_life), age = now - the memory's timestamp (seconds). The memory's
  *creation* time, as the seed says (Generative Agents decays since the last access). The default
  half-life is Generative Agents' decay of 0.995 per hour (ln 2 / -ln 0.995 = 138.3 hours). No
  timestamp means infinitely old: 0. A timestamp after `now` (clock skew) counts as now: 1.
- vector = max(cosine, 0) between the query's and the memory's embeddings. Kept absolute, not
  normalised per query: the expansion budget comes from the score, and a query that matches nothing
  well should pull in little. Negative cosines say "unrelated", not "less than unrelated".
- fulltext = raw / max(raw over this query's candidates). Full-text scores (BM25) depend on the
  query's length and its terms' rarity, so they only compare within one query; dividing by the best
  keeps the best keyword match at 1 and every match above 0 (a min-max scale would zero the weakest
  match, which did match). Pass raw scores with larger = better; 0 for a memory the search did not
  find.
- importance = (importance - 1) / 9, the 1-10 rating scale onto [0, 1]. A memory never rated has
  `importance_prior` (5.5, the middle: no evidence either way).
- sona = max(0, the best cosine between the current sona's name embedding and the name embeddings of
  the sonas the memory belongs to) (`sona_similarity`).

Importance is an EWMA of the 1-10 ratings a memory gets after the replies it was recalled for:
new = (1 - alpha)·old + alpha·rating. alpha = 0.3 by default: the last three ratings carry two thirds
of the weight, so a memory that stops helping loses its importance within a few replies.

The top_k memories by score are the seeds of the budgeted expansion (engine/expansion.py). A seed's
budget is seed_budget · score / (highest score possible): the share of a perfect match it is, so a
budget means the same whatever the weights. Ties in the ranking go to the newer memory, then the CID.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory.engine.similarity import cosine
from memory.policies.memoria.engine.expansion import Expansion, Reader, budget_expand

GA_DECAY_PER_HOUR = 0.995  # Generative Agents' recency decay
GA_HALF_LIFE_S = 3600.0 * math.log(2) / -math.log(GA_DECAY_PER_HOUR)
IMPORTANCE_MIN, IMPORTANCE_MAX = 1, 10
IMPORTANCE_PRIOR = 5.5
TERMS = ("recency", "vector", "fulltext", "importance", "sona")


@dataclass(frozen=True)
class MemoriaParams:
    """Every number of the policy (module docstring for what each means and why its default)."""

    w_recency: float = 1.0
    w_vector: float = 1.0
    w_fts: float = 1.0
    w_importance: float = 1.0
    w_sona: float = 1.0
    recency_half_life_s: float = GA_HALF_LIFE_S
    importance_prior: float = IMPORTANCE_PRIOR
    importance_alpha: float = 0.3
    top_k: int = 10
    seed_budget: float = 1.0
    pass_on: float = 0.5
    min_budget: float = 0.05
    max_pulled: int = 30

    def __post_init__(self) -> None:
        weights = self.weights()
        if any(not math.isfinite(w) or w < 0 for w in weights.values()) or not sum(weights.values()) > 0:
            raise ValueError(f"weights must be finite, at least 0 and not all 0: {weights}")
        if not self.recency_half_life_s > 0:
            raise ValueError(f"recency_half_life_s must be above 0, not {self.recency_half_life_s}")
        _check_importance(self.importance_prior, "importance_prior")
        _check_alpha(self.importance_alpha)
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {self.top_k}")
        if not (math.isfinite(self.seed_budget) and self.seed_budget > 0):
            raise ValueError(f"seed_budget must be a finite number above 0, not {self.seed_budget}")
        if not 0 < self.pass_on <= 1 or not self.min_budget > 0 or self.max_pulled < 0:
            raise ValueError(f"need 0 < pass_on <= 1, min_budget > 0, max_pulled >= 0: "
                             f"{self.pass_on}, {self.min_budget}, {self.max_pulled}")

    def weights(self) -> dict[str, float]:
        return {"recency": self.w_recency, "vector": self.w_vector, "fulltext": self.w_fts,
                "importance": self.w_importance, "sona": self.w_sona}

    @property
    def max_score(self) -> float:
        return sum(self.weights().values())


@dataclass(frozen=True)
class Candidate:
    """A memory a recall considers, with what the searches found for it."""

    cid: str
    timestamp: float | None  # seconds since the epoch (the node's timestamp); None: unknown
    cosine: float = 0.0  # query vs memory embedding; 0 when the vector search did not return it
    fulltext: float = 0.0  # raw full-text score, larger is better; 0 when the search did not find it
    importance: float | None = None  # EWMA of ratings, 1-10; None: never rated
    sona: float = 0.0  # sona_similarity() of the memory's sonas to the current one


@dataclass(frozen=True)
class ScoreBreakdown:
    terms: Mapping[str, float]  # each term on [0, 1]
    weighted: Mapping[str, float]  # each term times its weight; they add up to the score
    score: float

    def as_dict(self) -> dict[str, float]:
        """For a trace: the terms, their weighted parts (`w_<term>`) and the score."""
        return {**self.terms, **{f"w_{name}": value for name, value in self.weighted.items()}, "score": self.score}


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    breakdown: ScoreBreakdown
    budget: float = 0.0  # seed_budget · score / max_score


@dataclass(frozen=True)
class MemoriaRecall:
    ranked: tuple[Scored, ...]  # every candidate, best first
    seeds: tuple[Scored, ...]  # the top_k
    expansion: Expansion = field(repr=False)

    @property
    def order(self) -> tuple[str, ...]:
        """What the context shows, in order: the seeds and what they pulled in, dependencies first."""
        return self.expansion.order

    def trace(self) -> dict[str, Any]:
        """JSON-ready: each seed's score breakdown and budget, then the expansion (who pulled in whom)."""
        return {"seeds": [{"cid": seed.candidate.cid, "budget": seed.budget, **seed.breakdown.as_dict()}
                          for seed in self.seeds],
                "expansion": self.expansion.trace()}


def _check_importance(value: float, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not IMPORTANCE_MIN <= value <= IMPORTANCE_MAX:
        raise ValueError(f"{name} must be a number from {IMPORTANCE_MIN} to {IMPORTANCE_MAX}, not {value!r}")


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha <= 1:
        raise ValueError(f"the EWMA's alpha must be in (0, 1], not {alpha!r}")


def importance_update(*, old: float, rating: int, alpha: float) -> float:
    """EWMA of helpfulness ratings: (1 - alpha)·old + alpha·rating, rating an integer 1-10."""
    if isinstance(rating, bool) or not isinstance(rating, int) or not IMPORTANCE_MIN <= rating <= IMPORTANCE_MAX:
        raise ValueError(f"a rating is an integer from {IMPORTANCE_MIN} to {IMPORTANCE_MAX}, not {rating!r}")
    _check_importance(old, "the old importance")
    _check_alpha(alpha)
    return (1 - alpha) * old + alpha * rating


def importance_term(importance: float | None, *, prior: float = IMPORTANCE_PRIOR) -> float:
    """The 1-10 importance on [0, 1]; `prior` for a memory never rated."""
    value = prior if importance is None else importance
    _check_importance(value, "importance")
    return (value - IMPORTANCE_MIN) / (IMPORTANCE_MAX - IMPORTANCE_MIN)


def recency_term(*, timestamp: float | None, now: float, half_life_s: float) -> float:
    """0.5 ** (age / half-life); 0 without a timestamp (infinitely old), 1 for one after `now`."""
    if timestamp is None:
        return 0.0
    age = max(0.0, now - timestamp)
    return 0.5 ** (age / half_life_s)


def sona_similarity(*, current: Sequence[float], memory_sonas: Sequence[Sequence[float]]) -> float:
    """The best cosine between the current sona's name embedding and those of the memory's sonas, at
    least 0; 0 for a memory in no sona (or no current sona)."""
    if not current or not memory_sonas:
        return 0.0
    return max(0.0, max(cosine(current, other) for other in memory_sonas))


def fulltext_terms(scores: Sequence[float]) -> list[float]:
    """One query's raw full-text scores on [0, 1]: each over the best (all 0 when nothing matched)."""
    for score in scores:
        if not (math.isfinite(score) and score >= 0):
            raise ValueError(f"a full-text score is finite and at least 0 (larger = better), not {score}")
    best = max(scores, default=0.0)
    return [score / best if best > 0 else 0.0 for score in scores]


def _clamped_cosine(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name}: a cosine is a finite number, not {value}")
    return max(0.0, min(1.0, value))


def memoria_score(*, candidate: Candidate, fulltext: float, now: float, params: MemoriaParams) -> ScoreBreakdown:
    """The weighted sum for one candidate; `fulltext` is its term already on [0, 1] (fulltext_terms)."""
    terms = {
        "recency": recency_term(timestamp=candidate.timestamp, now=now, half_life_s=params.recency_half_life_s),
        "vector": _clamped_cosine(candidate.cosine, "cosine"),
        "fulltext": fulltext,
        "importance": importance_term(candidate.importance, prior=params.importance_prior),
        "sona": _clamped_cosine(candidate.sona, "sona"),
    }
    weights = params.weights()
    weighted = {name: weights[name] * value for name, value in terms.items()}
    return ScoreBreakdown(terms=terms, weighted=weighted, score=sum(weighted.values()))


def _rank_key(scored: Scored) -> tuple[float, float, str]:
    timestamp = scored.candidate.timestamp
    return (-scored.breakdown.score, -timestamp if timestamp is not None else math.inf, scored.candidate.cid)


def memoria_rank(*, candidates: Sequence[Candidate], now: float, params: MemoriaParams) -> list[Scored]:
    """Every candidate scored, best first (ties: newer, then CID), each with its seed budget."""
    cids = [candidate.cid for candidate in candidates]
    if len(set(cids)) != len(cids):
        raise ValueError("a memory appears twice among the candidates; merge its search hits first")
    fulltext = fulltext_terms([candidate.fulltext for candidate in candidates])
    scored = []
    for candidate, term in zip(candidates, fulltext, strict=True):
        breakdown = memoria_score(candidate=candidate, fulltext=term, now=now, params=params)
        budget = params.seed_budget * breakdown.score / params.max_score
        scored.append(Scored(candidate=candidate, breakdown=breakdown, budget=budget))
    return sorted(scored, key=_rank_key)


def memoria_recall(*, candidates: Sequence[Candidate], now: float, params: MemoriaParams,
                   read: Reader) -> MemoriaRecall:
    """Rank the candidates, take the top_k as seeds and expand them along their dependencies.

    `read` gives the dependencies and timestamps of memories by CID (expansion.Reader); the
    caller leaves out whatever this recall may not use (repressed memories, other users')."""
    ranked = memoria_rank(candidates=candidates, now=now, params=params)
    seeds = tuple(ranked[: params.top_k])
    expansion = budget_expand(seeds={seed.candidate.cid: seed.budget for seed in seeds}, read=read,
                              pass_on=params.pass_on, min_budget=params.min_budget, max_pulled=params.max_pulled)
    return MemoriaRecall(ranked=tuple(ranked), seeds=seeds, expansion=expansion)
