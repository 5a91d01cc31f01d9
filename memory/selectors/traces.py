"""Recall traces: the listing, one trace whole, where its time went, and its policy's own section."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from memory.models import RetrievalTrace
from memory.recall.base import policy_or_none


def trace_timings(payload: dict) -> list[tuple[str, float]]:
    """A stored recall's parts and their ms in the order they ran (jsonb does not keep the dict's order)."""
    timings = payload.get("timings_ms", {})
    order = [part for part in payload.get("timings_order", []) if part in timings]
    order += [part for part in timings if part not in order]  # traces stored before the order was
    return [(str(part), float(timings[part])) for part in order]


def traces(*, user) -> QuerySet[RetrievalTrace]:
    """The user's recall traces, newest first, without their payloads (a listing's columns)."""
    return (RetrievalTrace.objects.filter(user=user).select_related("page").order_by("-created_at")
            .only("id", "query", "policy", "latency_ms", "prompt_tokens", "created_at", "page__seq", "page__id"))


def trace_get(*, user, trace_id) -> RetrievalTrace | None:
    """One of the user's traces, whole, or None (also for another user's trace or a malformed id)."""
    try:
        key = uuid.UUID(str(trace_id))
    except ValueError:
        return None
    return RetrievalTrace.objects.filter(user=user, id=key).select_related("page").first()


@dataclass(frozen=True)
class PolicySection:
    """A trace's part that only its policy knows how to show: the template and what it renders."""

    template: str
    view: Any


def policy_section(*, trace: RetrievalTrace) -> PolicySection | None:
    """The trace's policy's own section (RecallPolicy.trace_template), or None: a policy with none, one
    whose trace holds nothing for it, or a policy no longer registered."""
    policy = policy_or_none(trace.policy)
    if policy is None or policy.trace_template is None:
        return None
    view = policy.trace_view(trace.payload or {})
    return PolicySection(template=policy.trace_template, view=view) if view else None
