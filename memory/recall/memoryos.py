"""The MemoryOS paper's two-stage retrieval over mid-term memory (policy "memoryos").

Stage one: the top-m segments by Fscore = cos(e_s, e_q) + Jaccard(K_s, K_q) among the vector
index's nearest segments. Stage two: the top-k pages inside them by similarity to the query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.adapters import configured
from memory.engine.heat import heat_breakdown
from memory.engine.mid_term import SegmentScore
from memory.engine.retrieval import top_segments
from memory.engine.similarity import jaccard
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, Segment, Tier
from memory.recall.base import (
    PAGE_FIELDS,
    SEGMENT_FIELDS,
    Ranking,
    RecallContext,
    RecallPolicy,
    owned,
    register_policy,
)


@register_policy
class MemoryOSPolicy(RecallPolicy):
    name = "memoryos"
    title = "The MemoryOS paper: the top-m segments by Fscore, then the top-k pages inside them by similarity"
    rank_part = "segments, then pages"

    def rank(self, context: RecallContext, query_vector: Sequence[float], early: Any) -> Ranking:
        chosen, rows, considered = segment_stage(context, query_vector)
        items = page_stage(context, query_vector, chosen)
        return Ranking(items=items, visited=chosen, segment_rows=rows, considered=considered,
                       trace={"pages": [{"id": item.ref, **item.breakdown} for item in items]})


def segment_stage(context: RecallContext, query_vector: Sequence[float]) -> tuple[list[SegmentScore], dict, list]:
    user, params = context.user, context.params
    hits = configured.vector_index().search(user_id=str(user.pk), vector=query_vector,
                                            limit=params.segment_candidates, kind="segment")
    cos_by_id = {hit.id: hit.score for hit in hits}
    rows = owned(Segment, SEGMENT_FIELDS, cos_by_id, user, status=Segment.Status.ACTIVE)
    scores = [SegmentScore(segment_id=sid, cos=cos_by_id[sid],
                           jaccard=jaccard(context.query_keywords, frozenset(rows[sid].keywords)))
              for sid in cos_by_id if sid in rows]
    chosen = top_segments(scores, top_m=params.top_m_segments)
    considered = [
        {"id": s.segment_id, "cos": round(s.cos, 4), "jaccard": round(s.jaccard, 4),
         "fscore": round(s.fscore, 4), "chosen": s in chosen,
         "summary": rows[s.segment_id].summary[:200],
         "heat_before": round(heat_breakdown(rows[s.segment_id].to_engine(with_embedding=False), now=context.now,
                                              params=params)["heat"], 4)}
        for s in sorted(scores, key=lambda s: -s.fscore)
    ]
    return chosen, rows, considered


def page_stage(context: RecallContext, query_vector: Sequence[float],
               chosen: list[SegmentScore]) -> list[RecalledItem]:
    if not chosen:
        return []
    user = context.user
    fscore_by_id = {s.segment_id: s for s in chosen}
    hits = configured.vector_index().search(
        user_id=str(user.pk), vector=query_vector, limit=context.params.top_k_pages, kind="page",
        match={"tier": Tier.MTM}, match_any={"segment_id": list(fscore_by_id)},
    )
    pages = owned(DialoguePage, PAGE_FIELDS, [h.id for h in hits], user, tier=Tier.MTM)
    items = []
    for hit in hits:
        page = pages.get(hit.id)
        if page is None:  # the index lags the database for a moment after a move
            continue
        seg = fscore_by_id.get(str(page.segment_id))
        items.append(RecalledItem(
            kind="mtm_page", ref=hit.id, text=page.recall_text,
            score=hit.score, timestamp=page.timestamp, source_ids=tuple(page.source_ids),
            breakdown={"similarity": round(hit.score, 4),
                       "segment_fscore": round(seg.fscore, 4) if seg else 0.0,
                       "segment_cos": round(seg.cos, 4) if seg else 0.0,
                       "segment_jaccard": round(seg.jaccard, 4) if seg else 0.0,
                       "segment_id": str(page.segment_id)},
        ))
    return items
