"""A person's history uploads as jobs (HistoryImport rows), so that storing them is queued, shares
the machine, shows progress that moves and survives a restart.

- The upload is read and checked whole as it arrives (memory/services/history_import.py
  history_read: a broken file is refused at once, nothing kept); then its file is kept under
  var/imports/ and the job queued (history_job_queue). A person has one job queued or running at a
  time.
- The import worker (memory/runtime/imports.py) takes the jobs one at a time, oldest first
  (history_job_take), and runs each under the person's import claim (history_job_run), giving way
  to replies between pages; each page stored moves the job's count.
- A running job whose person's claim is no longer held lost its process (a restart, kill -9): it is
  queued again (history_jobs_requeue_stopped) and resumed, adding only what is missing.
- Erasing the person's memory deletes their jobs and files (memory/services/import_files.py
  history_jobs_forget); the job's running import finds its claim taken back and stops at its
  next page.
"""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta
from typing import BinaryIO

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from memory.models import HistoryImport, UserMemoryState
from memory.services.common import MemoryInputError
from memory.services.history_import import HistoryRead, history_read, history_store
from memory.services.import_claims import ImportRunning, import_claimed
from memory.services.import_files import imports_dir
from memory.services.importing import GiveWay

log = logging.getLogger(__name__)

Status = HistoryImport.Status
OPEN = (Status.QUEUED, Status.RUNNING)
STOPPED_AFTER = timedelta(seconds=60)  # a running job unmoved this long, its claim free, has stopped


def history_job_queue(*, user, read: HistoryRead, stream: BinaryIO, name: str) -> HistoryImport:
    """Keep the upload's file and queue its job (the file was read and checked: `read`)."""
    job = HistoryImport(user=user, name=name[:255], format=read.format,
                        conversations=read.summary["conversations"], total=read.pages)
    job.file = job.id.hex
    stream.seek(0)
    with (imports_dir() / job.file).open("wb") as kept:
        shutil.copyfileobj(stream, kept, 1024 * 1024)
    job.save()
    return job


def history_job_of(*, user, job_id) -> HistoryImport | None:
    """The person's job; None for another person's (no job of theirs) or an unknown id."""
    try:
        return HistoryImport.objects.filter(user=user, id=job_id).first()
    except (ValueError, TypeError, ValidationError):  # not a job id at all
        return None


def history_job_current(*, user) -> HistoryImport | None:
    """The person's job queued or running, if any."""
    return HistoryImport.objects.filter(user=user, status__in=OPEN).order_by("created_at").first()


def history_jobs_ahead(job: HistoryImport) -> int:
    """Jobs of other people the worker takes before this queued one."""
    if job.status != Status.QUEUED:
        return 0
    return HistoryImport.objects.filter(status__in=OPEN, created_at__lt=job.created_at).count()


def history_job_take(*, skip_users: set[int] = frozenset()) -> HistoryImport | None:
    """The oldest queued job (of a person not in `skip_users`), marked running; None when none."""
    for job in HistoryImport.objects.filter(status=Status.QUEUED).exclude(user_id__in=skip_users).order_by(
            "created_at")[:20]:
        if HistoryImport.objects.filter(pk=job.pk, status=Status.QUEUED).update(status=Status.RUNNING):
            job.status = Status.RUNNING
            return job
    return None


def _progress(job_id, done: int, total: int) -> None:
    HistoryImport.objects.filter(pk=job_id).update(done=done, total=total, updated_at=timezone.now())


def _finish(job: HistoryImport, **fields) -> None:
    HistoryImport.objects.filter(pk=job.pk).update(file="", updated_at=timezone.now(), **fields)
    (imports_dir() / job.file).unlink(missing_ok=True)


def history_job_run(job: HistoryImport, *, give_way: GiveWay | None = None) -> bool:
    """Store a taken job's pages under the person's import claim; False when the claim is held
    elsewhere (the command imports for them), the job queued again for later."""
    user = job.user
    try:
        with import_claimed(user=user) as claim:
            with (imports_dir() / job.file).open("rb") as stream:
                read = history_read(user=user, data=stream, name=job.name)
            report = history_store(user=user, read=read, name=job.name, claim=claim, give_way=give_way,
                                   on_page=lambda done, total: _progress(job.pk, done, total))
    except ImportRunning:
        if not HistoryImport.objects.filter(pk=job.pk).exists():
            return True  # erased while it ran: the erase took the claim back, and the job with it
        HistoryImport.objects.filter(pk=job.pk, status=Status.RUNNING).update(status=Status.QUEUED)
        return False
    except MemoryInputError as exc:
        _finish(job, status=Status.FAILED, error=str(exc))
        return True
    except Exception:
        log.exception("event=history_import_failed user=%s job=%s", user.pk, job.pk)
        _finish(job, status=Status.FAILED,
                error="The import stopped on an error; upload the file again to add what is missing.")
        return True
    _finish(job, status=Status.DONE, report=report.as_dict(), done=report.added + report.already)
    return True


def history_jobs_requeue_stopped() -> int:
    """Queue again the running jobs whose person's import claim is not held and that have not
    moved for STOPPED_AFTER (their process stopped); how many."""
    now = timezone.now()
    free = UserMemoryState.objects.filter(
        Q(import_claim="") | Q(import_claimed_until__isnull=True) | Q(import_claimed_until__lt=now)
    ).values("user_id")
    stopped = HistoryImport.objects.filter(status=Status.RUNNING, user_id__in=free,
                                           updated_at__lt=now - STOPPED_AFTER)
    count = stopped.update(status=Status.QUEUED)
    if count:
        log.warning("event=history_imports_requeued count=%s", count)
    return count


def history_files_sweep(*, older_than: timedelta = timedelta(hours=1)) -> int:
    """Remove kept uploads no job names any more (a person deleted with their jobs, say); how many."""
    named = set(HistoryImport.objects.exclude(file="").values_list("file", flat=True))
    cutoff = (timezone.now() - older_than).timestamp()
    removed = 0
    for path in imports_dir().iterdir():
        if path.name not in named and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def history_jobs_waiting() -> bool:
    return HistoryImport.objects.filter(status=Status.QUEUED).exists()
