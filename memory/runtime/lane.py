"""The low-priority lane: one thread of this process that runs the work after replies while no
reply is under way here (memory/runtime/after_reply.py says what it runs, and when it does).

A turn counts as a reply under way from its message to its reply (`replies_under_way`, entered by
the turn through memory/services/follow_up.py). The lane starts a job only when none is, and
pauses between maintenance steps while one is. A job that has waited MAINTENANCE_MAX_DEFER_S runs
anyway, so a server that never goes quiet still catches up.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import time
from collections.abc import Callable, Hashable

from django.conf import settings
from django.db import close_old_connections

from memory.services.maintenance import MAX_RETRIES

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
