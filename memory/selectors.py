"""Reads of memory: counts and lists for commands, the API and the inspector."""

from __future__ import annotations

from typing import Any

from memory.models import DialoguePage, LifecycleEvent, PageStatus, RetrievalTrace, Segment, Tier
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


def stm_pages(*, user) -> list[DialoguePage]:
    return list(DialoguePage.objects.filter(user=user, tier=Tier.STM).order_by("seq"))
