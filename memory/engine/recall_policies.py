"""Scoring for the hybrid recall policy over single utterances ("turns").

Dense cosine and BM25 scores are put on one scale (z-scores over each list's hits), summed,
re-scored once with a pseudo-relevance-feedback query, and smoothed along the conversation so that
a turn borrows relevance from the turn before it (an answer follows its question); last comes a
boost for the participant the query names. The weights were chosen on the LoCoMo development file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class HybridParams:
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    feedback_weight: float = 0.5  # weight of the feedback query's cosine z-scores
    feedback_mix: float = 0.5  # q' = q + mix · mean(top feedback_top vectors)
    feedback_top: int = 3
    # Added after smoothing, in z units. On the LoCoMo development file 97% of the evidence for a
    # question naming one participant was said by that participant; R@10 0.775 (1.0), 0.791 (3.0),
    # 0.788 (4.0); multi-hop gains most (0.41 -> 0.46): the other speaker's replies that address
    # the named one ("Wow, Melanie! ...") match the name and crowd out the named one's own words.
    speaker_boost: float = 3.0
    previous_weight: float = 0.3  # share of the previous turn's score a turn receives
    next_weight: float = 0.1
    context_mix: float = 0.5  # turn vector = v(turn) + mix · v(previous turn + turn), normalised
    # Hits taken from each list. The z-scores need a wide view of the score distribution: on the
    # LoCoMo development file R@10 was 0.759 (100), 0.767 (200), 0.782 (300), 0.791 (400); most of
    # the loss is the statistics changing, not hits missed.
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
    """A turn gains a share of the positive scores of the turns right before and after it.

    `order` is (page seq, position in page); two candidates are adjacent when they are next to
    each other in that order with no turn between them. A neighbour scoring below the candidates'
    mean (a negative z-sum) lends nothing rather than pulling the turn down: a fact is often said
    once in unrelated talk, and such isolated turns are what multi-hop questions need.
    """
    ranked = sorted(scores, key=lambda key: order[key])
    smoothed = dict(scores)
    for before, after in zip(ranked, ranked[1:], strict=False):
        (seq_a, pos_a), (seq_b, pos_b) = order[before], order[after]
        adjacent = (seq_a == seq_b and pos_b == pos_a + 1) or (seq_b == seq_a + 1 and pos_b == 0)
        if adjacent:
            smoothed[after] += params.previous_weight * max(0.0, scores[before])
            smoothed[before] += params.next_weight * max(0.0, scores[after])
    return smoothed


def final_scores(parts: Mapping[str, Mapping[str, float]], order: Mapping[str, tuple[int, int]], *,
                 params: HybridParams) -> dict[str, float]:
    """The ranking score: the content score (all parts but the speaker boost) smoothed along the
    conversation, plus the speaker boost.

    The boost stays out of the smoothing: who said a turn says nothing about the turns next to it,
    and a smoothed boost would lift the other participant's replies to the named one.
    """
    content = {key: part["score"] - part["speaker"] for key, part in parts.items()}
    smoothed = smooth_along_conversation(content, order, params=params)
    return {key: smoothed[key] + parts[key]["speaker"] for key in parts}


# ------------------------------------------------------------------ the same, over arrays
#
# recall_turns scores a thousand candidates twice per query; the functions above, one dict per
# key, took ~9 ms of it. These compute the same numbers with numpy (a test holds them to the
# functions above on random candidates).

PART_NAMES = ("dense", "sparse", "feedback", "speaker")


def _z_array(scores: Mapping[str, float] | None, keys: Sequence[str]) -> np.ndarray:
    """zscores() as an array over `keys`; all zeros for no list (feedback in the first pass)."""
    if not scores:
        return np.zeros(len(keys))
    values = np.fromiter(scores.values(), dtype=float, count=len(scores))
    mean, spread = values.mean(), values.std()
    if spread == 0:
        return np.zeros(len(keys))
    listed = np.array([scores.get(key, math.nan) for key in keys], dtype=float)
    return np.where(np.isnan(listed), (values.min() - mean) / spread, (listed - mean) / spread)


def fused_parts(*, keys: Sequence[str], dense: Mapping[str, float], sparse: Mapping[str, float],
                feedback: Mapping[str, float] | None, speakers: Sequence[str], named: set[str],
                params: HybridParams) -> np.ndarray:
    """fused_scores() as an (n, 4) array of the weighted parts, columns in PART_NAMES order."""
    boosted = next(iter(named)) if len(named) == 1 else None
    parts = np.empty((len(keys), len(PART_NAMES)))
    parts[:, 0] = params.dense_weight * _z_array(dense, keys)
    parts[:, 1] = params.sparse_weight * _z_array(sparse, keys)
    parts[:, 2] = params.dense_weight * params.feedback_weight * _z_array(feedback, keys)
    parts[:, 3] = [params.speaker_boost if boosted and speaker == boosted else 0.0 for speaker in speakers]
    return parts


def final_array(parts: np.ndarray, seq: np.ndarray, pos: np.ndarray, *, params: HybridParams) -> np.ndarray:
    """final_scores() over arrays: content smoothed along (seq, pos), then the speaker boost."""
    content = parts[:, 0] + parts[:, 1] + parts[:, 2]
    if len(content) == 0:
        return content
    order = np.lexsort((pos, seq))
    s, p, c = seq[order], pos[order], content[order]
    adjacent = ((s[1:] == s[:-1]) & (p[1:] == p[:-1] + 1)) | ((s[1:] == s[:-1] + 1) & (p[1:] == 0))
    lent = np.maximum(c, 0.0)
    smoothed = c.copy()
    smoothed[1:] += np.where(adjacent, params.previous_weight * lent[:-1], 0.0)
    smoothed[:-1] += np.where(adjacent, params.next_weight * lent[1:], 0.0)
    result = np.empty_like(smoothed)
    result[order] = smoothed
    return result + parts[:, 3]


def best_first(final: np.ndarray, seq: np.ndarray, pos: np.ndarray, limit: int) -> np.ndarray:
    """Indices of the `limit` best: highest final score, then earliest in the conversation."""
    return np.lexsort((pos, seq, -final))[:limit]


def part_dict(parts: np.ndarray, index: int) -> dict[str, float]:
    """One candidate's parts as fused_scores() gives them, "score" included."""
    row = {name: float(parts[index, column]) for column, name in enumerate(PART_NAMES)}
    row["score"] = sum(row.values())
    return row


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
