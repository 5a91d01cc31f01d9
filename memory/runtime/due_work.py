"""Due work resumes by itself: what `manage.py maintenance` does, run by a server in the background.

After a crash (kill -9, a lost machine) nothing is left to finish the turns that were under way or
the maintenance that was due. A server (memoryos_site/asgi.py) starts one background thread that
runs the due work as it starts and then every MEMORYOS_DUE_WORK_INTERVAL_S, and beats every
MEMORYOS_DUE_WORK_HEARTBEAT_S (memory/services/turn_holders.py): a stopped turn's page is completed
once its process has not been seen for PROCESS_DEAD_S (a page no beating process holds: once it is
MEMORYOS_PENDING_TIMEOUT_S old; memory.selectors.maintenance.stopped_turn_pages), checked at each
beat, and maintenance that failed is tried again. Each run is idempotent (maintenance_run holds the user's
lock and re-checks its work), so several server processes may run it side by side. The thread
only hands each user to where the work after replies runs (memory/runtime/after_reply.py): the
low-priority lane, which waits for the replies under way, or the Celery workers. Once the process
has opened the vector index (its warm-up, or a first request: an embedded shard opens in one
process only, so the thread never opens it first), the thread checks the index against the database
(memory/services/reindex.py index_check) and reindexes the people whose pages it lacks, with an
error in the log; and on each full run it resumes the history imports whose process stopped
(memory/runtime/imports.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections

from memory.adapters import configured
from memory.runtime.after_reply import maintenance_schedule
from memory.runtime.imports import imports_resume
from memory.selectors.maintenance import stopped_turn_pages, users_with_maintenance_to_do
from memory.services.maintenance import MaintenanceReport, maintenance_run
from memory.services.reindex import index_check
from memory.services.turn_holders import process_beat, process_stop_beating

log = logging.getLogger(__name__)

_start_lock = threading.Lock()
_started: threading.Thread | None = None
_stop = threading.Event()


def due_work_run(*, on_report: Callable[[int, MaintenanceReport], None] | None = None) -> int:
    """Maintenance for every user whose maintenance is due or whose turn stopped; how many users ran.

    One user's failure is recorded (maintenance_run marks it due again) and the others still run.
    """
    done = 0
    for user_id in users_with_maintenance_to_do():
        try:
            report = maintenance_run(user_id=user_id)
        except Exception:
            log.exception("event=due_work_failed user=%s", user_id)
            continue
        done += 1
        if report.interrupted:
            log.warning("event=due_work_resumed user=%s interrupted=%s", user_id, report.interrupted)
        if on_report is not None:
            on_report(user_id, report)
    return done


def due_work_dispatch(*, stopped_turns_only: bool = False) -> int:
    """Schedule maintenance for every user with due work (maintenance_schedule), or only for those
    with a turn whose process stopped; how many users.

    Inline ("sync"), one user's failure is logged and the others still run."""
    users = (sorted(set(stopped_turn_pages().values_list("user_id", flat=True))) if stopped_turns_only
             else users_with_maintenance_to_do())
    for user_id in users:
        try:
            maintenance_schedule(user_id=user_id)
        except Exception:
            log.exception("event=due_work_failed user=%s", user_id)
    return len(users)


def due_work_start_in_background(*, interval_s: float) -> threading.Thread:
    """Start the process's due-work thread, once (later calls return the running one).

    It runs the due work now, then every `interval_s` seconds (never again when it is 0)."""
    global _started
    with _start_lock:
        if _started is None or not _started.is_alive():
            _stop.clear()
            _started = threading.Thread(target=_loop, args=(interval_s,), name="memory-due-work", daemon=True)
            _started.start()
        return _started


def due_work_stop(timeout: float | None = None) -> None:
    """End the background thread after its current run (tests)."""
    global _started
    _stop.set()
    with _start_lock:
        thread, _started = _started, None
    if thread is not None:
        thread.join(timeout)


def _loop(interval_s: float) -> None:
    beat_s = max(0.01, min(settings.MEMORYOS_DUE_WORK_HEARTBEAT_S, interval_s or float("inf")))
    full_due = time.monotonic()
    index_checked = False
    try:
        while True:
            close_old_connections()
            try:
                process_beat()  # first: the turns this process stores from now on are its own
                if not index_checked and configured.vector_index.cache_info().currsize:
                    index_checked = True  # once, when this process has opened the index (warm-up or a request)
                    index_check(fix=True)
                everything = time.monotonic() >= full_due
                users = due_work_dispatch(stopped_turns_only=not everything)
                if everything:
                    imports_resume()  # history imports whose process stopped, and any still queued
                    full_due = time.monotonic() + interval_s
                log.log(logging.INFO if users else logging.DEBUG, "event=due_work_scheduled users=%s", users)
            except Exception:  # the database is down: try again on the next tick
                log.exception("event=due_work_failed")
            finally:
                close_old_connections()
            if interval_s <= 0 or _stop.wait(beat_s):
                return
    finally:
        process_stop_beating()
