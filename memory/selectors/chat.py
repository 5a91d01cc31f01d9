"""The browser chat's reads: the latest turns."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from memory.models import DialoguePage, RetrievalTrace


def chat_history(*, user, limit: int = 200) -> tuple[list[DialoguePage], int]:
    """The user's latest turns in any tier, oldest first, and how many there are in all."""
    pages = DialoguePage.objects.filter(user=user)
    total = pages.count()
    latest = (pages.select_related("sona").prefetch_related("attachments")
              .annotate(has_trace=Exists(RetrievalTrace.objects.filter(page=OuterRef("pk"))))
              .order_by("-seq")[:limit])
    return list(reversed(latest)), total
