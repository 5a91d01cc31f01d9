"""REST routes for sonas (the assistant's voices): list them with their memory counts, create one,
rename one (its name is embedded again: sona similarity compares names), and list the memories that
belong to one, each with how it joined. Handlers parse, call one service or selector, return;
`?user=NAME` acts for another user (staff, audited)."""

from typing import Any

from ninja import Router
from ninja.pagination import paginate

from memory.selectors.provenance import node_labels
from memory.selectors.sonas import sona_counts, sona_memberships, sona_named
from memory.services.users import sona_create, sona_rename
from memory.web.api import ERRORS
from memory.web.api_auth import ApiError, caller_of
from memory.web.pagination import Pages, Projected
from memory.web.schemas import SonaIn, SonaMemoryOut, SonaOut, SonaRenameIn

router = Router(tags=["sonas"])


def sona_out(sona, memories: int) -> dict[str, Any]:
    return {"id": str(sona.id), "name": sona.name, "profile": sona.profile, "recall_policy": sona.recall_policy,
            "is_default": sona.is_default, "memories": memories, "created_at": sona.created_at}


def sona_or_404(user, name: str):
    """The user's sona by name; a 404 for a name they have none of (a lookup never makes one)."""
    sona = sona_named(user=user, name=name)
    if sona is None:
        raise ApiError(404, "not_found", f"Unknown sona {name.strip()!r}.")
    return sona


@router.get("/sonas", response={200: list[SonaOut], **ERRORS})
def list_sonas(request, user: str | None = None):
    """The user's sonas, oldest first, each with the number of memories that belong to it."""
    return [sona_out(sona, count) for sona, count in sona_counts(user=caller_of(request, user).user)]


@router.post("/sonas", response={200: SonaOut, **ERRORS})
def create_sona(request, payload: SonaIn, user: str | None = None):
    """A new sona; a name the user already has (case aside) is refused, as is an unknown policy."""
    caller = caller_of(request, user)
    sona = sona_create(user=caller.user, name=payload.name, profile=payload.profile,
                       recall_policy=payload.recall_policy)
    return sona_out(sona, 0)


@router.patch("/sonas/{name}", response={200: SonaOut, **ERRORS})
def rename_sona(request, name: str, payload: SonaRenameIn, user: str | None = None):
    """Rename a sona; its memories stay with it, and its name is embedded again."""
    caller = caller_of(request, user)
    sona = sona_rename(user=caller.user, sona=sona_or_404(caller.user, name), name=payload.name)
    return sona_out(sona, sona_memberships(user=caller.user, sona=sona).count())


@router.get("/sonas/{name}/memories", response={200: list[SonaMemoryOut], **ERRORS})
@paginate(Pages)
def sona_memories(request, name: str, user: str | None = None):
    """The memories that belong to a sona, newest first, with how each joined it."""
    caller = caller_of(request, user)
    rows = sona_memberships(user=caller.user, sona=sona_or_404(caller.user, name))
    return Projected(rows, convert_page=lambda page: _memories_out(caller.user, page))


def _memories_out(user, memberships: list) -> list[dict[str, Any]]:
    labels = node_labels(user=user, nodes=[m.node for m in memberships])  # one query per kind of memory
    return [{"cid": m.node.cid, "kind": m.node.kind, "text": labels[m.node.pk], "via": m.via,
             "joined_at": m.created_at} for m in memberships]
