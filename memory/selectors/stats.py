"""Counts of one user's memory: per tier for commands and the API, and the inspector's overview."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory.config import memory_params
from memory.models import (
    DialoguePage,
    LifecycleEvent,
    PageStatus,
    RetrievalTrace,
    Segment,
    Sona,
    Tier,
    UserMemoryState,
)
from memory.recall.base import default_policy_name
from persona.models import AgentTrait, KnowledgeFact, UserTrait


def memory_stats(*, user) -> dict[str, Any]:
    """Counts per tier for one user."""
    pages = DialoguePage.objects.filter(user=user)
    return {
        "user": user.username,
        "stm_pages": pages.filter(tier=Tier.STM, status=PageStatus.COMPLETE).count(),
        "pending_pages": pages.filter(status=PageStatus.PENDING).count(),
        "mtm_pages": pages.filter(tier=Tier.MTM).count(),
        "archived_pages": pages.filter(tier=Tier.ARCHIVED).count(),
        "total_pages": pages.count(),
        "mtm_segments": Segment.objects.filter(user=user, status=Segment.Status.ACTIVE).count(),
        "evicted_segments": Segment.objects.filter(user=user, status=Segment.Status.EVICTED).count(),
        "promoted_segments": Segment.objects.filter(user=user, promoted_count__gt=0).count(),
        "kb_facts": KnowledgeFact.objects.filter(user=user).count(),
        "user_traits": UserTrait.objects.filter(user=user, score__gt=0).count(),
        "agent_traits": AgentTrait.objects.filter(user=user).count(),
        "events": LifecycleEvent.objects.filter(user=user).count(),
        "traces": RetrievalTrace.objects.filter(user=user).count(),
    }


@dataclass
class Overview:
    counts: dict[str, tuple[int, int]]  # label -> (held, capacity)
    pages: int
    pending: int
    archived: int
    evicted_segments: int
    events: int
    traces: int
    database_rows: int
    state: UserMemoryState | None
    recent_events: list[LifecycleEvent]
    default_policy: str
    sona_policies: list[tuple[str, str]]
    first_at: datetime | None = None
    last_at: datetime | None = None


def overview(*, user) -> Overview:
    params = memory_params()
    pages = DialoguePage.objects.filter(user=user)
    counts = {
        "STM pages": (pages.filter(tier=Tier.STM, status=PageStatus.COMPLETE).count(), params.stm_capacity),
        "MTM segments": (Segment.objects.filter(user=user, status=Segment.Status.ACTIVE).count(),
                         params.mtm_capacity),
        "KB facts": (KnowledgeFact.objects.filter(user=user).count(), params.kb_capacity),
        "Agent traits": (AgentTrait.objects.filter(user=user).count(), params.agent_trait_capacity),
        "User traits": (UserTrait.objects.filter(user=user, score__gt=0).count(), params.trait_dimensions),
    }
    total = pages.count()
    events = LifecycleEvent.objects.filter(user=user)
    span = pages.order_by("seq").values_list("timestamp", flat=True)
    return Overview(
        counts=counts, pages=total, pending=pages.filter(status=PageStatus.PENDING).count(),
        archived=pages.filter(tier=Tier.ARCHIVED).count(),
        evicted_segments=Segment.objects.filter(user=user, status=Segment.Status.EVICTED).count(),
        events=events.count(), traces=RetrievalTrace.objects.filter(user=user).count(),
        database_rows=total + sum(held for held, _ in counts.values()),
        state=UserMemoryState.objects.filter(user=user).first(),
        recent_events=list(events.order_by("-id")[:12]), default_policy=default_policy_name(),
        sona_policies=[(s.name, s.recall_policy or f"default ({default_policy_name()})")
                       for s in Sona.objects.filter(user=user).order_by("created_at")],
        first_at=span.first(), last_at=pages.order_by("-seq").values_list("timestamp", flat=True).first(),
    )
