"""The long-term part every recall carries, whatever its policy: the profile, the agent's profile
and the user's traits whole, and the KB facts and agent traits nearest to the query."""

from __future__ import annotations

from collections.abc import Sequence

from memory.engine.supersession import superseded_text
from memory.engine.traits import TRAITS_BY_KEY
from memory.engine.types import RecalledItem
from memory.recall import rows
from memory.recall.candidates import nearest
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

# A superseded fact still answers questions about the past, but ranks after every current one and
# its similarity counts half (the relevance core lifts its source turns less).
SUPERSEDED_WEIGHT = 0.5


def _vector_items(user, query_vector: Sequence[float], *, kind: str, model, limit: int) -> list[RecalledItem]:
    hits = nearest(user, query_vector, kind=kind, limit=limit)
    found = {key: row for key, row in rows.by_pk(model, [h.id for h in hits],
                                                  ("user", "text", "timestamp", "source_ids", "source_page_ids",
                                                   "repressed", "valid_until", "superseded_by")).items()
            if row.user_id == user.pk and not row.repressed}
    item_kind = "kb_fact" if kind == "kb" else "agent_trait"
    successors = {str(row.superseded_by) for row in found.values() if row.superseded_by is not None}
    newer = {key: row.text for key, row in rows.by_pk(model, successors, ("user", "text")).items()
             if row.user_id == user.pk} if successors else {}
    items = [_item(item_kind, hit.id, hit.score, found[hit.id], newer) for hit in hits if hit.id in found]
    # Current first (each part keeps the index's order): "until March 2025" is history.
    return [i for i in items if "superseded" not in i.breakdown] + [i for i in items if "superseded" in i.breakdown]


def _item(kind: str, ref: str, similarity: float, row, newer: dict[str, str]) -> RecalledItem:
    """A fact as recall shows it; a superseded one marked with its period ("until March 2025") and
    what took its place."""
    text, score = row.text, similarity
    breakdown = {"similarity": round(similarity, 4)}
    if row.valid_until is not None:
        text = superseded_text(row.text, row.valid_until, newer.get(str(row.superseded_by), ""))
        score = similarity * SUPERSEDED_WEIGHT
        breakdown.update(superseded=SUPERSEDED_WEIGHT, until=row.valid_until.timestamp())
    return RecalledItem(kind=kind, ref=ref, text=text, score=score, timestamp=row.timestamp,
                        source_ids=tuple(row.source_ids),
                        source_page_ids=tuple(str(page) for page in row.source_page_ids or ()), breakdown=breakdown)


# What as_text() reads of a profile.
PROFILE_FIELDS = ("name", "gender", "birth_year", "extra")


def fixed_items(*, user, sona=None) -> list[RecalledItem]:
    """What every recall carries whole: the profile, the agent's profile and the user's traits."""
    items: list[RecalledItem] = []
    # The profile and the traits in one statement: a user has at most one row per trait dimension
    # (90), so the profile's columns repeat at most 90 times. Traits at 0 say nothing.
    profile, traits = rows.row_and_values(UserProfile, PROFILE_FIELDS, pk=user.pk, many=UserTrait,
                                          many_fields=("key", "score"), equal={"user": user.pk, "repressed": False},
                                          order_by=("-score", "key"))
    if profile and profile.as_text():
        items.append(RecalledItem(kind="profile", ref="profile", text=profile.as_text(), score=1.0))
    if sona is not None and sona.profile:
        items.append(RecalledItem(kind="agent_profile", ref=str(sona.id), text=f"{sona.name}: {sona.profile}",
                                  score=1.0))
    for key, score in traits:
        dim = TRAITS_BY_KEY.get(key)
        if dim is None or score <= 0:
            continue
        items.append(RecalledItem(kind="user_trait", ref=key, text=f"{dim.name} ({dim.description}): {score:.2f}",
                                  score=score, breakdown={"score": round(score, 4)}))
    return items


def similar_items(*, user, query_vector: Sequence[float], kb_limit: int = 10,
                  trait_limit: int = 10) -> list[RecalledItem]:
    """KB facts and agent traits nearest to the query."""
    return (_vector_items(user, query_vector, kind="kb", model=KnowledgeFact, limit=kb_limit)
            + _vector_items(user, query_vector, kind="agent_trait", model=AgentTrait, limit=trait_limit))

