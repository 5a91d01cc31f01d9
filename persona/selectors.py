"""Reads of the user's static profile for the pages that show and edit it. (What every recall
reads of long-term persona memory is memory/recall/long_term.py.)"""

from __future__ import annotations

from memory.engine.traits import TRAIT_CATALOGUE
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait


def profile_exists(*, user) -> bool:
    """Whether the person has answered (or skipped) the first-visit profile question."""
    return UserProfile.objects.filter(user=user).exists()


def profile_initial(*, user) -> dict:
    """The profile form's initial values."""
    profile = UserProfile.objects.filter(user=user).first()
    if profile is None:
        return {}
    return {"name": profile.name, "gender": profile.gender, "birth_year": profile.birth_year}


def profile_get(*, user) -> UserProfile:
    """The profile, or an empty one (unsaved) when none was given."""
    return UserProfile.objects.filter(user=user).first() or UserProfile(user=user)


def traits_scored(*, user) -> list[dict]:
    """All the trait dimensions with the user's score, flags and evidence (0 and none when unscored)."""
    stored = {t.key: t for t in UserTrait.objects.filter(user=user)}
    rows = []
    for dimension in TRAIT_CATALOGUE:
        trait = stored.get(dimension.key)
        rows.append({"key": dimension.key, "name": dimension.name, "category": dimension.category,
                     "description": dimension.description, "score": trait.score if trait else 0.0,
                     "pinned": bool(trait and trait.pinned), "repressed": bool(trait and trait.repressed),
                     "evidence": list(trait.evidence) if trait else []})
    return rows


def knowledge_base(*, user):
    return KnowledgeFact.objects.filter(user=user).order_by("-created_at")


def agent_traits(*, user):
    return AgentTrait.objects.filter(user=user).order_by("-created_at")
