"""Personal API tokens: made and revoked by the person they belong to; stored hashed, shown once."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.db import transaction
from django.utils import timezone

from memory.models import ApiToken, LifecycleEvent
from memory.services.common import MemoryInputError
from memory.services.events import event_record

TOKEN_PREFIX = "mos_"
MAX_TOKENS = 20


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """A new token and its text, which is never stored and cannot be shown again."""
    name = (name or "").strip()
    if not name or len(name) > 80:
        raise MemoryInputError("Name the token (up to 80 characters), e.g. the program that will use it.")
    with transaction.atomic():
        if ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() >= MAX_TOKENS:
            raise MemoryInputError(f"You have {MAX_TOKENS} active tokens; revoke one first.")
        prefix = secrets.token_hex(4)
        secret = secrets.token_urlsafe(32)
        text = f"{TOKEN_PREFIX}{prefix}_{secret}"
        token = ApiToken.objects.create(user=user, name=name, prefix=prefix, key_hash=_digest(text))
    return token, text


def token_revoke(*, user, token_id: int) -> ApiToken:
    token = ApiToken.objects.filter(user=user, id=token_id).first()
    if token is None:
        raise MemoryInputError("No such token.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_authenticate(*, text: str) -> ApiToken | None:
    """The active token with this text, or None (unknown, malformed, revoked)."""
    if not text.startswith(TOKEN_PREFIX) or text.count("_") < 2:
        return None
    prefix = text[len(TOKEN_PREFIX):].split("_", 1)[0]
    token = ApiToken.objects.select_related("user").filter(prefix=prefix, revoked_at__isnull=True).first()
    if token is None or not hmac.compare_digest(token.key_hash, _digest(text)) or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:  # one write a minute at most
        ApiToken.objects.filter(id=token.id).update(last_used_at=now)
    return token


def operator_access_record(*, user, actor, method: str, path: str, token_prefix: str = "") -> None:
    """An API call an operator made for this user, in the user's own log (every one is audited)."""
    event_record(user_id=user.pk, kind=LifecycleEvent.Kind.OPERATOR_ACCESS, subject_id=str(actor.pk),
                 actor=actor.get_username(), method=method, path=path[:200], token=token_prefix)
