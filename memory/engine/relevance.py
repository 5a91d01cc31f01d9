"""The relevance core: how well each remembered utterance matches a query, for every policy.

A query's dense and BM25 hits are put on one scale (z-scores), re-scored with a
pseudo-relevance-feedback query, joined by a second hop (a keyword search for the names and
events the first hits share beyond the query), smoothed along the conversation, and boosted for
the participant the query names, for turns said in the period the question names and for the
pages long-term facts near the query were learned from (the formulas: hybrid_scoring.py,
time_window.py); then a question among the best turns lends its answer (the next turn, another
participant's) a share of its score; last, each of the best turns gains a share of the scores of
its nearest turns in meaning among them.

`relevance(query, candidates, params)` runs those steps top to bottom; what it reads it asks of
a `CandidateSource` (memory/engine/candidates.py): the adapters in a recall, plain data in tests.
`TurnRelevance` holds the scores per turn, per page, and normalised to [0, 1] for the formulas
that expect a cosine-like relevance.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from memory.engine import hybrid_scoring as scoring
from memory.engine.candidates import TURN_FLAGS, CandidateSource, TurnFact
from memory.engine.time_window import Window, question_anchor, question_window
from memory.engine.types import RecalledItem

ANCHOR_HITS = 5  # keyword hits read to find the event an anchored window ("after the road trip") names


@dataclass(frozen=True)
class RelevanceQuery:
    """One query as the core reads it: its words, its vector, when it is asked; the keyword list
    when the caller has it already (a policy's early search), and the KB facts and agent traits
    nearest it (RecallContext.facts), whose source pages gain the long-term part."""

    text: str
    vector: Sequence[float]
    now: datetime
    sparse: Mapping[str, float] | None = None
    facts: Sequence[RecalledItem] = ()


@dataclass
class TurnRelevance:
    """The candidate turns of one query with their parts and final scores (arrays indexed like keys)."""

    keys: list[str]
    facts: dict[str, TurnFact]
    parts: np.ndarray
    final: np.ndarray
    dense: Mapping[str, float]
    sparse: Mapping[str, float]
    window: Window | None = None
    bridge: list[str] = field(default_factory=list)
    params: scoring.HybridParams = field(default_factory=scoring.HybridParams)
    meaning: np.ndarray | None = None  # what smoothing by meaning added to `final` (None: not run)
    answer: np.ndarray | None = None  # what turn pairs added to `final` (None: not run)
    read: FactColumns | None = field(default=None, repr=False)  # the facts of `keys` as scoring read them

    @functools.cached_property
    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(seq, pos, day) of each key, read from the facts in one pass: a recall asks for them
        several times over about a thousand candidates (`keys` never changes once scored).
        Scoring hands over the columns it read (`read`)."""
        columns = self.read if self.read is not None else FactColumns.of(self.facts, self.keys)
        return columns.seq, columns.pos, columns.day

    @property
    def seq(self) -> np.ndarray:
        return self._columns[0]

    @property
    def pos(self) -> np.ndarray:
        return self._columns[1]

    def ranked(self, limit: int, *, diverse: bool = True) -> list[int]:
        """Indices of the best `limit` turns; spread over sessions unless `diverse` is off."""
        seq, pos, day = self._columns
        if not diverse:
            return scoring.best_first(self.final, seq, pos, limit).tolist()
        return scoring.diverse_first(self.final, seq, pos, day, limit, penalty=self.params.session_penalty).tolist()

    def page_scores(self) -> dict[int, float]:
        """Page seq -> the best final score among its turns (a page is as relevant as its best line),
        leaving out what turn pairs lent: the lift puts an answer over other lines, and a page that
        holds the question already scores by it. (Counted for pages, the lift took MemoryOS's
        multi-hop R@10 on the development file from 0.409 to 0.381; without it 0.402.)"""
        final = self.final if self.answer is None else self.final - self.answer
        return self._best_per_page(final.tolist())

    def page_keyword_scores(self) -> dict[int, float]:
        """Page seq -> the best keyword (BM25) score among its turns in the keyword list: a page
        shares the query's words as much as its best line does. Pages with no line there are left
        out. (Memoria's words term: no search of its own; BENCHMARKS.md, "Memoria's words from the
        page points".)"""
        sparse = self.sparse or {}
        best = self._best_per_page([sparse.get(key, 0.0) for key in self.keys])
        return {seq: score for seq, score in best.items() if score > 0}

    def _best_per_page(self, scores: list[float]) -> dict[int, float]:
        """Page seq -> the best of `scores` (one per key) among the page's turns."""
        best: dict[int, float] = {}
        for seq, score in zip(self.seq.tolist(), scores, strict=True):
            if score > best.get(seq, -np.inf):
                best[seq] = score
        return best

    def normalised(self, scores: dict[Any, float]) -> dict[Any, float]:
        """Scores mapped onto [0, 1] for formulas that weigh a cosine-like relevance: a min-max
        scale over the candidates given (the best 1, the weakest 0). The z-scale has no absolute
        zero, so the map is relative to this query's candidates; it keeps their order and spreads
        them, so a policy's own terms reorder candidates of close relevance without lifting a
        weak match over a strong one, and never decide between candidates tied at a floor."""
        scale = min_max(scores.values())
        return {key: scale(value) for key, value in scores.items()}

    def breakdown(self, index: int) -> dict[str, float]:
        key = self.keys[index]
        parts = {name: round(value, 4) for name, value in scoring.part_dict(self.parts, index).items()}
        parts["meaning"] = round(float(self.meaning[index]), 4) if self.meaning is not None else 0.0
        parts["answer"] = round(float(self.answer[index]), 4) if self.answer is not None else 0.0
        parts["final"] = round(float(self.final[index]), 4)
        parts["cosine"] = round(self.dense.get(key, 0.0), 4)
        parts["bm25"] = round(self.sparse.get(key, 0.0), 4)
        return parts


@dataclass(frozen=True)
class FactColumns:
    """The turn facts of `keys` as columns, read in one pass: (seq, pos, day) for ranking, the
    speakers and the times for the boosts. A scoring pass reads all of them over about a thousand
    candidates; reading each from the facts on its own took a millisecond apiece a recall."""

    seq: np.ndarray
    pos: np.ndarray
    day: np.ndarray
    said: np.ndarray  # TurnFact.timestamp
    speakers: tuple[str, ...]

    @classmethod
    def of(cls, facts: Mapping[str, TurnFact], keys: Sequence[str]) -> FactColumns:
        if not keys:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty, np.zeros(0), ())
        seq, pos, speakers, said = zip(*map(facts.__getitem__, keys), strict=True)
        seconds = np.array(said, dtype=float)
        return cls(np.array(seq, dtype=np.int64), np.array(pos, dtype=np.int64),
                   (seconds // 86400).astype(np.int64), seconds, speakers)  # TurnFact.day

    def extended(self, more: FactColumns) -> FactColumns:
        """These columns followed by `more`'s (the keys a second pass adds after the first's)."""
        return FactColumns(np.concatenate((self.seq, more.seq)), np.concatenate((self.pos, more.pos)),
                           np.concatenate((self.day, more.day)), np.concatenate((self.said, more.said)),
                           self.speakers + more.speakers)


def min_max(values: Iterable[float]) -> Callable[[float], float]:
    """The map of a score onto [0, 1] by the best and weakest of `values` (1.0 for all when they
    are flat or empty; scores outside the range are clamped)."""
    values = list(values)
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    if high <= low:
        return lambda score: 1.0
    return lambda score: float(min(1.0, max(0.0, (score - low) / (high - low))))


def keyword_hits(candidates: CandidateSource, text: str, limit: int) -> dict[str, float]:
    """The BM25 list: turn id -> score; none for a blank text. It needs no query vector, so a
    recall runs it while the query is being embedded."""
    if not text.strip():
        return {}
    return candidates.keyword(text, limit)


def relevance(query: RelevanceQuery, candidates: CandidateSource, params: scoring.HybridParams) -> TurnRelevance:
    """Every candidate turn of the query with its parts and final score."""
    dense = candidates.dense(query.vector, params.candidates)
    sparse = query.sparse
    if sparse is None:
        sparse = keyword_hits(candidates, query.text, params.candidates)
    learned = _learned_pages(candidates, query.facts, params) if params.long_term_boost > 0 else {}
    facts = candidates.facts(list({**dense, **sparse}))
    window = question_window(query.text, now=query.now) or _anchored_window(candidates, query.text, params)
    if not facts:
        return TurnRelevance([], {}, np.zeros((0, len(scoring.PART_NAMES))), np.zeros(0), dense, sparse, window,
                             params=params)
    columns = FactColumns.of(facts, list(facts))
    speakers = set(columns.speakers)
    named = scoring.named_speakers(query.text, speakers)
    first = _score(facts, columns, dense, sparse, None, None, named, window, params)
    # The feedback query leans toward the best hits by their unsmoothed parts.
    unsmoothed = np.argsort(-first.parts.sum(axis=1), kind="stable")
    top = [first.keys[i] for i in unsmoothed[:params.feedback_top]]
    read = candidates.vectors(top)
    top_vectors = [read[key] for key in top if key in read]  # in `top`'s order, whatever the source's
    feedback = candidates.dense(scoring.feedback_query(query.vector, top_vectors, mix=params.feedback_mix),
                                params.candidates)
    hop, bridge = None, []
    if params.hop_weight > 0:
        hop, bridge = _second_hop(candidates, query.text, first, unsmoothed, speakers, params)
    added = candidates.facts([key for key in {**feedback, **(hop or {})} if key not in facts])
    facts.update(added)  # after the first pass's keys, so their columns are the first's
    columns = columns.extended(FactColumns.of(added, list(added)))
    if len(columns.seq) != len(facts):  # a source that answered with keys it had given before
        columns = FactColumns.of(facts, list(facts))
    result = _score(facts, columns, dense, sparse, feedback, hop, named, window, params, learned)
    result.bridge = bridge
    if params.pair_weight > 0 and params.pair_questions > 0:
        lift_answers(candidates, result)
    if params.meaning_weight > 0:
        smooth_by_meaning(candidates, result)
    return result


def smooth_by_meaning(candidates: CandidateSource, found: TurnRelevance) -> None:
    """Lift the best `meaning_pool` turns by their neighbours in meaning among them
    (scoring.meaning_lift), reading their vectors in one batch."""
    params = found.params
    pool = scoring.best_first(found.final, found.seq, found.pos, params.meaning_pool)
    vectors = candidates.vectors([found.keys[i] for i in pool])
    pool = [i for i in pool.tolist() if found.keys[i] in vectors]
    found.meaning = np.zeros(len(found.keys))
    if len(pool) < 2:
        return
    matrix = _matrix([vectors[found.keys[i]] for i in pool])
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    found.meaning[pool] = scoring.meaning_lift(found.final[pool], matrix, weight=params.meaning_weight,
                                               neighbours=params.meaning_neighbours)
    found.final = found.final + found.meaning


def _matrix(rows: Sequence[Sequence[float]]) -> np.ndarray:
    """Equal-length rows of Python floats as one float array, read as one flat run: np.asarray
    over the list of lists took 2.3 ms for 100 rows of 384, this 1.7 (load 7-10)."""
    width = len(rows[0]) if rows else 0
    flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=float, count=len(rows) * width)
    return flat.reshape(len(rows), width)


def lift_answers(candidates: CandidateSource, found: TurnRelevance) -> None:
    """Turn pairs: each of the best `pair_questions` turns that asks something lends its answer
    (the next turn, said by another participant, when it is a candidate) a share of its content
    score (scoring.answer_lift). Whether a turn asks and whether it ends its page are read from
    its point (indexing writes them, utterances.turn_flags), for those turns only; the pages of
    turns indexed before that are read instead, in one batch."""
    params = found.params
    top = scoring.best_first(found.final, found.seq, found.pos, params.pair_questions).tolist()
    flags = candidates.flags([found.keys[i] for i in top])
    unflagged = sorted({found.facts[found.keys[i]].seq for i in top
                        if not all(name in flags.get(found.keys[i], {}) for name in TURN_FLAGS)})
    pages = candidates.page_turns(unflagged) if unflagged else {}
    pairs = []
    for i in top:
        fact, flagged = found.facts[found.keys[i]], flags.get(found.keys[i], {})
        if all(name in flagged for name in TURN_FLAGS):
            asks, turns_in_page = bool(flagged["asks"]), fact.pos + (1 if flagged["last"] else 2)
        else:
            said = pages.get(fact.seq, [])
            if fact.pos >= len(said):
                continue
            asks, turns_in_page = scoring.asks(said[fact.pos]), len(said)
        if not asks:
            continue
        seq, pos = scoring.next_turn(fact.seq, fact.pos, turns_in_page)
        at = np.flatnonzero((found.seq == seq) & (found.pos == pos))  # the candidate there, if any
        answer = int(at[-1]) if len(at) else None
        if answer is not None and found.facts[found.keys[answer]].speaker != fact.speaker:
            pairs.append((i, answer))
    content = found.parts[:, :scoring.CONTENT_COLUMNS].sum(axis=1)
    found.answer = scoring.answer_lift(content, pairs, weight=params.pair_weight)
    found.final = found.final + found.answer


def learned_from(facts: Sequence[RecalledItem], params: scoring.HybridParams) -> dict[str, float]:
    """Page id -> the best cosine of a KB fact or agent trait near the query that was learned from
    it: the best `long_term_facts` of each kind at `long_term_min_cosine` or more."""
    best: dict[str, float] = {}
    for kind in ("kb_fact", "agent_trait"):
        near = sorted((item for item in facts if item.kind == kind), key=lambda item: -item.score)
        for item in near[:params.long_term_facts]:
            if item.score < params.long_term_min_cosine:
                break
            for page_id in item.source_page_ids:
                best[page_id] = max(item.score, best.get(page_id, 0.0))
    return best


def _learned_pages(candidates: CandidateSource, facts: Sequence[RecalledItem],
                   params: scoring.HybridParams) -> dict[int, float]:
    """Page seq -> learned_from's cosine, for the user's own pages."""
    best = learned_from(facts, params)
    if not best:
        return {}
    return {seq: best[page_id] for page_id, seq in candidates.page_seqs(list(best)).items()}


def _anchored_window(candidates: CandidateSource, query: str, params: scoring.HybridParams) -> Window | None:
    """For "after the road trip": the weeks next to the best keyword match of the event named."""
    anchor = question_anchor(query)
    if anchor is None or params.time_boost <= 0:
        return None
    hits = keyword_hits(candidates, anchor.event, ANCHOR_HITS)
    if not hits:
        return None
    best = max(hits, key=lambda key: hits[key])
    fact = candidates.facts([best]).get(best)
    return anchor.window(fact.timestamp) if fact is not None and fact.timestamp else None


def _score(facts, columns: FactColumns, dense, sparse, feedback, hop, named, window: Window | None,
           params: scoring.HybridParams, learned: dict[int, float] | None = None) -> TurnRelevance:
    """One scoring pass over every key of `facts`, whose facts `columns` holds in the same order."""
    keys = list(facts)
    in_window = None
    if window is not None:
        in_window = _in_window(window, columns.said)
    long_term = None
    if learned:
        long_term = np.fromiter(map(learned.get, columns.seq.tolist(), itertools.repeat(0.0)), dtype=float,
                                count=len(keys))
    parts = scoring.fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=feedback, speakers=columns.speakers,
                                named=named, params=params, hop=hop, in_window=in_window, long_term=long_term)
    found = TurnRelevance(keys, facts, parts, np.zeros(len(keys)), dense, sparse, window, params=params,
                          read=columns)
    found.final = scoring.final_array(parts, columns.seq, columns.pos, params=params)
    return found


def _in_window(window: Window, said: np.ndarray) -> np.ndarray:
    """Window.contains over an array of Unix seconds (the same comparisons, on float64)."""
    if window.month is not None:
        return np.fromiter(map(window.contains, said.tolist()), dtype=bool, count=len(said))
    return (window.start <= said) & (said < window.end)


def _second_hop(candidates: CandidateSource, query: str, first: TurnRelevance, unsmoothed: np.ndarray,
                speakers: set[str], params: scoring.HybridParams) -> tuple[dict[str, float] | None, list[str]]:
    """A keyword search for what the first hits share beyond the query (scoring.bridge_terms);
    `unsmoothed` is the first pass's order by its unsmoothed parts, best first."""
    seeds = [first.keys[i] for i in unsmoothed[:params.hop_seeds]]
    texts = candidates.texts([first.facts[key] for key in seeds])
    terms = scoring.bridge_terms(query, texts, exclude=speakers, limit=params.hop_terms)
    if not terms:
        return None, []
    return keyword_hits(candidates, " ".join(terms), params.candidates), terms
