"""The work after a reply (maintenance, Memoria's ratings) yields to the replies.

Where it runs is MEMORYOS_MAINTENANCE_MODE's choice:

- "thread" (the default without Redis and a Qdrant server): a low-priority lane in this process,
  one thread that starts a job only when no reply is under way here, and pauses between
  maintenance steps while one is. A job that has waited MAINTENANCE_MAX_DEFER_S runs anyway, so a
  server that never goes quiet still catches up.
- "celery" (the default when REDIS_URL and QDRANT_URL are set): a Celery task on the Redis the
  project already runs, done by worker processes apart from the web servers
  (memoryos_site/celery.py).
- "sync": inline (tests, imports); "off": only `manage.py maintenance` runs it.

Nothing is lost when a job is interrupted: a page's reply marks the user's maintenance due in the
transaction that stores it (memory/services/pages.py), before any job is queued, and the flag is
cleared only by a run that finished. A task is acknowledged after it ran (acks_late), a failed one
is retried, and due work (memory/services/due_work.py) hands every user still due to the lane or
the queue again.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import time
from collections.abc import Callable, Hashable

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections

from memory.policies.memoria.services import memoria_after_reply
from memory.services.maintenance import MAX_RETRIES, maintenance_run

log = logging.getLogger(__name__)


class RepliesUnderWay:
    """How many turns of this process are between storing their message and storing their reply."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0
        self._started = 0  # replies ever begun: a new one during a quiet spell breaks it

    @property
    def count(self) -> int:
        return self._count

    def enter(self) -> Callable[[], None]:
        """Count one reply; returns the function that ends it (calling it again does nothing)."""
        with self._changed:
            self._count += 1
            self._started += 1
            self._changed.notify_all()
        ended = False

        def end() -> None:
            nonlocal ended
            with self._changed:
                if not ended:
                    ended = True
                    self._count -= 1
                    self._changed.notify_all()

        return end

    def wait_until_none(self, *, deadline: float, quiet_s: float = 0.0) -> bool:
        """Block until no reply is under way and none has begun for `quiet_s`, or until `deadline`
        (time.monotonic()) passes; True if it is quiet.

        Between one reply's end and the next one's start on the same turn worker no reply may be
        under way for an instant; the quiet spell keeps a burst from looking idle then."""
        with self._changed:
            while True:
                if not self._changed.wait_for(lambda: self._count == 0, timeout=max(0.0, deadline - time.monotonic())):
                    return False
                started = self._started
                if quiet_s <= 0 or not self._changed.wait_for(
                        lambda started=started: self._started != started,
                        timeout=max(0.0, min(quiet_s, deadline - time.monotonic()))):
                    return True


replies_under_way = RepliesUnderWay()


class LowPriorityLane:
    """One thread running jobs when no reply is under way. A job is named by a key: a second job with
    the key of one still queued is dropped (one maintenance run does all of a user's due work)."""

    def __init__(self, replies: RepliesUnderWay) -> None:
        self._replies = replies
        self._changed = threading.Condition()
        self._jobs: dict[Hashable, tuple[float, Callable[[Callable[[], None]], None], int]] = {}
        self._running = False
        self._thread: threading.Thread | None = None

    def submit(self, key: Hashable, job: Callable[[Callable[[], None]], None], *, attempt: int = 0) -> None:
        """Queue `job(pause)`; `pause()` blocks while replies are under way (call it between steps)."""
        with self._changed:
            self._jobs.setdefault(key, (time.monotonic(), job, attempt))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="memory-after-reply", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def queued(self) -> list[Hashable]:
        with self._changed:
            return list(self._jobs)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every queued job has run (tests, a graceful stop); True if the lane is idle."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._jobs and not self._running, timeout=timeout)

    def _loop(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._jobs))
                oldest = next(iter(self._jobs.values()))[0]
            deadline = oldest + settings.MEMORYOS["MAINTENANCE_MAX_DEFER_S"]
            quiet_s = settings.MEMORYOS["MAINTENANCE_QUIET_S"]
            # The job is taken only once it is quiet: what was queued meanwhile for its key joins it.
            self._replies.wait_until_none(deadline=deadline, quiet_s=quiet_s)
            pause = functools.partial(self._pause, deadline=deadline, quiet_s=quiet_s)
            with self._changed:
                key = next(iter(self._jobs))
                _queued_at, job, attempt = self._jobs.pop(key)
                self._running = True
            try:
                self._run(key, job, attempt, pause)
            finally:
                with self._changed:
                    self._running = False
                    self._changed.notify_all()

    def _pause(self, *, deadline: float, quiet_s: float) -> None:
        """Between two steps of a job: go on at once if no reply is under way, else wait for quiet."""
        if self._replies.count:
            self._replies.wait_until_none(deadline=deadline, quiet_s=quiet_s)

    def _run(self, key: Hashable, job: Callable[[Callable[[], None]], None], attempt: int,
             pause: Callable[[], None]) -> None:
        close_old_connections()
        try:
            job(pause)
        except Exception:
            log.exception("event=after_reply_failed job=%s attempt=%s", key, attempt)
            if attempt + 1 < MAX_RETRIES:  # the user stays due meanwhile: due work also retries it
                delay = settings.MEMORYOS["MAINTENANCE_RETRY_S"] * 2 ** attempt
                timer = threading.Timer(delay, self.submit, args=(key, job), kwargs={"attempt": attempt + 1})
                timer.daemon = True
                timer.start()
        finally:
            close_old_connections()


lane = LowPriorityLane(replies_under_way)
# A command (`manage.py chat`) or a stopping server finishes what it queued, as long as this.
EXIT_DRAIN_S = 60.0
atexit.register(lane.drain, EXIT_DRAIN_S)


# --- what is scheduled -------------------------------------------------------------------------

def maintenance_schedule(*, user_id: int) -> None:
    """Maintenance for the user, where MAINTENANCE_MODE says. The caller has marked it due."""
    mode = settings.MEMORYOS["MAINTENANCE_MODE"]
    if mode == "sync":
        maintenance_run(user_id=user_id)
    elif mode == "thread":
        lane.submit(("maintenance", user_id), lambda pause: maintenance_run(user_id=user_id, pause=pause))
    elif mode == "celery":
        _enqueue(maintenance_task, user_id)


def memoria_after_reply_schedule(*, user_id: int, trace_id, reply: str) -> None:
    """Rate the reply's recalled memories (memory/services/memoria.py) off the reply path."""
    mode = settings.MEMORYOS["MAINTENANCE_MODE"]
    if mode == "sync":
        memoria_after_reply(user_id=user_id, trace_id=trace_id, reply=reply)
    elif mode == "celery":
        _enqueue(memoria_rating_task, user_id, str(trace_id), reply)
    else:  # "off" leaves maintenance to the command; a rating has no due flag to find it by later
        lane.submit(("importance_rating", str(trace_id)), lambda _pause: _memoria_rate(user_id, trace_id, reply))


def _memoria_rate(user_id: int, trace_id, reply: str) -> None:
    """A rating moves importance by EWMA: one that failed is logged, never tried twice."""
    try:
        memoria_after_reply(user_id=user_id, trace_id=trace_id, reply=reply)
    except Exception:
        log.exception("event=memoria_rating_failed user=%s trace=%s", user_id, trace_id)


def _enqueue(task, *args) -> None:
    try:
        task.apply_async(args=args, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    except Exception:  # the broker is down: the user stays due, and due work queues it again
        log.exception("event=after_reply_enqueue_failed task=%s args=%s", task.name, args[:2])


# --- Celery tasks (memoryos_site/celery.py): the same services, in worker processes -------------

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


@shared_task(name="memory.memoria_rating", ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def memoria_rating_task(user_id: int, trace_id: str, reply: str) -> None:
    _memoria_rate(user_id, trace_id, reply)
