"""A user's sonas and the memories that belong to each."""

from __future__ import annotations

import uuid

from django.db.models import Count, QuerySet

from memory.models import Sona, SonaMembership


def sona_list(*, user) -> list[Sona]:
    return list(Sona.objects.filter(user=user).order_by("created_at"))


def sona_counts(*, user) -> list[tuple[Sona, int]]:
    """The user's sonas, oldest first, each with how many memories belong to it."""
    rows = Sona.objects.filter(user=user).annotate(members=Count("memberships")).order_by("created_at")
    return [(sona, sona.members) for sona in rows]


def sona_memberships(*, user, sona: Sona) -> QuerySet[SonaMembership]:
    """The memories (graph nodes) of one of the user's sonas, newest membership first, each with how
    it got there (where it happened, or bubbled up from another sona)."""
    return (SonaMembership.objects.filter(user=user, sona=sona, sona__user=user).select_related("node")
            .order_by("-created_at", "-id"))


def sona_memories(*, user, sona: Sona, limit: int = 200) -> list[SonaMembership]:
    """sona_memberships, the newest `limit`."""
    return list(sona_memberships(user=user, sona=sona)[:limit]) if sona.user_id == user.pk else []


def sona_name_taken(*, user, name: str) -> bool:
    return Sona.objects.filter(user=user, name__iexact=name).exists()


def sona_named(*, user, name: str) -> Sona | None:
    """The user's persona of this name (as the form compares names: case aside), or None."""
    return Sona.objects.filter(user=user, name__iexact=name.strip()).order_by("created_at").first()


def sona_for_user(*, user, sona_id) -> Sona | None:
    """The user's sona with this id, or None (also for another user's sona or a malformed id)."""
    try:
        return Sona.objects.filter(user=user, id=uuid.UUID(str(sona_id))).first()
    except ValueError:
        return None
