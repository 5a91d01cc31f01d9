"""Reads of long-term persona memory."""

from __future__ import annotations

from collections.abc import Sequence

from memory import components, reads
from memory.engine.traits import TRAITS_BY_KEY
from memory.engine.types import RecalledItem
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait


def _vector_items(user, query_vector: Sequence[float], *, kind: str, model, limit: int) -> list[RecalledItem]:
    hits = components.vector_index().search(user_id=str(user.pk), vector=query_vector, limit=limit, kind=kind)
    rows = {key: row for key, row in reads.by_pk(model, [h.id for h in hits],
                                                  ("user", "text", "timestamp", "source_ids")).items()
            if row.user_id == user.pk}
    item_kind = "kb_fact" if kind == "kb" else "agent_trait"
    return [
        RecalledItem(kind=item_kind, ref=hit.id, text=rows[hit.id].text, score=hit.score,
                     timestamp=rows[hit.id].timestamp, source_ids=tuple(rows[hit.id].source_ids),
                     breakdown={"similarity": round(hit.score, 4)})
        for hit in hits if hit.id in rows
    ]


# What as_text() reads of a profile.
PROFILE_FIELDS = ("name", "gender", "birth_year", "extra")


def fixed_items(*, user, sona=None) -> list[RecalledItem]:
    """What every recall carries whole: the profile, the agent's profile and the user's traits."""
    items: list[RecalledItem] = []
    profile = next(iter(reads.rows(UserProfile, PROFILE_FIELDS, f"{reads.column(UserProfile, 'user')} = %s",
                                   [user.pk], limit=1)), None)
    if profile and profile.as_text():
        items.append(RecalledItem(kind="profile", ref="profile", text=profile.as_text(), score=1.0))
    if sona is not None and sona.profile:
        items.append(RecalledItem(kind="agent_profile", ref=str(sona.id), text=f"{sona.name}: {sona.profile}",
                                  score=1.0))
    # Up to 90 rows on every recall.
    key_column, score_column = reads.column(UserTrait, "key"), reads.column(UserTrait, "score")
    traits = reads.rows(UserTrait, ("key", "score"), f"{reads.column(UserTrait, 'user')} = %s AND {score_column} > 0",
                        [user.pk], order_by=f"{score_column} DESC, {key_column}")
    for key, score in ((trait.key, trait.score) for trait in traits):
        dim = TRAITS_BY_KEY.get(key)
        if dim is None:
            continue
        items.append(RecalledItem(kind="user_trait", ref=key, text=f"{dim.name} ({dim.description}): {score:.2f}",
                                  score=score, breakdown={"score": round(score, 4)}))
    return items


def similar_items(*, user, query_vector: Sequence[float], kb_limit: int = 10,
                  trait_limit: int = 10) -> list[RecalledItem]:
    """KB facts and agent traits nearest to the query."""
    return (_vector_items(user, query_vector, kind="kb", model=KnowledgeFact, limit=kb_limit)
            + _vector_items(user, query_vector, kind="agent_trait", model=AgentTrait, limit=trait_limit))

