"""The work after a reply (maintenance, the work a recall policy asks for) yields to the replies.

Where it runs is MEMORYOS_MAINTENANCE_MODE's choice, asked here and nowhere else:

- "thread" (the default without Redis and a Qdrant server): the low-priority lane in this process
  (memory/runtime/lane.py), one thread that starts a job only when no reply is under way here, and
  pauses between maintenance steps while one is.
- "celery" (the default when REDIS_URL and QDRANT_URL are set): a Celery task on the Redis the
  project already runs, done by worker processes apart from the web servers
  (memory/runtime/tasks.py, memoryos_site/celery.py).
- "sync": inline (tests, imports); "off": only `manage.py maintenance` runs maintenance, and the
  policies' work runs on the lane (it has no due flag to be found by later).

The services do not schedule: a stored turn tells memory/services/follow_up.py what is due, and
`after_reply_install` (called as the app starts, memory/apps.py) hands that to the functions here.

Nothing is lost when a job is interrupted: a page's reply marks the user's maintenance due in the
transaction that stores it (memory/services/pages.py), before any job is queued, and the flag is
cleared only by a run that finished. A task is acknowledged after it ran (acks_late), a failed one
is retried, and due work (memory/runtime/due_work.py) hands every user still due to the lane or
the queue again.
"""

from __future__ import annotations

import logging

from django.conf import settings

from memory.runtime.lane import lane, replies_under_way
from memory.runtime.tasks import after_reply_run, after_reply_task, maintenance_task
from memory.services import follow_up
from memory.services.maintenance import maintenance_run
from memory.services.policy_work import after_reply_get

log = logging.getLogger(__name__)


def maintenance_schedule(*, user_id: int) -> None:
    """Maintenance for the user, where MAINTENANCE_MODE says. The caller has marked it due."""
    mode = settings.MEMORYOS["MAINTENANCE_MODE"]
    if mode == "sync":
        maintenance_run(user_id=user_id)
    elif mode == "thread":
        lane.submit(("maintenance", user_id), lambda pause: maintenance_run(user_id=user_id, pause=pause))
    elif mode == "celery":
        enqueue(maintenance_task, user_id)


def after_reply_schedule(*, name: str, user_id: int, trace_id, reply: str) -> None:
    """The after-reply work registered as `name` (memory/services/policy_work.py), off the reply path."""
    mode = settings.MEMORYOS["MAINTENANCE_MODE"]
    if mode == "sync":
        after_reply_get(name)(user_id=user_id, trace_id=trace_id, reply=reply)
    elif mode == "celery":
        enqueue(after_reply_task, name, user_id, str(trace_id), reply)
    else:  # "off" leaves maintenance to the command; this work has no due flag to find it by later
        lane.submit((name, str(trace_id)), lambda _pause: after_reply_run(name, user_id, trace_id, reply))


def enqueue(task, *args) -> None:
    try:
        task.apply_async(args=args, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    except Exception:  # the broker is down: the user stays due, and due work queues it again
        log.exception("event=after_reply_enqueue_failed task=%s args=%s", task.name, args[:2])


def after_reply_install() -> None:
    """Hand what the services say is due to the functions above (memory/apps.py, as the app starts)."""
    follow_up.follow_up_install(reply_begins=replies_under_way.enter, maintenance_due=maintenance_schedule,
                                after_reply_due=after_reply_schedule)
