"""The Exocortex policy (seed 002, issue 20): memories by nostalgia-weighted relevance.

Each candidate's weight is ((relevance · nostalgia) + recency) · type_weight, nostalgia = 1 − recency
(memory/policies/exocortex/engine/decay.py says why). Relevance comes from the shared relevance core
(memory/recall/relevance.py): the candidates are the utterances it ranks best, each with its score
scaled onto [0, 1] among them (min-max), so the formula weighs the project's best notion of what
matches rather than a bare cosine. Recency is the user's own decay curve (their two settings,
normalised to the age of their oldest page); the type weight is the memory kind's (an utterance is
a "core" memory, a recollection gets the slight boost). The Generative Agents product over the
same candidates is the second policy here (GenerativeAgentsPolicy, below); both share everything
but the formula, so a benchmark compares the formulas alone.

Recollections are candidates too, as relevant as their most relevant member page on the same
scale. The index has no repressed point, and rows are checked again: a repressed page, a page of a
repressed segment, and a recollection with a repressed or deleted member are never recalled (a
recollection quotes its members). Recollections are made after the reply, by maintenance
(memory/policies/exocortex/services.py): clustering costs 90–500 ms warm (scripts/bench_recollection.py),
beyond a recall's budget, so a turn's recollections are recalled from the next turn on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from memory.adapters import configured
from memory.engine.relevance import TurnRelevance, min_max
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, Recollection, Segment, UserMemoryState
from memory.policies.exocortex.engine import decay as exo
from memory.recall import rows
from memory.recall.base import ItemExplanation, Ranking, RecallContext, RecallPolicy, owned, register_policy
from memory.recall.relevance import keyword_turns, turn_items, turn_relevance

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


@dataclass(frozen=True)
class _Turn:
    """An utterance candidate: its index among the relevance core's candidates, and when it was said."""

    id: str
    index: int
    timestamp: datetime
    tiebreak: float  # its relevance before scaling: equal weights go to the better match


class WeightedPolicy(RecallPolicy):
    """Utterances by the relevance core, and recollections, weighed by `weigh` on the user's decay curve."""

    rank_part = "weighted memories"
    early_part = "keyword search"
    weigh: Weigh  # a staticmethod of the engine
    # The recency that leaves relevance alone in `weigh` (the ablation without decay): 0 in a sum, 1 in a product.
    neutral_recency = 0.0
    makes_recollections = True  # its turns are recollected after the reply, by maintenance
    item_kinds = {RECOLLECTION_KIND: (
        "Recollections (earlier memories summarised together)",
        "A recollection: memories of yours that belong together, summarised after an earlier turn.")}
    score_help = {
        "decay recency": "Exocortex recency on your own decay curve (profile page): 1 now, falling exponentially "
                         "over your short-term duration, then slowly to your long-term threshold at your oldest "
                         "memory.",
        "nostalgia": "1 − recency: how much of an older memory's relevance the Exocortex weight lets through.",
        "type weight": "The weight of this kind of memory (recollections slightly more than pages).",
        "weight": "The ranking score: (relevance · nostalgia + recency) · type weight for the Exocortex, "
                  "relevance · recency · type weight for Generative Agents.",
    }

    def search_early(self, context: RecallContext) -> dict[str, float]:
        return keyword_turns(user=context.user, query=context.query, tiers=context.turn_tiers)

    def explain_item(self, kind: str, ref: str, payload: dict[str, Any]) -> ItemExplanation | None:
        return _explain_weighed(ref, payload)

    def rank(self, context: RecallContext, query_vector: Sequence[float], early: Any) -> Ranking:
        found = turn_relevance(user=context.user, query=context.query, query_vector=query_vector, now=context.now,
                               tiers=context.turn_tiers, sparse=early, facts=context.facts)
        turns, scale = _turn_candidates(found)
        recollections = _recollection_candidates(context, query_vector, found, scale)
        oldest = oldest_page_time(context.user)
        decay = decay_settings_of(context.user.pk)
        candidates = turns + recollections
        ages = [max(0.0, (context.now - row.timestamp).total_seconds()) for row, _, _ in candidates]
        span = max([0.0, *ages, (context.now - oldest).total_seconds() if oldest else 0.0])
        recency = exo.recencies(ages, oldest_age_seconds=span, settings=decay)
        weights = type_weights()
        weighed = []
        for (row, relevance, kind), value in zip(candidates, recency.tolist(), strict=True):
            terms = self.weigh(relevance=relevance,
                               recency=min(1.0, max(0.0, value)) if DECAY else self.neutral_recency,
                               kind=kind, type_weights=weights)
            weighed.append((terms, row))
        # Equal weights (several recollections share their best member) go to the better raw match,
        # then to the id, so that the same memory in another store (an import) ranks the same.
        weighed.sort(key=lambda entry: (-entry[0].weight, -entry[1].tiebreak, str(entry[1].id)))
        items = _items(context, found, weighed[:context.params.top_k_pages])
        curve = exo.decay_curve(oldest_age_seconds=span, settings=decay)
        return Ranking(items=items, trace={
            "weights": [{"id": i.ref, "kind": i.kind, "text": i.text[:160], **i.breakdown} for i in items],
            # the utterances as the hybrid policy's trace shows them (the recall panel reads both)
            "turns": [{"id": i.ref, "text": i.text[:160], "segment_id": i.breakdown.get("segment_id", ""),
                       "said_at": i.timestamp.isoformat() if i.timestamp else ""} for i in items if i.kind == "turn"],
            "decay": {"short_term_minutes": round(decay.short_term_seconds / 60.0, 4),
                      "long_term_threshold": decay.long_term_threshold,
                      "oldest_age_days": round(span / 86400.0, 4),
                      "short_term_threshold": round(curve.short_term_threshold, 4)},
            "candidates": {"turns": len(turns), "recollections": len(recollections)},
        })


# Switched off only by an ablation (bench retrieval --ablate): recency 0 leaves relevance alone.
DECAY = True


def _candidate_limit() -> int:
    return settings.MEMORYOS["EXOCORTEX_CANDIDATES"]


def _turn_candidates(found: TurnRelevance) -> tuple[list[tuple[_Turn, float, str]], Callable[[float], float]]:
    """The utterances the relevance core ranks best, each with its relevance on [0, 1] (min-max
    among them), and that scale, for the recollections to share."""
    best = found.ranked(_candidate_limit(), diverse=False)
    scores = [float(found.final[index]) for index in best]
    scale = min_max(scores)
    return [(_Turn(id=found.keys[index], index=index,
                   timestamp=datetime.fromtimestamp(found.facts[found.keys[index]].timestamp, tz=UTC),
                   tiebreak=score),
             scale(score), exo.CORE) for index, score in zip(best, scores, strict=True)], scale


def _items(context: RecallContext, found: TurnRelevance, weighed: list) -> list[RecalledItem]:
    """The weighed memories as items, best first: utterances read through the relevance core
    (their pages' rows, so a repressed page is never shown), recollections as they are."""
    said = {item.ref: item for item in
            turn_items(context.user, found, [row.index for _, row in weighed if isinstance(row, _Turn)])}
    items = []
    for terms, row in weighed:
        breakdown = {name: round(value, 4) for name, value in terms.as_dict().items()}
        age_days = round((context.now - row.timestamp).total_seconds() / 86400.0, 4)
        if isinstance(row, _Turn):
            turn = said.get(row.id)
            if turn is None:
                continue
            breakdown.update(age_days=age_days, final=turn.breakdown["final"],
                             segment_id=turn.breakdown.get("segment_id", ""))
            items.append(replace(turn, score=terms.weight, breakdown=breakdown))
        else:
            breakdown["age_days"] = age_days
            items.append(RecalledItem(kind=RECOLLECTION_KIND, ref=str(row.id), text=row.text, score=terms.weight,
                                      timestamp=row.created_at, source_ids=(), breakdown=breakdown))
    return items


def _repressed_segments(user, ids: set[str]) -> set[str]:
    if not ids:
        return set()
    return {str(s.id) for s in rows.rows(Segment, ("id", "repressed"), equal={"user": user.pk, "repressed": True},
                                         among={"id": sorted(ids)})}


def _recollection_candidates(context: RecallContext, query_vector: Sequence[float], relevance: TurnRelevance,
                             scale: Callable[[float], float]) -> list[tuple[Any, float, str]]:
    """The stored recollections nearest the query. A recollection is as relevant as its most
    relevant member, on the utterances' scale (a cosine to its summary would be another scale,
    and one a summary written offline does not earn)."""
    hits = configured.vector_index().search(user_id=str(context.user.pk), vector=query_vector,
                                            limit=_candidate_limit() // 4, kind=RECOLLECTION_KIND, fields=())
    found = owned(Recollection, RECOLLECTION_FIELDS, [h.id for h in hits], context.user)
    members = {member for row in found.values() for member in row.members}
    pages = owned(DialoguePage, ("id", "user_id", "repressed", "segment_id", "seq"), members, context.user)
    hidden = _repressed_segments(context.user, {str(p.segment_id) for p in pages.values() if p.segment_id})
    live = {key for key, page in pages.items() if str(page.segment_id) not in hidden}
    page_relevance = {seq: scale(score) for seq, score in relevance.page_scores().items()}
    result = []
    for hit in hits:
        row = found.get(hit.id)
        if row is None or not all(member in live for member in row.members):
            continue  # a recollection quotes its members: one repressed or deleted hides it
        row.timestamp = row.created_at
        row.tiebreak = hit.score  # the recollection's own cosine to the query
        best = max(page_relevance.get(pages[member].seq, 0.0) for member in row.members) if row.members else 0.0
        result.append((row, best, exo.RECOLLECTION))
    return result


# A weighed item's terms as the recall panel labels them.
WEIGHT_LABELS = (("relevance", "relevance"), ("decay recency", "recency"), ("nostalgia", "nostalgia"),
                 ("type weight", "type_weight"), ("weight", "weight"))


def _explain_weighed(ref: str, payload: dict[str, Any]) -> ItemExplanation | None:
    """An item the formula weighed: its terms replace the scores the shared reading shows."""
    terms = {str(entry.get("id")): entry for entry in payload.get("weights", [])}.get(ref)
    if terms is None:
        return None
    return ItemExplanation(scores=[(label, float(terms[key])) for label, key in WEIGHT_LABELS if key in terms])


@register_policy
class ExocortexPolicy(WeightedPolicy):
    name = exo.EXOCORTEX
    title = ("The Exocortex: pages and recollections by ((relevance · nostalgia) + recency) · type weight, "
             "on the user's decay curve")
    weigh = staticmethod(exo.exocortex_weight)


@register_policy
class GenerativeAgentsPolicy(WeightedPolicy):
    """Generative Agents (Park et al. 2023) as seed 002 states it: relevance · recency · type weight over
    the Exocortex's candidates, with the same relevance and the same recency (the user's decay curve:
    the paper's 0.995-per-hour decay since last access would change the curve too, and then the
    comparison would not say which change mattered). A low recency drags a high relevance down here,
    which is what the Exocortex's nostalgia term was made to prevent."""

    name = exo.GENERATIVE_AGENTS
    title = "Generative Agents: pages and recollections by relevance · recency · type weight (the product)"
    weigh = staticmethod(exo.generative_agents_weight)
    neutral_recency = 1.0  # a product: recency 1 leaves relevance · type weight
