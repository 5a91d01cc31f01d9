"""Scoring for the hybrid recall policy over single utterances ("turns").

Dense cosine and BM25 scores are put on one scale (z-scores over each list's hits), summed with a
boost for the participant the query names, re-scored once with a pseudo-relevance-feedback query,
and smoothed along the conversation so that a turn borrows relevance from the turn before it
(an answer follows its question). The weights were chosen on the LoCoMo development file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class HybridParams:
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    feedback_weight: float = 0.5  # weight of the feedback query's cosine z-scores
    feedback_mix: float = 0.5  # q' = q + mix · mean(top feedback_top vectors)
    feedback_top: int = 3
    speaker_boost: float = 1.0
    previous_weight: float = 0.3  # share of the previous turn's score a turn receives
    next_weight: float = 0.1
    context_mix: float = 0.5  # turn vector = v(turn) + mix · v(previous turn + turn), normalised
    # Hits taken from each list. The z-scores need a wide view of the score distribution:
    # on the LoCoMo development file R@10 rose from 0.71 (80) to 0.76 (400).
    candidates: int = 400


def zscores(scores: Mapping[str, float], keys: Sequence[str]) -> dict[str, float]:
    """Standard scores of the listed hits; a key missing from the list gets the list's lowest."""
    if not scores:
        return {key: 0.0 for key in keys}
    values = list(scores.values())
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if spread == 0:
        return {key: 0.0 for key in keys}
    floor = (min(values) - mean) / spread
    return {key: ((scores[key] - mean) / spread if key in scores else floor) for key in keys}


def named_speakers(query: str, speakers: set[str]) -> set[str]:
    """Participants whose name appears in the query as a word (possessives too)."""
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    return {name for name in speakers if name and name.lower() in words}


def fused_scores(*, keys: Sequence[str], dense: Mapping[str, float], sparse: Mapping[str, float],
                 feedback: Mapping[str, float] | None, speaker_of: Mapping[str, str], named: set[str],
                 params: HybridParams) -> dict[str, dict[str, float]]:
    """Per key: each weighted term and their sum under "score"."""
    dense_z, sparse_z = zscores(dense, keys), zscores(sparse, keys)
    feedback_z = zscores(feedback, keys) if feedback is not None else {}
    boosted = next(iter(named)) if len(named) == 1 else None
    result = {}
    for key in keys:
        parts = {
            "dense": params.dense_weight * dense_z[key],
            "sparse": params.sparse_weight * sparse_z[key],
            "feedback": params.dense_weight * params.feedback_weight * feedback_z.get(key, 0.0),
            "speaker": params.speaker_boost if boosted and speaker_of.get(key) == boosted else 0.0,
        }
        parts["score"] = sum(parts.values())
        result[key] = parts
    return result


def smooth_along_conversation(scores: Mapping[str, float], order: Mapping[str, tuple[int, int]], *,
                              params: HybridParams) -> dict[str, float]:
    """A turn gains a share of the scores of the turns right before and after it.

    `order` is (page seq, position in page); two candidates are adjacent when they are next to
    each other in that order with no turn between them.
    """
    ranked = sorted(scores, key=lambda key: order[key])
    smoothed = dict(scores)
    for before, after in zip(ranked, ranked[1:], strict=False):
        (seq_a, pos_a), (seq_b, pos_b) = order[before], order[after]
        adjacent = (seq_a == seq_b and pos_b == pos_a + 1) or (seq_b == seq_a + 1 and pos_b == 0)
        if adjacent:
            smoothed[after] += params.previous_weight * scores[before]
            smoothed[before] += params.next_weight * scores[after]
    return smoothed


def feedback_query(query: Sequence[float], top_vectors: Sequence[Sequence[float]], *,
                   mix: float) -> list[float]:
    """q + mix · mean(top vectors): the query pulled toward what it already found."""
    if not top_vectors:
        return list(query)
    dim = len(query)
    mean = [sum(vec[i] for vec in top_vectors) / len(top_vectors) for i in range(dim)]
    return [q + mix * m for q, m in zip(query, mean, strict=True)]


def context_vector(turn: Sequence[float], context: Sequence[float] | None, *, mix: float) -> list[float]:
    """Unit vector of v(turn) + mix · v(previous turn + turn); the turn alone for a first turn."""
    combined = list(turn) if context is None else [a + mix * b for a, b in zip(turn, context, strict=True)]
    norm = math.sqrt(sum(v * v for v in combined))
    return [v / norm for v in combined] if norm else combined
