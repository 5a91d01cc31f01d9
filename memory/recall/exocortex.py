"""The Exocortex policy (seed 002, issue 20): pages and recollections by nostalgia-weighted relevance.

Each candidate's weight is ((relevance · nostalgia) + recency) · type_weight, nostalgia = 1 − recency
(memory/engine/exocortex.py says why): relevance is the query cosine from the vector index,
clamped to [0, 1]; recency is the user's own decay curve (their two settings, normalised to the
age of their oldest page); the type weight is the memory kind's (a page is a "core" memory, a
recollection gets the slight boost). The Generative Agents product over the same candidates is
memory/recall/generative_agents.py; both share everything here but the formula, so a benchmark
compares the formulas alone.

Candidates: the user's pages in the recall's tiers (MTM, and STM for a benchmark) nearest the
query, and their stored recollections nearest it; the index has no repressed point, and the
rows are checked again (`owned`): a repressed page, a page of a repressed segment, and a
recollection with a repressed or deleted member are never recalled (a recollection quotes its
members). Recollections are made after the reply, by maintenance (memory/services/exocortex.py):
clustering costs 90–500 ms warm (scripts/bench_recollection.py), beyond a recall's budget, so a
turn's recollections are recalled from the next turn on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings

from memory.adapters import configured
from memory.engine import exocortex as exo
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, Recollection, Segment, UserMemoryState
from memory.recall import rows
from memory.recall.base import PAGE_FIELDS, Ranking, RecallContext, RecallPolicy, owned, register_policy

RECOLLECTION_FIELDS = ("id", "user_id", "text", "members", "created_at", "repressed", "prompt_similarity")
RECOLLECTION_KIND = "recollection"  # the point's kind in the index and the recalled item's kind

Weigh = Callable[..., exo.WeightBreakdown]


def decay_settings_of(user_id: int) -> exo.DecaySettings:
    """The user's decay settings (the defaults until they change them)."""
    found = UserMemoryState.objects.filter(user_id=user_id).values_list(
        "short_term_minutes", "long_term_threshold").first()
    if found is None:
        return exo.DecaySettings()
    return exo.DecaySettings(short_term_seconds=found[0] * 60.0, long_term_threshold=found[1])


def type_weights() -> exo.TypeWeights:
    weights = settings.MEMORYOS["EXOCORTEX_TYPE_WEIGHTS"]
    return exo.TypeWeights(**weights)


def oldest_page_time(user) -> datetime | None:
    """The time of the user's oldest page: the long-term span is measured from it."""
    first = rows.rows(DialoguePage, ("id", "timestamp"), equal={"user": user.pk}, order_by=("seq",), limit=1)
    return first[0].timestamp if first else None


class WeightedPolicy(RecallPolicy):
    """Candidates by the query cosine, weighed by `weigh` on the user's decay curve."""

    rank_part = "weighted pages"
    weigh: Weigh  # a staticmethod of the engine

    def rank(self, context: RecallContext, query_vector: Sequence[float], early: Any) -> Ranking:
        pages = _page_candidates(context, query_vector)
        recollections = _recollection_candidates(context, query_vector)
        oldest = oldest_page_time(context.user)
        decay = decay_settings_of(context.user.pk)
        candidates = pages + recollections
        ages = [max(0.0, (context.now - row.timestamp).total_seconds()) for row, _, _ in candidates]
        span = max([0.0, *ages, (context.now - oldest).total_seconds() if oldest else 0.0])
        recency = exo.recencies(ages, oldest_age_seconds=span, settings=decay)
        weights = type_weights()
        weighed = []
        for (row, cosine, kind), value in zip(candidates, recency.tolist(), strict=True):
            terms = self.weigh(relevance=exo.relevance_from_cosine(cosine), recency=min(1.0, max(0.0, value)),
                                     kind=kind, type_weights=weights)
            weighed.append((terms, row, cosine))
        weighed.sort(key=lambda entry: (-entry[0].weight, str(entry[1].id)))
        items = [_item(row, terms, cosine, age_seconds=(context.now - row.timestamp).total_seconds())
                 for terms, row, cosine in weighed[:context.params.top_k_pages]]
        curve = exo.decay_curve(oldest_age_seconds=span, settings=decay)
        return Ranking(items=items, trace={
            "weights": [{"id": i.ref, "kind": i.kind, "text": i.text[:160], **i.breakdown} for i in items],
            "decay": {"short_term_minutes": round(decay.short_term_seconds / 60.0, 4),
                      "long_term_threshold": decay.long_term_threshold,
                      "oldest_age_days": round(span / 86400.0, 4),
                      "short_term_threshold": round(curve.short_term_threshold, 4)},
            "candidates": {"pages": len(pages), "recollections": len(recollections)},
        })


def _candidate_limit() -> int:
    return settings.MEMORYOS["EXOCORTEX_CANDIDATES"]


def _page_candidates(context: RecallContext, query_vector: Sequence[float]) -> list[tuple[Any, float, str]]:
    hits = configured.vector_index().search(
        user_id=str(context.user.pk), vector=query_vector, limit=_candidate_limit(), kind="page",
        match_any={"tier": list(context.turn_tiers)}, fields=())
    found = owned(DialoguePage, PAGE_FIELDS, [h.id for h in hits], context.user)
    found = {key: row for key, row in found.items() if row.tier in context.turn_tiers}
    hidden = _repressed_segments(context.user, {str(row.segment_id) for row in found.values() if row.segment_id})
    return [(found[h.id], h.score, exo.CORE) for h in hits
            if h.id in found and str(found[h.id].segment_id) not in hidden]


def _repressed_segments(user, ids: set[str]) -> set[str]:
    if not ids:
        return set()
    return {str(s.id) for s in rows.rows(Segment, ("id", "repressed"), equal={"user": user.pk, "repressed": True},
                                         among={"id": sorted(ids)})}


def _recollection_candidates(context: RecallContext,
                             query_vector: Sequence[float]) -> list[tuple[Any, float, str]]:
    hits = configured.vector_index().search(user_id=str(context.user.pk), vector=query_vector,
                                            limit=_candidate_limit() // 4, kind=RECOLLECTION_KIND, fields=())
    found = owned(Recollection, RECOLLECTION_FIELDS, [h.id for h in hits], context.user)
    members = {member for row in found.values() for member in row.members}
    live = owned(DialoguePage, ("id", "user_id", "repressed", "segment_id"), members, context.user)
    hidden = _repressed_segments(context.user, {str(p.segment_id) for p in live.values() if p.segment_id})
    live = {key for key, page in live.items() if str(page.segment_id) not in hidden}
    result = []
    for hit in hits:
        row = found.get(hit.id)
        if row is None or not all(member in live for member in row.members):
            continue  # a recollection quotes its members: one repressed or deleted hides it
        row.timestamp = row.created_at
        result.append((row, hit.score, exo.RECOLLECTION))
    return result


def _item(row, terms: exo.WeightBreakdown, cosine: float, *, age_seconds: float) -> RecalledItem:
    breakdown = {name: round(value, 4) for name, value in terms.as_dict().items()}
    breakdown["cosine"] = round(cosine, 4)
    breakdown["age_days"] = round(age_seconds / 86400.0, 4)
    if terms.kind == exo.RECOLLECTION:
        return RecalledItem(kind=RECOLLECTION_KIND, ref=str(row.id), text=row.text, score=terms.weight,
                            timestamp=row.created_at, source_ids=(), breakdown=breakdown)
    breakdown["segment_id"] = str(row.segment_id) if row.segment_id else ""
    return RecalledItem(kind="mtm_page", ref=str(row.id), text=row.recall_text,
                        score=terms.weight, timestamp=row.timestamp, source_ids=tuple(row.source_ids),
                        breakdown=breakdown)


@register_policy
class ExocortexPolicy(WeightedPolicy):
    name = exo.EXOCORTEX
    title = ("The Exocortex: pages and recollections by ((relevance · nostalgia) + recency) · type weight, "
             "on the user's decay curve")
    weigh = staticmethod(exo.exocortex_weight)
