"""What every write path shares: the per-user lock, embedding that degrades, and the input error.

Memory changes only through memory/services/, which take these from here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db.models import QuerySet

from memory.adapters import configured
from memory.models import UserMemoryState

log = logging.getLogger(__name__)


class MemoryInputError(ValueError):
    """Bad input from a caller: the message says what is wrong; nothing was stored."""


class MemoryNotFound(MemoryInputError):
    """The memory named is not in this user's memory (another user's is not theirs either)."""


def lock_user_state(user_id: int) -> UserMemoryState:
    """Lock the user's state row (inside a transaction): every write of one user goes through it
    in turn, in any thread or process. One statement when the row exists (maintenance takes the
    lock about six times a page); a new user's row is made first, then locked."""
    state = UserMemoryState.objects.select_for_update().filter(user_id=user_id).first()
    if state is None:
        UserMemoryState.objects.get_or_create(user_id=user_id)
        state = UserMemoryState.objects.select_for_update().get(user_id=user_id)
    return state


def lock_user_state_writing(user_id: int, **changes) -> QuerySet[UserMemoryState]:
    """Lock the user's state row (inside a transaction) by writing `changes` to it: one statement
    where lock_user_state and a save take two; the row is made first if the user has none yet.
    Returns the row's queryset."""
    states = UserMemoryState.objects.filter(user_id=user_id)
    if not states.update(**changes):
        lock_user_state(user_id)
        states.update(**changes)
    return states


def embed_or_none(texts: Sequence[str]) -> list[list[float]] | None:
    """Embeddings, or None when the embedder fails: what was written is kept, and maintenance
    embeds it later."""
    try:
        return configured.embedder().embed(list(texts))
    except Exception as exc:  # an embeddings endpoint can fail in any way; the write must survive
        log.warning("event=embed_failed error=%r", exc)
        return None
