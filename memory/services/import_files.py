"""Where an uploaded history waits for its job (memory/services/history_jobs.py): var/imports/,
readable by this process's user alone; and how a person's files go when their memory is erased."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import transaction

from memory.models import HistoryImport


def imports_dir() -> Path:
    path = Path(settings.VAR_DIR) / "imports"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def history_jobs_forget(*, user) -> int:
    """Every job of the person's, with its kept file, gone (an erase); how many."""
    files = [name for name in HistoryImport.objects.filter(user=user).values_list("file", flat=True) if name]
    count, _ = HistoryImport.objects.filter(user=user).delete()

    def remove() -> None:
        for name in files:
            (imports_dir() / name).unlink(missing_ok=True)

    transaction.on_commit(remove)
    return count
