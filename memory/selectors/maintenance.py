"""What maintenance has to do: users with due work, pages whose turn stopped before its reply, and
the work each of maintenance's occasional steps reads (maintenance asks whether there is any
before it runs the step)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from memory.models import DialoguePage, PageStatus, Segment, ServerProcess, UserMemoryState


def stopped_turn_pages() -> QuerySet[DialoguePage]:
    """Pages still awaiting their reply whose turn's process stopped mid-turn: held by a process
    not seen alive for PROCESS_DEAD_S (memory/services/turn_holders.py), or held by none and
    PENDING_TIMEOUT_S old (wall-clock time). Read through the partial index `page_pending`."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.MEMORYOS["PENDING_TIMEOUT_S"])
    alive = ServerProcess.objects.filter(seen_at__gte=now - timedelta(seconds=settings.MEMORYOS["PROCESS_DEAD_S"]))
    holder_stopped = Q(held_by__isnull=False) & ~Q(held_by__in=alive.values("id"))
    return DialoguePage.objects.filter(status=PageStatus.PENDING).filter(Q(created_at__lt=cutoff) | holder_stopped)


def stopped_turn_pages_of(user_id: int) -> QuerySet[DialoguePage]:
    """One user's stopped_turn_pages. Their ids are read through `page_pending` first: asked with
    the user's id beside the status, SQLite walked all of the user's pages by (user, seq) instead,
    a read that grew with the store on every maintenance run."""
    pending = DialoguePage.objects.filter(user_id=user_id, status=PageStatus.PENDING).order_by().values("pk")
    return stopped_turn_pages().filter(pk__in=pending)


def users_with_maintenance_to_do() -> list[int]:
    """Users whose maintenance is due, or who hold a page whose turn stopped before its reply (a
    crash between the message being stored and the reply: nothing marked maintenance due)."""
    due = UserMemoryState.objects.filter(maintenance_due=True).values_list("user_id", flat=True)
    return sorted(set(due) | set(stopped_turn_pages().values_list("user_id", flat=True)))


def unembedded_pages_of(user_id: int) -> QuerySet[DialoguePage]:
    """One user's complete pages whose embedding failed at reply time (maintenance embeds them)."""
    return DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, embedding=b"")


def rederive_segments_of(user_id: int) -> QuerySet[Segment]:
    """One user's segments whose pages were deleted or corrected since they were derived."""
    return Segment.objects.filter(user_id=user_id, rederive=True)
