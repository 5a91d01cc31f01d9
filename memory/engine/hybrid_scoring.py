"""Scoring for the hybrid recall policy over single utterances ("turns").

Dense cosine and BM25 scores are put on one scale (z-scores over each list's hits), summed,
re-scored once with a pseudo-relevance-feedback query, and smoothed along the conversation so that
a turn borrows relevance from the turn before it (an answer follows its question); last comes a
boost for the participant the query names. The weights were chosen on the LoCoMo development file.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController


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
    # A turn said in the period the question names ("in May 2023", "last week") gains this, in z
    # units, added after smoothing like the speaker boost (memory/engine/time_window.py).
    time_boost: float = 2.0
    # Diversity across sessions (days) in the final top-k: each turn already taken from the same
    # day costs a candidate this much, in z units, so evidence spread over several sessions
    # (what multi-hop questions need) is not crowded out by one session's neighbours.
    session_penalty: float = 0.0
    # The second hop: terms that the first hits share beyond the query's (names, places,
    # events) are searched again, and that list's z-scores join the content score at this weight.
    hop_weight: float = 0.2
    # Long-term memory: the turns of the pages a KB fact or agent trait near the query was learned
    # from gain this times the fact's cosine, in z units (what a person would likely do or like is
    # often in what memory already concluded about them).
    long_term_boost: float = 2.0
    long_term_facts: int = 5
    long_term_min_cosine: float = 0.3
    hop_seeds: int = 5  # first hits the second hop reads its terms from
    hop_terms: int = 6  # at most this many new terms
    # Smoothing by meaning: each of the best `meaning_pool` turns gains this share of the mean
    # positive final score of its `meaning_neighbours` nearest turns among them by cosine, so a
    # line that says the same thing in other words as several strong hits (another session
    # about the same event or person) rises with them. Chosen 2-fold on the LoCoMo development
    # file: R@10 0.832 -> 0.839 (conv-26) and 0.774 -> 0.791 (conv-47); see BENCHMARKS.md.
    meaning_weight: float = 0.3
    meaning_pool: int = 100
    meaning_neighbours: int = 3
    # Turn pairs: a turn that asks something (a question mark) among the best `pair_questions`
    # hands its answer, the next turn when another participant says it, this share of its
    # content score, on top of the smoothing along the dialogue. The answer to a question that
    # matches is often a short line that matches nothing by itself ("Max and Daisy."). Chosen
    # 2-fold on the LoCoMo development file: R@10 0.839 -> 0.850 (conv-26) and 0.791 -> 0.804
    # (conv-47); see BENCHMARKS.md, "Third pass".
    pair_weight: float = 0.3
    pair_questions: int = 10


def named_speakers(query: str, speakers: set[str]) -> set[str]:
    """Participants whose name appears in the query as a word (possessives too)."""
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    return {name for name in speakers if name and name.lower() in words}


# ------------------------------------------------------------------ scoring, over arrays
#
# recall_turns scores about a thousand candidates twice per query, so each step runs over numpy
# arrays indexed like `keys` (one dict per key took ~9 ms of a recall).

PART_NAMES = ("dense", "sparse", "feedback", "hop", "speaker", "time", "long_term")


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
    at = np.fromiter(map(position.get, scores, itertools.repeat(-1)), dtype=np.int64, count=len(scores))
    listed = at >= 0
    result = np.full(len(position), (values.min() - mean) / spread)
    result[at[listed]] = (values[listed] - mean) / spread
    return result


def fused_parts(*, keys: Sequence[str], dense: Mapping[str, float], sparse: Mapping[str, float],
                feedback: Mapping[str, float] | None, speakers: Sequence[str], named: set[str],
                params: HybridParams, hop: Mapping[str, float] | None = None,
                in_window: np.ndarray | None = None, long_term: np.ndarray | None = None) -> np.ndarray:
    """An (n, len(PART_NAMES)) array of each key's weighted parts, columns in PART_NAMES order.
    The speaker boost goes to the participant the query names, only when it names exactly one;
    the time boost to the turns said in the question's period (`in_window`, a boolean per key);
    the long-term boost by `long_term` (per key: the best cosine of a fact learned from its page)."""
    position = {key: index for index, key in enumerate(keys)}
    parts = np.zeros((len(keys), len(PART_NAMES)))
    parts[:, 0] = params.dense_weight * _z_placed(dense, position)
    parts[:, 1] = params.sparse_weight * _z_placed(sparse, position)
    parts[:, 2] = params.dense_weight * params.feedback_weight * _z_placed(feedback, position)
    parts[:, 3] = params.hop_weight * _z_placed(hop, position)
    if len(named) == 1:
        boosted = next(iter(named))
        parts[:, 4] = params.speaker_boost * np.fromiter(map(operator.eq, speakers, itertools.repeat(boosted)),
                                                         dtype=bool, count=len(keys))
    if in_window is not None and in_window.any():
        parts[:, 5] = params.time_boost * in_window
    if long_term is not None:
        parts[:, 6] = params.long_term_boost * long_term
    return parts


CONTENT_COLUMNS = 4  # dense, sparse, feedback, hop: what a turn's words match; smoothed along the dialogue


def final_array(parts: np.ndarray, seq: np.ndarray, pos: np.ndarray, *, params: HybridParams) -> np.ndarray:
    """The ranking score: the content score (dense, sparse, feedback and second-hop parts)
    smoothed along the conversation, plus the speaker and time boosts.

    (seq, pos) is (page seq, position in page); two candidates are adjacent when they are next to
    each other in that order with no turn between them. A turn gains `previous_weight` of the
    positive content score of the turn before it and `next_weight` of the one after it. A
    neighbour below the candidates' mean (a negative z-sum) lends nothing rather than pulling the
    turn down: a fact is often said once in unrelated talk, and such isolated turns are what
    multi-hop questions need. The boosts stay out of the smoothing: who said a turn says nothing
    about the turns next to it, and a smoothed boost would lift the other participant's replies
    to the named one.
    """
    content = parts[:, :CONTENT_COLUMNS].sum(axis=1)
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
    return result + parts[:, CONTENT_COLUMNS:].sum(axis=1)


# Held while the BLAS thread count is lowered: two threads lowering and restoring it at once
# could leave it lowered for good.
_BLAS_LOCK = threading.Lock()


@functools.cache
def _blas() -> ThreadpoolController:
    """The process's native thread pools, found once (finding them takes milliseconds)."""
    return ThreadpoolController()


def meaning_lift(final: np.ndarray, vectors: np.ndarray, *, weight: float, neighbours: int) -> np.ndarray:
    """What each candidate gains from its neighbours in meaning: `weight` times the mean of the
    positive final scores of its `neighbours` nearest other candidates by cosine (rows of
    `vectors`, unit length; ties to the earlier row). A neighbour below zero lends nothing, as
    along the dialogue. Zeros when there are no neighbours to lend."""
    count = len(final)
    if count < 2 or neighbours <= 0 or weight <= 0:
        return np.zeros(count)
    # On one BLAS thread: OpenBLAS splits even this 100 × 100 product over every core, and on a
    # busy host waiting for the second thread took 10 ms where one thread takes 0.3 ms.
    with _BLAS_LOCK, _blas().limit(limits=1, user_api="blas"):
        cosine = vectors @ vectors.T
    np.fill_diagonal(cosine, -np.inf)
    nearest = np.argsort(-cosine, axis=1, kind="stable")[:, :min(neighbours, count - 1)]
    return weight * np.maximum(final, 0.0)[nearest].mean(axis=1)


def diverse_first(final: np.ndarray, seq: np.ndarray, pos: np.ndarray, session: np.ndarray, limit: int, *,
                  penalty: float) -> np.ndarray:
    """Indices of the `limit` best, taken greedily: a candidate's score loses `penalty` for each
    turn already taken from its session, so the top-k spreads over sessions when their scores
    are close. With no penalty, best_first's order."""
    order = best_first(final, seq, pos, len(final))
    if penalty <= 0 or len(order) == 0:
        return order[:limit]
    remaining = list(order)
    taken: list[int] = []
    per_session: dict[int, int] = {}
    while remaining and len(taken) < limit:
        best_at, best_score = 0, -np.inf
        for at, index in enumerate(remaining):
            score = final[index] - penalty * per_session.get(int(session[index]), 0)
            if score > best_score:
                best_at, best_score = at, score
            if final[index] <= best_score:  # sorted: no later candidate can beat it
                break
        index = remaining.pop(best_at)
        taken.append(index)
        per_session[int(session[index])] = per_session.get(int(session[index]), 0) + 1
    return np.asarray(taken, dtype=np.int64)


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


# ------------------------------------------------------------------ the second hop

_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")


def bridge_terms(query: str, texts: Sequence[str], *, exclude: set[str], limit: int) -> list[str]:
    """Words the first hits share beyond the query: the names, places and events a second
    search follows into other sessions.

    A capitalised word inside a sentence is taken as a name; another word counts when at least
    two of the hits say it. Words of the query, stopwords and `exclude` (the participants' names)
    are left out; most frequent first, then in order of appearance.
    """
    from memory.engine.sparse import STOPWORDS, stem, tokenize

    asked = set(tokenize(query))
    excluded = {stem(word) for name in exclude for word in re.findall(r"[^\W_]+", name.lower())}
    counts: dict[str, float] = {}  # in order of first appearance: ties keep it (sorted is stable)
    for text in texts:
        names = list(dict.fromkeys(stem(word.lower()) for word in _NAME.findall(text)))
        for word in names:
            counts[word] = counts.get(word, 0.0) + 1.5
        for word in dict.fromkeys(tokenize(text)):
            if word not in names:
                counts[word] = counts.get(word, 0.0) + 1.0
    kept = [(word, count) for word, count in counts.items()
            if word not in asked and word not in excluded and word not in STOPWORDS and len(word) > 2
            and not word.isdigit() and count >= 1.5]
    kept.sort(key=lambda entry: -entry[1])
    return [word for word, _ in kept[:limit]]


# ------------------------------------------------------------------ turn pairs

def asks(text: str) -> bool:
    """Whether a turn asks something: it holds a question mark."""
    return "?" in text


def next_turn(seq: int, pos: int, turns_in_page: int) -> tuple[int, int]:
    """(page seq, position) of the turn after (seq, pos): the next in its page, else the first of
    the next page."""
    return (seq, pos + 1) if pos + 1 < turns_in_page else (seq + 1, 0)


def answer_lift(content: np.ndarray, pairs: Sequence[tuple[int, int]], *, weight: float) -> np.ndarray:
    """What each candidate gains as the answer of a question among them: `weight` times the
    positive content score of the question, for each (question, answer) pair of candidate indices
    (an answer follows one turn, so it has at most one question; the larger lift wins if not)."""
    lift = np.zeros(len(content))
    for question, answer in pairs:
        lift[answer] = max(lift[answer], weight * max(float(content[question]), 0.0))
    return lift
