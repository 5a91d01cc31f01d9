"""The work a recall policy asks for once a turn's reply is stored (`RecallPolicy.after_reply`).

A policy names the work it needs; this module maps each name to the plain function that does it,
so a turn never asks which policy recalled. Each work is called as `work(*, user_id, trace_id,
reply)` after the turn's transaction commits; the runtime runs it off the reply path by its name
(memory/runtime/after_reply.py: inline, the lane or a Celery worker). Work for a policy kept
outside the project is added with `register_after_reply`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memory.policies import registry as models_registry
from memory.recall.base import policy_or_none

log = logging.getLogger(__name__)

AfterReply = Callable[..., object]  # (*, user_id: int, trace_id, reply: str) -> anything

# Filled as the memory models register (memory/policies/registry.py; Memoria's "importance_rating").
_work: dict[str, AfterReply] = {}


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


def after_reply_get(name: str) -> AfterReply:
    """The work registered as `name` (KeyError if none is). A Celery worker may look a name up
    before anything in its process loaded the memory models that register their work."""
    models_registry.load()
    return _work[name]


def after_reply_work(policy: str) -> list[str]:
    """The names of the work the named policy asks for, in its order; a name nothing provides is
    logged and skipped (the reply is stored already: a missing piece of follow-up work must not
    fail the turn)."""
    found = policy_or_none(policy)
    work = []
    for name in found.after_reply if found is not None else ():
        if name in _work:
            work.append(name)
        else:
            log.error("event=after_reply_unknown policy=%s work=%s", policy, name)
    return work
