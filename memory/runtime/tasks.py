"""The Celery tasks (memoryos_site/celery.py): the work after replies, in worker processes, and
`after_reply_run`, which runs one after-reply work wherever it runs (the lane, a worker).

Their names are what the queue holds: keep them. "memory.memoria_rating" is kept for the messages
queued before the after-reply work was run by name ("memory.after_reply"); it runs the same work.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from memory.services.maintenance import MAX_RETRIES, maintenance_run
from memory.services.policy_work import after_reply_get

log = logging.getLogger(__name__)


def after_reply_run(name: str, user_id: int, trace_id, reply: str) -> None:
    """Run the work once: one that failed is logged, never tried twice (a rating moves importance
    by EWMA, and the same rating twice would move it twice)."""
    try:
        after_reply_get(name)(user_id=user_id, trace_id=trace_id, reply=reply)
    except Exception:
        log.exception("event=after_reply_work_failed work=%s user=%s trace=%s", name, user_id, trace_id)


@shared_task(name="memory.maintenance", bind=True, ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)
def maintenance_task(self, user_id: int) -> None:
    try:
        maintenance_run(user_id=user_id)
    except Exception as exc:  # recorded, and the user still due; try again later
        if self.request.retries + 1 >= MAX_RETRIES:
            raise
        raise self.retry(exc=exc, countdown=settings.MEMORYOS["MAINTENANCE_RETRY_S"] * 2 ** self.request.retries,
                         max_retries=MAX_RETRIES) from exc


@shared_task(name="memory.after_reply", ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def after_reply_task(name: str, user_id: int, trace_id: str, reply: str) -> None:
    """The after-reply work registered as `name` (memory/services/policy_work.py)."""
    after_reply_run(name, user_id, trace_id, reply)


# The work it ran is the one Memoria's importance ratings are registered under.
LEGACY_RATING_WORK = "importance_rating"


@shared_task(name="memory.memoria_rating", ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def memoria_rating_task(user_id: int, trace_id: str, reply: str) -> None:
    after_reply_run(LEGACY_RATING_WORK, user_id, trace_id, reply)
