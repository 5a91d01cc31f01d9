"""The person's page for bringing their history (memory/services/history_import.py): upload a
ChatGPT or Claude export or a transcript, watch its progress, read its summary.

The file is read and checked whole while the upload's request waits, as a stream from the upload's
temporary file within the import's limits (no model is called: a broken file, or one past a limit,
is refused at once with its first problem, and nothing is stored); the pages are then stored
on a thread of this server process (memory/runtime/threads.py), which owns the vector index, and
the page polls its progress (htmx, every second) from memory/services/history_jobs.py.
One import runs at a time for a person, across processes (memory/services/import_claims.py): the
claim is taken before the upload is read. A server process reads at most
MEMORYOS_HISTORY_IMPORT_READERS (2) uploads at once, so that people uploading together cannot add
up what each upload may cost; the next waits up to READ_WAIT_S for its turn.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from memory.runtime.threads import work_on_thread
from memory.services.common import MemoryInputError
from memory.services.history_import import HistoryRead, history_read, history_store
from memory.services.history_jobs import (
    history_job,
    history_job_ended,
    history_job_running,
    history_job_save,
    history_job_start,
)
from memory.services.import_claims import import_claim, import_claimed, import_release
from memory.web.htmx import refused_status

log = logging.getLogger(__name__)

READ_WAIT_S = 30
_readers: dict[int, threading.BoundedSemaphore] = {}
_readers_made = threading.Lock()


def _reader_turn() -> threading.BoundedSemaphore:
    count = max(1, settings.MEMORYOS_HISTORY_IMPORT_READERS)
    with _readers_made:
        return _readers.setdefault(count, threading.BoundedSemaphore(count))


def _job(user, job: str) -> dict[str, Any]:
    state = history_job(job)
    if state is None or state.get("user_id") != user.pk:  # another person's job is no job of yours
        raise Http404("No such import.")
    return state


def _run(job: str, user, read: HistoryRead, name: str, claim: str) -> None:
    try:
        with import_claimed(user=user, claim=claim):
            report = history_store(user=user, read=read, name=name, claim=claim,
                                   on_page=lambda done, total: history_job_save(job, done=done, total=total))
        history_job_save(job, status="done", report=report.as_dict())
    except MemoryInputError as exc:
        history_job_save(job, status="failed", error=str(exc))
    except Exception:
        log.exception("event=history_import_failed user=%s job=%s", user.pk, job)
        history_job_save(job, status="failed",
                         error="The import stopped on an error; run it again to add what is missing.")
    finally:
        history_job_ended(user.pk)


def _start(request) -> str:
    upload = request.FILES.get("export")
    if upload is None:
        raise MemoryInputError("Choose a file: conversations.json, the export's zip, or a .jsonl transcript.")
    limit = settings.MEMORYOS_HISTORY_IMPORT_MAX_BYTES
    if upload.size > limit:
        raise MemoryInputError(f"The file is {upload.size:,} bytes; at most {limit:,} are read.")
    claim = import_claim(user=request.user)  # before the file is read: one import at a time, in any process
    try:
        turn = _reader_turn()
        if not turn.acquire(timeout=READ_WAIT_S):
            raise MemoryInputError("The server is reading other uploads just now; try again in a minute.")
        try:
            with upload.open("rb") as stream:  # refused whole here, read as a stream
                read = history_read(user=request.user, data=stream, name=upload.name)
        finally:
            turn.release()
        job = uuid.uuid4().hex
        history_job_start(job, user_id=request.user.pk, status="running", name=upload.name, format=read.format,
                          conversations=read.summary["conversations"], done=0, total=read.pages)
        work_on_thread("history-import", _run, job, request.user, read, upload.name, claim)
    except BaseException:
        import_release(user=request.user, claim=claim)
        raise
    return job


@login_required
@require_http_methods(["GET", "POST"])
def history_upload(request):
    error = ""
    if request.method == "POST":
        try:
            return redirect("history_import_job", job=_start(request))
        except MemoryInputError as exc:
            error = str(exc)
    running = history_job_running(request.user.pk)
    return render(request, "memory/history_import.html",
                  {"error": error, "running": running, "max_bytes": settings.MEMORYOS_HISTORY_IMPORT_MAX_BYTES},
                  status=refused_status(request, bool(error)))


@login_required
@require_http_methods(["GET"])
def history_import_job(request, job: str):
    state = _job(request.user, job)
    template = "memory/history_import.html#progress" if request.htmx else "memory/history_import.html"
    return render(request, template, {"job": job, "state": state})
