"""One import at a time for a person, across processes: the web's upload, `import_history` and
`import_conversation` all claim the person's state row before they store anything.

The claim is a token written by one conditional UPDATE (which SQLite and PostgreSQL both make
atomic), so two runs started at once cannot both hold it; the second is refused before it reads
its file. A running import renews its claim after every batch of pages; one not renewed for
IMPORT_LEASE (a process that died) has lapsed and may be taken over.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from memory.models import UserMemoryState
from memory.services.common import MemoryInputError, lock_user_state_writing

IMPORT_LEASE = timedelta(minutes=10)


class ImportRunning(MemoryInputError):
    """Another import of the person's holds the claim."""


def import_claim(*, user, now: datetime | None = None) -> str:
    """Claim the person's one import; its token. ImportRunning when another run holds it."""
    now = now or timezone.now()
    token = uuid.uuid4().hex
    states = UserMemoryState.objects.filter(user_id=user.pk)
    if not states.exists():
        lock_user_state_writing(user.pk)  # the row first (a new person's), claimed below like any
    free = Q(import_claim="") | Q(import_claimed_until__isnull=True) | Q(import_claimed_until__lt=now)
    if not states.filter(free).update(import_claim=token, import_claimed_until=now + IMPORT_LEASE):
        raise ImportRunning("An import of yours is still running; wait for it to finish.")
    return token


def import_renew(*, user, claim: str, now: datetime | None = None) -> None:
    """Keep the claim another IMPORT_LEASE; ImportRunning when it was lost (lapsed and taken)."""
    now = now or timezone.now()
    if not UserMemoryState.objects.filter(user_id=user.pk, import_claim=claim).update(
            import_claimed_until=now + IMPORT_LEASE):
        raise ImportRunning("This import's claim lapsed and another import of yours took it over.")


def import_release(*, user, claim: str) -> None:
    """Give the claim back (nothing when it is no longer this run's)."""
    UserMemoryState.objects.filter(user_id=user.pk, import_claim=claim).update(import_claim="",
                                                                              import_claimed_until=None)


@contextmanager
def import_claimed(*, user, claim: str | None = None) -> Iterator[str]:
    """The person's import claim held for the block: `claim` when the caller took it already (the
    web takes it before it reads the upload), else a new one; released at the end either way."""
    token = claim if claim is not None else import_claim(user=user)
    try:
        yield token
    finally:
        import_release(user=user, claim=token)
