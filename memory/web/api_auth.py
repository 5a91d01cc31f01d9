"""Who calls the API and for whom: bearer tokens and the browser's session, acting for another
user (staff tokens only, audited), and the one error shape; memoryos_site/middleware.py limits bodies.

Every error is JSON `{"code", "message", "detail"}`. A token authenticates as its person; a call
with `?user=NAME` acts for another user when the caller has the permission for it
(`memory.inspect_any_user` to read, `memory.edit_any_user` to change), and is recorded in that
user's lifecycle log; without it the answer is a 404, as for a memory that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ninja.errors import HttpError
from ninja.security import HttpBearer, SessionAuth

from memory.selectors.accounts import user_named
from memory.services.tokens import operator_access_record, token_authenticate
from memory.web.access import can_edit, can_inspect

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ApiError(HttpError):
    """An HTTP error with the API's code and detail."""

    def __init__(self, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(status, message)
        self.code = code
        self.detail = detail


@dataclass(frozen=True)
class TokenPrincipal:
    """A call made with a token; its text names the token, so that rate limits are per token."""

    user: Any
    prefix: str

    def __str__(self) -> str:
        return f"token:{self.prefix}"


class TokenAuth(HttpBearer):
    """`Authorization: Bearer mos_…`."""

    def authenticate(self, request, token: str) -> TokenPrincipal | None:
        found = token_authenticate(text=token)
        return TokenPrincipal(user=found.user, prefix=found.prefix) if found is not None else None


class BrowserSessionAuth(SessionAuth):
    """The browser's session, its CSRF token checked only when there is a session to forge: a write
    with no credentials (or a bad token) is a 401 saying so, not django-ninja's 403 "CSRF check Failed"."""

    def _get_key(self, request) -> str | None:
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)


@dataclass(frozen=True)
class Caller:
    user: Any  # whose memory the call is about
    actor: Any  # who is calling
    token: TokenPrincipal | None


def caller_of(request, acting_for: str | None = None) -> Caller:
    """The memory a call is about: the caller's own, or (staff) the user named by `user`."""
    token = request.auth if isinstance(request.auth, TokenPrincipal) else None
    actor = token.user if token is not None else request.auth
    if not acting_for or acting_for == actor.get_username():
        return Caller(user=actor, actor=actor, token=token)
    allowed = can_inspect if request.method in READ_METHODS else can_edit
    target = user_named(acting_for)
    if target is None or not allowed(actor, target):
        raise ApiError(404, "not_found", "No such user's memory here.")
    operator_access_record(user=target, actor=actor, method=request.method, path=request.path,
                           token_prefix=token.prefix if token else "")
    return Caller(user=target, actor=actor, token=token)
