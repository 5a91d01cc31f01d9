"""The lifecycle log: every change to memory is recorded as an event. Called only from services."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from memory.models import LifecycleEvent


def event_record(*, user_id: int, kind: str, subject_id: str = "", at: datetime | None = None,
                 **payload) -> LifecycleEvent:
    """`at` is the memory's own time (an imported conversation's clock); now when not given."""
    return LifecycleEvent.objects.create(user_id=user_id, kind=kind, subject_id=str(subject_id),
                                         occurred_at=at or timezone.now(), payload=payload)
