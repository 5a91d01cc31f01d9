"""The MemoryOS paper's two-stage retrieval over mid-term memory (policy "memoryos").

Stage one: the top-m segments by Fscore = relevance + Jaccard(K_s, K_q), where a segment's
relevance is that of the best page it holds by the shared relevance core (memory/recall/
relevance.py), normalised to [0, 1] in place of the paper's cos(e_s, e_q): offline, a segment's
summary is extractive and loses the single line a question points at, and the paper's cosine to
it discarded the evidence before stage two could see it. Stage two: the top-k pages inside the
chosen segments by the same relevance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memory.engine.heat import heat_breakdown
from memory.engine.mid_term import SegmentScore
from memory.engine.relevance import TurnRelevance
from memory.engine.retrieval import top_segments
from memory.engine.similarity import jaccard
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, Segment, Tier
from memory.recall import rows
from memory.recall.base import (
    PAGE_FIELDS,
    PAGE_KEY_FIELDS,
    SEGMENT_FIELDS,
    Ranking,
    RecallContext,
    RecallPolicy,
    owned,
    register_policy,
)
from memory.recall.relevance import keyword_turns, turn_relevance


@register_policy
class MemoryOSPolicy(RecallPolicy):
    name = "memoryos"
    title = ("The MemoryOS paper: the top-m segments by Fscore (the relevance of what they hold + keyword "
             "Jaccard), then the top-k pages inside them by relevance")
    rank_part = "segments, then pages"
    early_part = "keyword search"

    def search_early(self, context: RecallContext) -> dict[str, float]:
        return keyword_turns(user=context.user, query=context.query, tiers=context.turn_tiers)

    def rank(self, context: RecallContext, query_vector: Sequence[float], early: Any) -> Ranking:
        found = turn_relevance(user=context.user, query=context.query, query_vector=query_vector, now=context.now,
                               tiers=context.turn_tiers, sparse=early, facts=context.facts)
        pages = _candidate_pages(context, found)
        chosen, rows, considered = segment_stage(context, found, pages)
        items = page_stage(context, found, pages, chosen)
        return Ranking(items=items, visited=chosen, segment_rows=rows, considered=considered,
                       trace={"pages": [{"id": item.ref, **item.breakdown} for item in items]})


def _candidate_pages(context: RecallContext, found: TurnRelevance) -> dict[int, tuple[Any, float]]:
    """Page seq -> (page row, relevance: the best score among its turns), for the pages the
    relevance core found, in the recall's tiers."""
    scores = found.page_scores()
    scores = {seq: scores[seq] for seq in sorted(scores, key=lambda seq: (-scores[seq], seq))[:CANDIDATE_PAGES]}
    pages = rows.rows(DialoguePage, PAGE_KEY_FIELDS, equal={"user": context.user.pk, "repressed": False},
                      among={"seq": sorted(scores)})
    return {page.seq: (page, scores[page.seq]) for page in pages if page.tier in context.turn_tiers}


def segment_stage(context: RecallContext, found: TurnRelevance, pages: dict[int, tuple[Any, float]]
                  ) -> tuple[list[SegmentScore], dict, list]:
    """Stage one: segments by Fscore = relevance + Jaccard(K_s, K_q). A segment is represented by
    what it holds: its relevance is that of its best page (normalised to [0, 1]), so a segment
    whose summary lost the one line a question points at is still found by that line."""
    user, params = context.user, context.params
    best: dict[str, float] = {}
    for page, score in pages.values():
        if page.segment_id is not None:
            sid = str(page.segment_id)
            best[sid] = max(score, best.get(sid, -np.inf))
    segment_rows = owned(Segment, SEGMENT_FIELDS, list(best), user, status=Segment.Status.ACTIVE)
    relevance = found.normalised({sid: score for sid, score in best.items() if sid in segment_rows})
    scores = [SegmentScore(segment_id=sid, cos=relevance[sid],
                           jaccard=(jaccard(context.query_keywords, frozenset(segment_rows[sid].keywords))
                                    if KEYWORD_JACCARD else 0.0))
              for sid in best if sid in segment_rows]
    chosen = top_segments(scores, top_m=params.top_m_segments) if SEGMENTS_FIRST else scores
    considered = [
        {"id": s.segment_id, "relevance": round(s.cos, 4), "jaccard": round(s.jaccard, 4),
         "fscore": round(s.fscore, 4), "chosen": s in chosen,
         "summary": segment_rows[s.segment_id].summary[:200],
         "heat_before": round(heat_breakdown(segment_rows[s.segment_id].to_engine(with_embedding=False),
                                             now=context.now, params=params)["heat"], 4)}
        for s in sorted(scores, key=lambda s: -s.fscore)[:max(2 * params.top_m_segments, 10)]
    ]
    return chosen, segment_rows, considered


def page_stage(context: RecallContext, found: TurnRelevance, pages: dict[int, tuple[Any, float]],
               chosen: list[SegmentScore]) -> list[RecalledItem]:
    """Stage two: the top-k pages inside the chosen segments by relevance (and, when the recall
    ranks STM too, STM's pages, which belong to no segment yet)."""
    by_id = {s.segment_id: s for s in chosen}
    inside = [(page, score) for page, score in pages.values()
              if str(page.segment_id) in by_id or (page.segment_id is None and page.tier == Tier.STM)]
    inside.sort(key=lambda entry: (-entry[1], entry[0].seq))
    top = inside[:context.params.top_k_pages]
    full = {page.seq: page for page in rows.rows(DialoguePage, PAGE_FIELDS, equal={"user": context.user.pk},
                                                 among={"seq": [page.seq for page, _ in top]})}
    items = []
    for key_page, score in top:
        page = full.get(key_page.seq)
        if page is None:  # deleted since the candidates were read
            continue
        seg = by_id.get(str(page.segment_id))
        items.append(RecalledItem(
            kind="mtm_page", ref=str(page.id), text=page.recall_text,
            score=score, timestamp=page.timestamp, source_ids=tuple(page.source_ids),
            breakdown={"relevance": round(score, 4),
                       "segment_fscore": round(seg.fscore, 4) if seg else 0.0,
                       "segment_relevance": round(seg.cos, 4) if seg else 0.0,
                       "segment_jaccard": round(seg.jaccard, 4) if seg else 0.0,
                       "segment_id": str(page.segment_id or "")},
        ))
    return items


# Pages whose segments stage one considers: the best by relevance. (The paper's stage one takes the
# vector index's 20 nearest segments; the segments of the best 150 pages are several times that.)
CANDIDATE_PAGES = 150
# The paper's first stage and its keyword term; switched off only by an ablation (bench retrieval --ablate).
SEGMENTS_FIRST = True
KEYWORD_JACCARD = True
