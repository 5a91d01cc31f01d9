"""The hybrid policy (the default): the relevance core's utterances, ranked directly.

Every utterance is indexed on its own (memory/services/utterances.py). The shared relevance core
(memory/engine/relevance.py, run over the user's turns by memory/recall/relevance.py) scores
them: dense + BM25 fusion, pseudo-relevance feedback, a second hop, smoothing along the
conversation, the speaker and time boosts. This policy takes its best turns as they are; the
segments of the top utterances count as visited, so heat and promotion work as in the paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.utils import timezone

from memory.engine import hybrid_scoring as scoring
from memory.engine.mid_term import SegmentScore
from memory.engine.similarity import jaccard
from memory.engine.types import RecalledItem
from memory.models import Segment, Tier
from memory.recall.base import SEGMENT_FIELDS, Ranking, RecallContext, RecallPolicy, owned, register_policy
from memory.recall.relevance import keyword_turns, turn_items, turn_relevance


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
        items = recall_turns(user=context.user, query=context.query, query_vector=query_vector, now=context.now,
                             limit=settings.MEMORYOS["TOP_K_TURNS"], tiers=context.turn_tiers, sparse=early,
                             facts=context.facts)
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


def recall_turns(*, user, query: str, query_vector: Sequence[float], limit: int, now=None,
                 tiers: Sequence[str] = (Tier.MTM,), params: scoring.HybridParams | None = None,
                 sparse: dict[str, float] | None = None, facts: Sequence[RecalledItem] = ()) -> list[RecalledItem]:
    """The best utterances by the relevance core, spread over sessions, each with its breakdown.
    `sparse` is the query's keyword_turns when the caller has it already."""
    found = turn_relevance(user=user, query=query, query_vector=query_vector, now=now or timezone.now(),
                           tiers=tiers, sparse=sparse, facts=facts, params=params)
    return turn_items(user, found, found.ranked(limit))
