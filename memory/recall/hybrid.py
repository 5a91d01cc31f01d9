"""The hybrid policy (the default): utterance-level dense + BM25 fusion over mid-term memory.

Every utterance is indexed on its own (memory/services/utterances.py). A query's dense and BM25
hits are put on one scale, re-scored with a pseudo-relevance-feedback query, smoothed along the
conversation and boosted for the participant the query names (memory/engine/hybrid_scoring.py).
The segments of the top utterances count as visited, so heat and promotion work as in the paper.
For speed the searches read only ids and scores; the utterances' fixed payload comes from
memory/recall/turn_facts.py and the scoring runs over numpy arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.conf import settings

from memory.adapters import configured
from memory.engine import hybrid_scoring as scoring
from memory.engine.mid_term import SegmentScore
from memory.engine.similarity import jaccard
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, Segment, Tier
from memory.recall import rows
from memory.recall.base import SEGMENT_FIELDS, Ranking, RecallContext, RecallPolicy, owned, register_policy
from memory.recall.turn_facts import TurnFact, turn_facts


@register_policy
class HybridPolicy(RecallPolicy):
    name = "hybrid"
    title = ("Utterances by dense + BM25 fusion with pseudo-relevance feedback, neighbour smoothing and a "
             "speaker boost")
    rank_part = "utterances"
    early_part = "keyword search"

    def search_early(self, context: RecallContext) -> dict[str, float]:
        return keyword_turns(user=context.user, query=context.query, tiers=context.turn_tiers)

    def rank(self, context: RecallContext, query_vector: Sequence[float], early: Any) -> Ranking:
        items = recall_turns(user=context.user, query=context.query, query_vector=query_vector,
                             limit=settings.MEMORYOS["TOP_K_TURNS"], tiers=context.turn_tiers, sparse=early)
        chosen, segment_rows, considered = segments_of_turns(context, items)
        return Ranking(items=items, visited=chosen, segment_rows=segment_rows, considered=considered,
                       trace={"turns": [{"id": i.ref, "text": i.text[:160], **i.breakdown,
                                         "said_at": i.timestamp.isoformat() if i.timestamp else ""}
                                        for i in items]})


def segments_of_turns(context: RecallContext, turns: list[RecalledItem]) -> tuple[list[SegmentScore], dict, list]:
    """The segments visited are those of the top turns (at most top-m), so heat keeps counting
    retrievals and hot topics still reach LPM."""
    order: list[str] = []
    for item in turns:
        sid = item.breakdown.get("segment_id")
        if sid and sid not in order:
            order.append(sid)
    found = owned(Segment, SEGMENT_FIELDS, order[:context.params.top_m_segments], context.user,
                  status=Segment.Status.ACTIVE)
    chosen = [SegmentScore(segment_id=sid, cos=0.0,
                           jaccard=jaccard(context.query_keywords, frozenset(found[sid].keywords)))
              for sid in order if sid in found]
    considered = [{"id": s.segment_id, "jaccard": round(s.jaccard, 4), "chosen": True,
                   "summary": found[s.segment_id].summary[:200]} for s in chosen]
    return chosen, found, considered


def _turn_scope(tiers: Sequence[str]) -> dict[str, Any]:
    return {"match_any": {"tier": list(tiers)}, "kind": "turn", "fields": ()}


def keyword_turns(*, user, query: str, tiers: Sequence[str] = (Tier.MTM,),
                  params: scoring.HybridParams | None = None) -> dict[str, float]:
    """The BM25 list of the hybrid policy: turn id -> score. It needs no query vector, so recall
    runs it while the query is being embedded."""
    params = params or scoring.HybridParams()
    return {hit.id: hit.score for hit in configured.vector_index().search_text(
        user_id=str(user.pk), text=query, limit=params.candidates, **_turn_scope(tiers))}


def recall_turns(*, user, query: str, query_vector: Sequence[float], limit: int,
                 tiers: Sequence[str] = (Tier.MTM,), params: scoring.HybridParams | None = None,
                 sparse: dict[str, float] | None = None) -> list[RecalledItem]:
    """The best utterances by the hybrid score, each with its breakdown. `sparse` is the query's
    keyword_turns when the caller has it already."""
    params = params or scoring.HybridParams()
    index = configured.vector_index()
    user_id = str(user.pk)
    scope = _turn_scope(tiers)
    dense = {hit.id: hit.score for hit in
             index.search(user_id=user_id, vector=query_vector, limit=params.candidates, **scope)}
    if sparse is None:
        sparse = keyword_turns(user=user, query=query, tiers=tiers, params=params)
    facts = turn_facts().get(index, user_id=user_id, ids=list({**dense, **sparse}))
    if not facts:
        return []
    keys, speakers = _keys_and_speakers(facts)
    named = scoring.named_speakers(query, set(speakers))
    first = scoring.fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=None, speakers=speakers,
                               named=named, params=params)
    top = [keys[i] for i in np.argsort(-first.sum(axis=1), kind="stable")[:params.feedback_top]]
    top_vectors = list(index.get_vectors(user_id=user_id, ids=top).values())
    fb_query = scoring.feedback_query(query_vector, top_vectors, mix=params.feedback_mix)
    feedback = {hit.id: hit.score for hit in
                index.search(user_id=user_id, vector=fb_query, limit=params.candidates, **scope)}
    facts.update(turn_facts().get(index, user_id=user_id, ids=[key for key in feedback if key not in facts]))
    keys, speakers = _keys_and_speakers(facts)
    parts = scoring.fused_parts(keys=keys, dense=dense, sparse=sparse, feedback=feedback, speakers=speakers,
                               named=named, params=params)
    seq = np.fromiter((facts[key].seq for key in keys), dtype=np.int64, count=len(keys))
    pos = np.fromiter((facts[key].pos for key in keys), dtype=np.int64, count=len(keys))
    final = scoring.final_array(parts, seq, pos, params=params)
    ranked = scoring.best_first(final, seq, pos, limit)
    return _turn_items(user, [(keys[i], scoring.part_dict(parts, i), float(final[i])) for i in ranked],
                       facts, dense, sparse)


def _keys_and_speakers(facts: dict[str, TurnFact]) -> tuple[list[str], list[str]]:
    """The candidates in a fixed order, and who said each."""
    keys = list(facts)
    return keys, [facts[key].speaker for key in keys]


def _turn_items(user, ranked: list[tuple[str, dict[str, float], float]], facts: dict[str, TurnFact], dense,
                sparse) -> list[RecalledItem]:
    """(key, parts, final score) best first → items with their utterance and score breakdown."""
    seqs = sorted({facts[key].seq for key, _, _ in ranked})
    pages = {page.seq: page for page in rows.rows(DialoguePage, ("seq", "utterances", "segment", "timestamp"),
                                                   equal={"user": user.pk, "repressed": False}, among={"seq": seqs})}
    items = []
    for key, parts, final in ranked:
        page = pages.get(facts[key].seq)
        pos = facts[key].pos
        if page is None or pos >= len(page.utterances):
            continue
        utt = page.utterances[pos]
        breakdown: dict = {name: round(value, 4) for name, value in parts.items()}
        breakdown["final"] = round(final, 4)
        # The raw scores beside their standard scores: with few candidates the z-scores say little.
        breakdown["cosine"] = round(dense.get(key, 0.0), 4)
        breakdown["bm25"] = round(sparse.get(key, 0.0), 4)
        breakdown["segment_id"] = str(page.segment_id) if page.segment_id else ""
        items.append(RecalledItem(
            kind="turn", ref=key, text=f"{utt['speaker']}: {utt['text']}", score=final,
            timestamp=page.timestamp, source_ids=(utt["id"],) if utt.get("id") else (), breakdown=breakdown,
        ))
    return items
