"""Who may inspect and edit whose memory: the one place the web edge asks.

A person sees and edits their own memory; staff with the permission (not is_superuser alone) see
or edit anyone's. Anyone else gets a 404 from the views, never data.
"""

from __future__ import annotations

from memory.selectors.accounts import usernames

INSPECT_ANY = "memory.inspect_any_user"


def can_inspect(viewer, target) -> bool:
    """A person sees their own memory; staff with the permission (not is_superuser alone) anyone's."""
    return viewer.is_authenticated and (viewer.pk == target.pk or viewer.has_perm(INSPECT_ANY))


EDIT_ANY = "memory.edit_any_user"


def can_edit(viewer, target) -> bool:
    """A person edits their own memory; staff with the permission anyone's."""
    return viewer.is_authenticated and (viewer.pk == target.pk or viewer.has_perm(EDIT_ANY))


def switchable_users(viewer, *, limit: int = 500) -> list[str]:
    """The usernames the viewer may pick in the user switcher."""
    if not viewer.has_perm(INSPECT_ANY):
        return [viewer.get_username()]
    return usernames(limit=limit)
