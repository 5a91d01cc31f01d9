"""REST routes over long-term memory: the profile, the 90 traits with their evidence, the
knowledge base and the agent traits. Lists are paginated; `?user=NAME` acts for another user."""

from typing import Any

from ninja import Router
from ninja.pagination import paginate

from memory.selectors.long_term import agent_traits, knowledge_base, profile_get, traits_scored
from memory.services.long_term import KEEP, profile_update
from memory.web.api_auth import caller_of
from memory.web.api_memories import ERRORS
from memory.web.pagination import Pages, Projected
from memory.web.schemas import EntryOut, ProfileIn, ProfileOut, TraitOut

router = Router(tags=["long-term memory"])


def _profile(profile) -> dict[str, Any]:
    return {"name": profile.name, "gender": profile.gender, "birth_year": profile.birth_year,
            "extra": dict(profile.extra), "since": dict(profile.since), "history": list(profile.history)}


def _entry(row) -> dict[str, Any]:
    until = row.valid_until
    return {"id": str(row.id), "text": row.text, "timestamp": row.timestamp, "cid": row.cid,
            "segment_id": str(row.segment_id) if row.segment_id else None, "version": row.version,
            "source_page_ids": list(row.source_page_ids), "pinned": row.pinned, "repressed": row.repressed,
            "valid_from": row.valid_from, "valid_until": until,
            "superseded_by": str(row.superseded_by) if row.superseded_by else None,
            "period": f"until {until:%B %Y}; superseded" if until is not None else ""}


@router.get("/profile", response={200: ProfileOut, **ERRORS})
def get_profile(request, user: str | None = None):
    return _profile(profile_get(user=caller_of(request, user).user))


@router.put("/profile", response={200: ProfileOut, **ERRORS})
def put_profile(request, payload: ProfileIn, user: str | None = None):
    """Change the fields given (an empty string clears one; birth_year null clears it)."""
    caller = caller_of(request, user)
    fields = payload.dict(exclude_unset=True)
    profile = profile_update(user=caller.user, name=fields.get("name"), gender=fields.get("gender"),
                             birth_year=fields["birth_year"] if "birth_year" in fields else KEEP)
    return _profile(profile)


@router.get("/traits", response={200: list[TraitOut], **ERRORS})
@paginate(Pages)
def list_traits(request, user: str | None = None):
    return traits_scored(user=caller_of(request, user).user)


@router.get("/kb", response={200: list[EntryOut], **ERRORS})
@paginate(Pages)
def list_facts(request, user: str | None = None):
    return Projected(knowledge_base(user=caller_of(request, user).user), _entry)


@router.get("/agent-traits", response={200: list[EntryOut], **ERRORS})
@paginate(Pages)
def list_agent_traits(request, user: str | None = None):
    return Projected(agent_traits(user=caller_of(request, user).user), _entry)
