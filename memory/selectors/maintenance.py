"""What maintenance has to do: users with due work, and pages whose turn stopped before its reply."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from memory.models import DialoguePage, PageStatus, UserMemoryState


def stopped_turn_pages() -> QuerySet[DialoguePage]:
    """Pages still awaiting their reply PENDING_TIMEOUT_S after they were stored (wall-clock
    time): their turn's process stopped mid-turn. Read through the partial index `page_pending`."""
    cutoff = timezone.now() - timedelta(seconds=settings.MEMORYOS["PENDING_TIMEOUT_S"])
    return DialoguePage.objects.filter(status=PageStatus.PENDING, created_at__lt=cutoff)


def users_with_maintenance_to_do() -> list[int]:
    """Users whose maintenance is due, or who hold a page whose turn stopped before its reply (a
    crash between the message being stored and the reply: nothing marked maintenance due)."""
    due = UserMemoryState.objects.filter(maintenance_due=True).values_list("user_id", flat=True)
    return sorted(set(due) | set(stopped_turn_pages().values_list("user_id", flat=True)))
