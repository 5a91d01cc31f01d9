"""The relevance core: how well each remembered utterance matches a query, for every policy.

Every utterance is indexed on its own (memory/services/utterances.py). A query's dense and BM25
hits are put on one scale (z-scores), re-scored with a pseudo-relevance-feedback query, joined by
a second hop (a keyword search for the names and events the first hits share beyond the query),
smoothed along the conversation, and boosted for the participant the query names and for turns
said in the period the question names (memory/engine/hybrid_scoring.py, time_window.py); then a
question among the best turns lends its answer (the next turn, another participant's) a share of
its score; last, each of the best turns gains a share of the scores of its nearest turns in
meaning among them.

The policies differ in what they add to relevance, never in what matches: the hybrid policy ranks
these turns directly (with diversity across sessions), the MemoryOS policy ranks segments by
what their pages score here, Memoria, the Exocortex and Generative Agents weigh each page's
relevance from here with their own terms. `TurnRelevance` exposes the scores per turn, per page
and per segment, and normalised to [0, 1] for the formulas that expect a cosine-like relevance.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memory.adapters import configured
from memory.engine import hybrid_scoring as scoring
from memory.engine.time_window import Window, question_anchor, question_window
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, Tier
from memory.recall import rows
from memory.recall.turn_facts import TurnFact, turn_facts

# What turn pairs read of a turn's point: whether it asks, whether it ends its page
# (memory/services/utterances.py writes them).
TURN_FLAGS = ("asks", "last")

# The project's parameters; a benchmark's ablation runs with some parts switched off.
PARAMS = scoring.HybridParams()


@dataclass
class TurnRelevance:
    """The candidate turns of one query with their parts and final scores (arrays indexed like keys)."""

    keys: list[str]
    facts: dict[str, TurnFact]
    parts: np.ndarray
    final: np.ndarray
    dense: dict[str, float]
    sparse: dict[str, float]
    window: Window | None = None
    bridge: list[str] = field(default_factory=list)
    params: scoring.HybridParams = field(default_factory=lambda: PARAMS)
    meaning: np.ndarray | None = None  # what smoothing by meaning added to `final` (None: not run)
    answer: np.ndarray | None = None  # what turn pairs added to `final` (None: not run)

    @functools.cached_property
    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(seq, pos, day) of each key, read from the facts in one pass: a recall asks for them
        several times over about a thousand candidates (`keys` never changes once scored)."""
        count = len(self.keys)
        if not count:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        seq, pos, _, said = zip(*map(self.facts.__getitem__, self.keys), strict=True)
        return (np.array(seq, dtype=np.int64), np.array(pos, dtype=np.int64),
                (np.array(said, dtype=float) // 86400).astype(np.int64))  # TurnFact.day

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
        best: dict[int, float] = {}
        final = self.final if self.answer is None else self.final - self.answer
        for seq, score in zip(self.seq.tolist(), final.tolist(), strict=True):
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


def min_max(values: Iterable[float]) -> Callable[[float], float]:
    """The map of a score onto [0, 1] by the best and weakest of `values` (1.0 for all when they
    are flat or empty; scores outside the range are clamped)."""
    values = list(values)
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    if high <= low:
        return lambda score: 1.0
    return lambda score: float(min(1.0, max(0.0, (score - low) / (high - low))))


def _turn_scope(tiers: Sequence[str]) -> dict[str, Any]:
    return {"match_any": {"tier": list(tiers)}, "kind": "turn", "fields": ()}


def keyword_turns(*, user, query: str, tiers: Sequence[str] = (Tier.MTM,),
                  params: scoring.HybridParams | None = None) -> dict[str, float]:
    """The BM25 list: turn id -> score. It needs no query vector, so recall runs it while the
    query is being embedded."""
    params = params or PARAMS
    if not query.strip():
        return {}
    return {hit.id: hit.score for hit in configured.vector_index().search_text(
        user_id=str(user.pk), text=query, limit=params.candidates, **_turn_scope(tiers))}


def turn_relevance(*, user, query: str, query_vector: Sequence[float], now, tiers: Sequence[str] = (Tier.MTM,),
                   sparse: dict[str, float] | None = None, facts: Sequence[RecalledItem] = (),
                   params: scoring.HybridParams | None = None) -> TurnRelevance:
    """Every candidate turn of the query with its parts and final score. `sparse` is the query's
    keyword_turns when the caller has it already; `facts` the KB facts and agent traits nearest
    the query (RecallContext.facts), whose source pages gain the long-term part."""
    params = params or PARAMS
    index = configured.vector_index()
    user_id = str(user.pk)
    scope = _turn_scope(tiers)
    dense = {hit.id: hit.score for hit in
             index.search(user_id=user_id, vector=query_vector, limit=params.candidates, **scope)}
    if sparse is None:
        sparse = keyword_turns(user=user, query=query, tiers=tiers, params=params)
    learned = _long_term_pages(user, facts, params) if params.long_term_boost > 0 else {}
    facts = turn_facts().get(index, user_id=user_id, ids=list({**dense, **sparse}))
    window = question_window(query, now=now) or _anchored_window(user, query, tiers, params)
    if not facts:
        return TurnRelevance([], {}, np.zeros((0, len(scoring.PART_NAMES))), np.zeros(0), dense, sparse, window,
                             params=params)
    speakers = {fact.speaker for fact in facts.values()}
    named = scoring.named_speakers(query, speakers)
    first = _score(facts, dense, sparse, None, None, named, window, params)
    # The feedback query leans toward the best hits by their unsmoothed parts.
    top = [first.keys[i] for i in np.argsort(-first.parts.sum(axis=1), kind="stable")[:params.feedback_top]]
    read = index.get_vectors(user_id=user_id, ids=top)
    top_vectors = [read[key] for key in top if key in read]  # in `top`'s order, whatever the index's
    fb_query = scoring.feedback_query(query_vector, top_vectors, mix=params.feedback_mix)
    feedback = {hit.id: hit.score for hit in
                index.search(user_id=user_id, vector=fb_query, limit=params.candidates, **scope)}
    hop, bridge = None, []
    if params.hop_weight > 0:
        hop, bridge = _second_hop(user, query, first, speakers, tiers, params)
    facts.update(turn_facts().get(index, user_id=user_id,
                                  ids=[key for key in {**feedback, **(hop or {})} if key not in facts]))
    result = _score(facts, dense, sparse, feedback, hop, named, window, params, learned)
    result.bridge = bridge
    if params.pair_weight > 0 and params.pair_questions > 0:
        _lift_answers(index, user, result)
    if params.meaning_weight > 0:
        _smooth_by_meaning(index, user_id, result)
    return result


def _smooth_by_meaning(index, user_id: str, found: TurnRelevance) -> None:
    """Lift the best `meaning_pool` turns by their neighbours in meaning among them
    (scoring.meaning_lift), reading their vectors in one batch."""
    params = found.params
    pool = scoring.best_first(found.final, found.seq, found.pos, params.meaning_pool)
    vectors = index.get_vectors(user_id=user_id, ids=[found.keys[i] for i in pool])
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


def _lift_answers(index, user, found: TurnRelevance) -> None:
    """Turn pairs: each of the best `pair_questions` turns that asks something lends its answer
    (the next turn, said by another participant, when it is a candidate) a share of its content
    score (scoring.answer_lift). Whether a turn asks and whether it ends its page are read from
    its point (indexing writes them, utterances.turn_flags), for those turns only; the pages of
    turns indexed before that are read instead, in one query."""
    params = found.params
    top = scoring.best_first(found.final, found.seq, found.pos, params.pair_questions).tolist()
    flags = index.get_payloads(user_id=str(user.pk), ids=[found.keys[i] for i in top], fields=TURN_FLAGS)
    unflagged = sorted({found.facts[found.keys[i]].seq for i in top
                        if not all(name in flags.get(found.keys[i], {}) for name in TURN_FLAGS)})
    pages = {page.seq: page.utterances or [] for page in rows.rows(
        DialoguePage, ("seq", "utterances"), equal={"user": user.pk, "repressed": False},
        among={"seq": unflagged})} if unflagged else {}
    pairs = []
    for i in top:
        fact, flagged = found.facts[found.keys[i]], flags.get(found.keys[i], {})
        if all(name in flagged for name in TURN_FLAGS):
            asks, turns_in_page = bool(flagged["asks"]), fact.pos + (1 if flagged["last"] else 2)
        else:
            said = pages.get(fact.seq, [])
            if fact.pos >= len(said):
                continue
            asks, turns_in_page = scoring.asks(said[fact.pos].get("text", "")), len(said)
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


def _long_term_pages(user, facts: Sequence[RecalledItem], params: scoring.HybridParams) -> dict[int, float]:
    """Page seq -> the best cosine of a KB fact or agent trait near the query that was learned from
    it: the best `long_term_facts` of each kind at `long_term_min_cosine` or more."""
    best: dict[str, float] = {}  # page id -> cosine
    for kind in ("kb_fact", "agent_trait"):
        near = sorted((item for item in facts if item.kind == kind), key=lambda item: -item.score)
        for item in near[:params.long_term_facts]:
            if item.score < params.long_term_min_cosine:
                break
            for page_id in item.source_page_ids:
                best[page_id] = max(item.score, best.get(page_id, 0.0))
    if not best:
        return {}
    pages = rows.by_pk(DialoguePage, list(best), ("user", "seq"))
    return {page.seq: best[key] for key, page in pages.items() if page.user_id == user.pk}


def _anchored_window(user, query: str, tiers: Sequence[str], params: scoring.HybridParams) -> Window | None:
    """For "after the road trip": the weeks next to the best keyword match of the event named."""
    anchor = question_anchor(query)
    if anchor is None or params.time_boost <= 0:
        return None
    hits = keyword_turns(user=user, query=anchor.event, tiers=tiers, params=replace(params, candidates=5))
    if not hits:
        return None
    best = max(hits, key=lambda key: hits[key])
    fact = turn_facts().get(configured.vector_index(), user_id=str(user.pk), ids=[best]).get(best)
    return anchor.window(fact.timestamp) if fact is not None and fact.timestamp else None


def _score(facts, dense, sparse, feedback, hop, named, window: Window | None,
           params: scoring.HybridParams, learned: dict[int, float] | None = None) -> TurnRelevance:
    keys = list(facts)
    speakers = [facts[key].speaker for key in keys]
    in_window = None
    if window is not None:
        in_window = np.fromiter((window.contains(facts[key].timestamp) for key in keys), dtype=bool, count=len(keys))
    long_term = None
    if learned:
        long_term = np.fromiter((learned.get(facts[key].seq, 0.0) for key in keys), dtype=float, count=len(keys))
    parts = scoring.fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=feedback, speakers=speakers,
                                named=named, params=params, hop=hop, in_window=in_window, long_term=long_term)
    relevance = TurnRelevance(keys, facts, parts, np.zeros(len(keys)), dense, sparse, window, params=params)
    relevance.final = scoring.final_array(parts, relevance.seq, relevance.pos, params=params)
    return relevance


def _second_hop(user, query: str, first: TurnRelevance, speakers: set[str], tiers: Sequence[str],
                params: scoring.HybridParams) -> tuple[dict[str, float] | None, list[str]]:
    """A keyword search for what the first hits share beyond the query (scoring.bridge_terms)."""
    seeds = [first.keys[i] for i in np.argsort(-first.parts.sum(axis=1), kind="stable")[:params.hop_seeds]]
    texts = turn_texts(user, [first.facts[key] for key in seeds])
    terms = scoring.bridge_terms(query, texts, exclude=speakers, limit=params.hop_terms)
    if not terms:
        return None, []
    return keyword_turns(user=user, query=" ".join(terms), tiers=tiers, params=params), terms


def turn_texts(user, facts: Sequence[TurnFact]) -> list[str]:
    """What each turn said, read from its page's stored utterances."""
    seqs = sorted({fact.seq for fact in facts})
    pages = {page.seq: page for page in rows.rows(DialoguePage, ("seq", "utterances"),
                                                   equal={"user": user.pk, "repressed": False}, among={"seq": seqs})}
    texts = []
    for fact in facts:
        page = pages.get(fact.seq)
        if page is not None and fact.pos < len(page.utterances or ()):
            texts.append(page.utterances[fact.pos].get("text", ""))
    return texts


def with_params(**changes: Any) -> scoring.HybridParams:
    """The project's parameters with some changed (ablations, experiments)."""
    return replace(PARAMS, **changes)


def turn_items(user, found: TurnRelevance, ranked: Sequence[int]) -> list[RecalledItem]:
    """The ranked candidates as items with their utterance and score breakdown."""
    facts = found.facts
    seqs = sorted({facts[found.keys[i]].seq for i in ranked})
    pages = {page.seq: page for page in rows.rows(DialoguePage, ("seq", "utterances", "segment", "timestamp"),
                                                   equal={"user": user.pk, "repressed": False}, among={"seq": seqs})}
    items = []
    for i in ranked:
        key = found.keys[i]
        page = pages.get(facts[key].seq)
        pos = facts[key].pos
        if page is None or pos >= len(page.utterances):
            continue
        utt = page.utterances[pos]
        breakdown: dict = found.breakdown(i)
        breakdown["segment_id"] = str(page.segment_id) if page.segment_id else ""
        items.append(RecalledItem(
            kind="turn", ref=key, text=f"{utt['speaker']}: {utt['text']}", score=float(found.final[i]),
            timestamp=page.timestamp, source_ids=(utt["id"],) if utt.get("id") else (), breakdown=breakdown,
        ))
    return items
