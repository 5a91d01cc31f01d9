"""Accounts: users by name, and a user's API tokens."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import F

from memory.models import ApiToken


def api_tokens(*, user) -> list[ApiToken]:
    """The user's tokens, the active ones (not revoked) first, newest first. NULLs are placed
    explicitly: SQLite sorts them first and PostgreSQL last, which listed revoked tokens first there."""
    return list(ApiToken.objects.filter(user=user).order_by(F("revoked_at").asc(nulls_first=True), "-created_at"))


def user_named(username: str):
    return get_user_model().objects.filter(username=username).first()


def usernames(*, limit: int = 500) -> list[str]:
    """Every username, in order, the first `limit`."""
    return list(get_user_model().objects.order_by("username").values_list("username", flat=True)[:limit])
