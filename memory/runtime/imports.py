"""The import worker: one thread of a server process that stores the queued history imports
(memory/services/history_jobs.py), one job at a time, oldest first, so that many uploads share the
machine instead of each taking a thread. The thread runs at a lower OS priority (niceness 10), and
between pages it gives way to replies: a reply under way ends the batch being stored and the import
waits until none is (at most MAINTENANCE_MAX_DEFER_S, as the work after replies does), so other
people's first tokens do not wait behind an import.

An upload kicks the worker (imports_kick); so does a server's due-work thread as it starts and on
each full run, which also queues again the jobs of a process that stopped, so that an import
interrupted by a restart resumes by itself.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from django.conf import settings
from django.db import close_old_connections

from memory.runtime.lane import replies_under_way
from memory.services.history_jobs import (
    history_files_sweep,
    history_job_run,
    history_job_take,
    history_jobs_requeue_stopped,
    history_jobs_waiting,
)
from memory.services.importing import GiveWay

log = logging.getLogger(__name__)

_lock = threading.Lock()
_worker: dict[str, threading.Thread | None] = {"thread": None}
WORKER_NICENESS = 10
_again = threading.Event()  # a kick while the worker was finishing: it looks again before it ends


def _wait_for_quiet() -> None:
    if replies_under_way.count:
        replies_under_way.wait_until_none(deadline=time.monotonic() + settings.MEMORYOS["MAINTENANCE_MAX_DEFER_S"],
                                          quiet_s=settings.MEMORYOS["MAINTENANCE_QUIET_S"])


GIVE_WAY = GiveWay(wanted=lambda: replies_under_way.count > 0, wait=_wait_for_quiet)


def imports_kick() -> threading.Thread:
    """Start the worker unless it runs; returns it."""
    with _lock:
        thread = _worker["thread"]
        if thread is not None and thread.is_alive():
            _again.set()
            return thread
        _again.clear()
        thread = threading.Thread(target=_drain, name="memory-imports", daemon=True)
        _worker["thread"] = thread
        thread.start()
        return thread


def imports_resume() -> None:
    """Queue again what stopped with its process, start the worker when anything waits, and remove
    kept uploads that no job names any more."""
    if history_jobs_requeue_stopped() or history_jobs_waiting():
        imports_kick()
    history_files_sweep()


def _drain() -> None:
    close_old_connections()
    try:
        # The worker's share of the machine: below the server's other threads at the OS's scheduler
        # (Linux schedules threads one by one; the pools a library started before keep theirs).
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)
    except (AttributeError, OSError):
        pass
    try:
        skipped: set[int] = set()  # people whose claim the command holds: their jobs wait
        while True:
            job = history_job_take(skip_users=skipped)
            if job is None:
                with _lock:
                    if not _again.is_set():
                        _worker["thread"] = None
                        return
                    _again.clear()
                continue
            log.info("event=history_import_started job=%s user=%s", job.pk, job.user_id)
            if not history_job_run(job, give_way=GIVE_WAY):
                skipped.add(job.user_id)
    except Exception:
        log.exception("event=imports_worker_failed")
        with _lock:
            _worker["thread"] = None
    finally:
        close_old_connections()
