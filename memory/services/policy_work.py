"""The work a recall policy asks for once a turn's reply is stored (`RecallPolicy.after_reply`).

A policy names the work it needs; this module maps each name to the service that does it, so a
turn never asks which policy recalled. Each work is called with the turn's user id, trace id and
reply, after the turn's transaction commits, and must keep itself off the reply path (a worker
thread, or inline when maintenance runs inline). Work for a policy kept outside the project is
added with `register_after_reply`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memory.recall.base import policy_or_none
from memory.services.after_reply import memoria_after_reply_schedule

log = logging.getLogger(__name__)

AfterReply = Callable[..., None]  # (*, user_id: int, trace_id, reply: str) -> None

_work: dict[str, AfterReply] = {
    "importance_rating": memoria_after_reply_schedule,  # rate what was recalled; bubble up between sonas
}


def register_after_reply(name: str, work: AfterReply) -> None:
    """Make `work` the after-reply work a policy asks for by `name`."""
    existing = _work.get(name)
    if existing is not None and existing is not work:
        raise ValueError(f"after-reply work named {name!r} is already registered")
    _work[name] = work


def unregister_after_reply(name: str) -> None:
    _work.pop(name, None)


def after_reply_names() -> frozenset[str]:
    return frozenset(_work)


def after_reply_work(policy: str) -> list[AfterReply]:
    """The work the named policy asks for, in its order; a name nothing provides is logged and skipped
    (the reply is stored already: a missing piece of follow-up work must not fail the turn)."""
    found = policy_or_none(policy)
    work = []
    for name in found.after_reply if found is not None else ():
        if name in _work:
            work.append(_work[name])
        else:
            log.error("event=after_reply_unknown policy=%s work=%s", policy, name)
    return work
