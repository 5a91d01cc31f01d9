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


def named_speakers(query: str, speakers: set[str]) -> set[str]:
    """Participants whose name appears in the query as a word (possessives too)."""
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    return {name for name in speakers if name and name.lower() in words}


# ------------------------------------------------------------------ scoring, over arrays
#
# recall_turns scores about a thousand candidates twice per query, so each step runs over numpy
# arrays indexed like `keys` (one dict per key took ~9 ms of a recall).

PART_NAMES = ("dense", "sparse", "feedback", "speaker")


def z_array(scores: Mapping[str, float] | None, keys: Sequence[str]) -> np.ndarray:
    """Standard scores of the listed hits over `keys`; a key missing from the list gets the list's
    lowest; all zeros for no list (feedback in the first pass) or a flat one. The statistics are
    the whole list's, keys or not."""
    return _z_placed(scores, {key: index for index, key in enumerate(keys)})


def _z_placed(scores: Mapping[str, float] | None, position: Mapping[str, int]) -> np.ndarray:
    """z_array over the keys of `position` (key -> index), built once for the three lists."""
    if not scores:
        return np.zeros(len(position))
    values = np.fromiter(scores.values(), dtype=float, count=len(scores))
    mean, spread = values.mean(), values.std()
    if spread == 0:
        return np.zeros(len(position))
    at = np.fromiter((position.get(key, -1) for key in scores), dtype=np.int64, count=len(scores))
    listed = at >= 0
    result = np.full(len(position), (values.min() - mean) / spread)
    result[at[listed]] = (values[listed] - mean) / spread
    return result


def fused_parts(*, keys: Sequence[str], dense: Mapping[str, float], sparse: Mapping[str, float],
                feedback: Mapping[str, float] | None, speakers: Sequence[str], named: set[str],
                params: HybridParams) -> np.ndarray:
    """An (n, 4) array of each key's weighted parts, columns in PART_NAMES order. The speaker
    boost goes to the participant the query names, only when it names exactly one."""
    position = {key: index for index, key in enumerate(keys)}
    parts = np.zeros((len(keys), len(PART_NAMES)))
    parts[:, 0] = params.dense_weight * _z_placed(dense, position)
    parts[:, 1] = params.sparse_weight * _z_placed(sparse, position)
    parts[:, 2] = params.dense_weight * params.feedback_weight * _z_placed(feedback, position)
    if len(named) == 1:
        boosted = next(iter(named))
        parts[:, 3] = params.speaker_boost * np.fromiter((speaker == boosted for speaker in speakers),
                                                         dtype=bool, count=len(keys))
    return parts


def final_array(parts: np.ndarray, seq: np.ndarray, pos: np.ndarray, *, params: HybridParams) -> np.ndarray:
    """The ranking score: the content score (all parts but the speaker boost) smoothed along the
    conversation, plus the speaker boost.

    (seq, pos) is (page seq, position in page); two candidates are adjacent when they are next to
    each other in that order with no turn between them. A turn gains `previous_weight` of the
    positive content score of the turn before it and `next_weight` of the one after it. A
    neighbour below the candidates' mean (a negative z-sum) lends nothing rather than pulling the
    turn down: a fact is often said once in unrelated talk, and such isolated turns are what
    multi-hop questions need. The boost stays out of the smoothing: who said a turn says nothing
    about the turns next to it, and a smoothed boost would lift the other participant's replies
    to the named one.
    """
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
    """One candidate's parts by name, and their sum under "score" (the trace's breakdown)."""
    row = {name: float(parts[index, column]) for column, name in enumerate(PART_NAMES)}
    row["score"] = sum(row.values())
    return row


def feedback_query(query: Sequence[float], top_vectors: Sequence[Sequence[float]], *,
                   mix: float) -> list[float]:
    """q + mix · mean(top vectors): the query pulled toward what it already found."""
    if not top_vectors:
        return list(query)
    mean = np.asarray(top_vectors, dtype=float).mean(axis=0)
    return (np.asarray(query, dtype=float) + mix * mean).tolist()


def context_vector(turn: Sequence[float], context: Sequence[float] | None, *, mix: float) -> list[float]:
    """Unit vector of v(turn) + mix · v(previous turn + turn); the turn alone for a first turn."""
    combined = list(turn) if context is None else [a + mix * b for a, b in zip(turn, context, strict=True)]
    norm = math.sqrt(sum(v * v for v in combined))
    return [v / norm for v in combined] if norm else combined
