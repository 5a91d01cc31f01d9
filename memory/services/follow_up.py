"""What a turn tells the runtime: a reply has begun, maintenance is due, a policy's after-reply work
is due. The services say what happened; how and where the work runs is memory/runtime/'s
(after_reply.py), which installs its functions here as the app starts (memory/apps.py), as the
listeners of facts and corrections are installed. Until it does (a test of this module alone),
nothing is scheduled.
"""

from __future__ import annotations

from collections.abc import Callable

ReplyBegins = Callable[[], Callable[[], None]]  # counts a reply under way; returns what ends it
MaintenanceDue = Callable[..., None]  # (*, user_id: int) -> None
AfterReplyDue = Callable[..., None]  # (*, name: str, user_id: int, trace_id, reply: str) -> None


def _no_reply_count() -> Callable[[], None]:
    return lambda: None


def _nothing(**_kwargs) -> None:
    return None


_installed: dict[str, Callable] = {"reply_begins": _no_reply_count, "maintenance_due": _nothing,
                                   "after_reply_due": _nothing}


def follow_up_install(*, reply_begins: ReplyBegins, maintenance_due: MaintenanceDue,
                      after_reply_due: AfterReplyDue) -> None:
    _installed.update(reply_begins=reply_begins, maintenance_due=maintenance_due, after_reply_due=after_reply_due)


def reply_begins() -> Callable[[], None]:
    """A turn's reply is under way from now (the work after replies yields to it); call the
    returned function when it ends (calling it again does nothing)."""
    return _installed["reply_begins"]()


def maintenance_due(*, user_id: int) -> None:
    """The user's maintenance is due and marked so (a reply was stored and committed): run it."""
    _installed["maintenance_due"](user_id=user_id)


def after_reply_due(*, name: str, user_id: int, trace_id, reply: str) -> None:
    """The after-reply work registered as `name` (memory/services/policy_work.py) is due for a turn."""
    _installed["after_reply_due"](name=name, user_id=user_id, trace_id=trace_id, reply=reply)
