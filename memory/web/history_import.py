"""The person's page for bringing their history (memory/services/history_import.py): upload a
ChatGPT or Claude export or a transcript, watch its progress, read its summary.

The file is read and checked whole while the upload's request waits, as a stream from the upload's
temporary file within the import's limits (no model is called: a broken file, or one past a limit,
is refused at once with its first problem, and nothing is stored); then its job is queued
(memory/services/history_jobs.py) and stored by the import worker (memory/runtime/imports.py), and
the page polls its progress (htmx, every second) from the job's row, so any process can answer.
A person has one import at a time: an upload is refused while one of theirs is queued or running,
and the person's import claim (memory/services/import_claims.py) is taken before the upload is
read. A server process reads at most MEMORYOS_HISTORY_IMPORT_READERS (2) uploads at once, so that
people uploading together cannot add up what each upload may cost; the next waits up to
READ_WAIT_S for its turn.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from memory.runtime.imports import imports_kick
from memory.services.common import MemoryInputError
from memory.services.export_bundle import is_bundle, memory_import_bundle
from memory.services.history_import import history_read
from memory.services.history_jobs import history_job_current, history_job_of, history_job_queue, history_jobs_ahead
from memory.services.import_claims import import_claimed
from memory.services.portable import Summary
from memory.web.htmx import refused_status

if TYPE_CHECKING:
    from memory.models import HistoryImport

READ_WAIT_S = 30
_readers: dict[int, threading.BoundedSemaphore] = {}
_readers_made = threading.Lock()


def _reader_turn() -> threading.BoundedSemaphore:
    count = max(1, settings.MEMORYOS_HISTORY_IMPORT_READERS)
    with _readers_made:
        return _readers.setdefault(count, threading.BoundedSemaphore(count))


def _state(job: HistoryImport) -> dict[str, Any]:
    return {"status": job.status, "name": job.name, "format": job.format, "conversations": job.conversations,
            "done": job.done, "total": job.total, "report": job.report, "error": job.error,
            "ahead": history_jobs_ahead(job)}


def _start(request) -> HistoryImport | Summary:
    upload = request.FILES.get("export")
    if upload is None:
        raise MemoryInputError("Choose a file: conversations.json, the export's zip, or a .jsonl transcript.")
    limit = settings.MEMORYOS_HISTORY_IMPORT_MAX_BYTES
    if upload.size > limit:
        raise MemoryInputError(f"The file is {upload.size:,} bytes; at most {limit:,} are read.")
    # Before the file is read: one import at a time, in any process (the claim), and one job.
    with import_claimed(user=request.user):
        if history_job_current(user=request.user) is not None:
            raise MemoryInputError("An import of yours is still running; wait for it to finish.")
        turn = _reader_turn()
        if not turn.acquire(timeout=READ_WAIT_S):
            raise MemoryInputError("The server is reading other uploads just now; try again in a minute.")
        try:
            with upload.open("rb") as stream:  # refused whole here, read as a stream
                if is_bundle(stream):  # /me/'s "Download everything": the memory restored as it was
                    return memory_import_bundle(user=request.user, source=stream)
                read = history_read(user=request.user, data=stream, name=upload.name)
                job = history_job_queue(user=request.user, read=read, stream=stream, name=upload.name)
        finally:
            turn.release()
    imports_kick()
    return job


@login_required
@require_http_methods(["GET", "POST"])
def history_upload(request):
    error = ""
    if request.method == "POST":
        try:
            started = _start(request)
        except MemoryInputError as exc:
            error = str(exc)
        else:
            if isinstance(started, Summary):
                counts = ", ".join(f"{count} {name}" for name, count in started.records.items() if count)
                messages.success(request, f"Your memory is restored from the export ({counts}).")
                return redirect("about_me")
            return redirect("history_import_job", job=started.id)
    running = history_job_current(user=request.user)
    return render(request, "memory/history_import.html",
                  {"error": error, "running": running.id if running else None,
                   "max_bytes": settings.MEMORYOS_HISTORY_IMPORT_MAX_BYTES},
                  status=refused_status(request, bool(error)))


@login_required
@require_http_methods(["GET"])
def history_import_job(request, job: str):
    found = history_job_of(user=request.user, job_id=job)
    if found is None:  # another person's job is no job of yours
        raise Http404("No such import.")
    template = "memory/history_import.html#progress" if request.htmx else "memory/history_import.html"
    return render(request, template, {"job": found.id, "state": _state(found)})
