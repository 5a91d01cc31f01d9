"""The state of a person's history imports as their page shows it (memory/web/history_import.py):
in Django's cache (Redis when configured, so any server process can answer), for JOB_TTL_S.

A job's state names its owner; the person's jobs are listed under their id, so that erasing the
person's memory (memory/services/deletion.py) takes their import pages, with the titles and counts
they show, away at once instead of a day later.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache

JOB_TTL_S = 24 * 3600


def _key(job: str) -> str:
    return f"history-import:{job}"


def _running_key(user_id: int) -> str:
    return f"history-import-running:{user_id}"


def _jobs_key(user_id: int) -> str:
    return f"history-import-jobs:{user_id}"


def history_job(job: str) -> dict[str, Any] | None:
    return cache.get(_key(job))


def history_job_start(job: str, *, user_id: int, **state: Any) -> None:
    """A new job of the person's, running from now."""
    cache.set(_jobs_key(user_id), [*(cache.get(_jobs_key(user_id)) or []), job][-50:], JOB_TTL_S)
    cache.set(_running_key(user_id), job, JOB_TTL_S)
    cache.set(_key(job), {**state, "user_id": user_id}, JOB_TTL_S)


def history_job_save(job: str, **state: Any) -> None:
    """More of a job's state (its progress, its end); nothing once the job is gone (erased)."""
    current = cache.get(_key(job))
    if current is not None:
        cache.set(_key(job), {**current, **state}, JOB_TTL_S)


def history_job_running(user_id: int) -> str | None:
    return cache.get(_running_key(user_id))


def history_job_ended(user_id: int) -> None:
    cache.delete(_running_key(user_id))


def history_jobs_forget(user_id: int) -> None:
    """Every import job of the person's, gone."""
    jobs = cache.get(_jobs_key(user_id)) or []
    cache.delete_many([_key(job) for job in jobs] + [_jobs_key(user_id), _running_key(user_id)])
