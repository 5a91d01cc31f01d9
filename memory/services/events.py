"""The lifecycle log: every change to memory is recorded as an event. Called only from services."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from memory.models import LifecycleEvent


def event_of(*, user_id: int, kind: str, subject_id: str = "", at: datetime | None = None,
             **payload) -> LifecycleEvent:
    """An event not stored yet (events_record stores several in one statement). `at` is the
    memory's own time (an imported conversation's clock); now when not given."""
    return LifecycleEvent(user_id=user_id, kind=kind, subject_id=str(subject_id), occurred_at=at or timezone.now(),
                          payload=payload)


def event_record(*, user_id: int, kind: str, subject_id: str = "", at: datetime | None = None,
                 **payload) -> LifecycleEvent:
    """One event stored (event_of)."""
    event = event_of(user_id=user_id, kind=kind, subject_id=subject_id, at=at, **payload)
    event.save(force_insert=True)
    return event


def events_record(events: Sequence[LifecycleEvent]) -> list[LifecycleEvent]:
    """Events made by event_of, stored in one INSERT in their order."""
    return LifecycleEvent.objects.bulk_create(events)
