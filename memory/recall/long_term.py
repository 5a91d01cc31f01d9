"""The long-term part every recall carries, whatever its policy: the profile, the agent's profile
and the user's traits whole, and the KB facts and agent traits nearest to the query."""

from __future__ import annotations

from collections.abc import Sequence

from memory.adapters import configured
from memory.engine.traits import TRAITS_BY_KEY
from memory.engine.types import RecalledItem
from memory.recall import rows
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait


def _vector_items(user, query_vector: Sequence[float], *, kind: str, model, limit: int) -> list[RecalledItem]:
    hits = configured.vector_index().search(user_id=str(user.pk), vector=query_vector, limit=limit, kind=kind)
    found = {key: row for key, row in rows.by_pk(model, [h.id for h in hits],
                                                  ("user", "text", "timestamp", "source_ids", "source_page_ids",
                                                   "repressed")).items()
            if row.user_id == user.pk and not row.repressed}
    item_kind = "kb_fact" if kind == "kb" else "agent_trait"
    return [
        RecalledItem(kind=item_kind, ref=hit.id, text=found[hit.id].text, score=hit.score,
                     timestamp=found[hit.id].timestamp, source_ids=tuple(found[hit.id].source_ids),
                     source_page_ids=tuple(str(page) for page in found[hit.id].source_page_ids or ()),
                     breakdown={"similarity": round(hit.score, 4)})
        for hit in hits if hit.id in found
    ]


# What as_text() reads of a profile.
PROFILE_FIELDS = ("name", "gender", "birth_year", "extra")


def fixed_items(*, user, sona=None) -> list[RecalledItem]:
    """What every recall carries whole: the profile, the agent's profile and the user's traits."""
    items: list[RecalledItem] = []
    profile = next(iter(rows.rows(UserProfile, PROFILE_FIELDS, equal={"user": user.pk}, limit=1)), None)
    if profile and profile.as_text():
        items.append(RecalledItem(kind="profile", ref="profile", text=profile.as_text(), score=1.0))
    if sona is not None and sona.profile:
        items.append(RecalledItem(kind="agent_profile", ref=str(sona.id), text=f"{sona.name}: {sona.profile}",
                                  score=1.0))
    # A user has at most one row per trait dimension (90); those at 0 say nothing.
    for trait in rows.rows(UserTrait, ("key", "score"), equal={"user": user.pk, "repressed": False},
                           order_by=("-score", "key")):
        key, score, dim = trait.key, trait.score, TRAITS_BY_KEY.get(trait.key)
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

