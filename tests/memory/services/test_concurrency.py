"""Concurrent turns of one user lose no page and never put a page in two places."""

from __future__ import annotations

import threading

import pytest
from django.db import close_old_connections

from memory.models import DialoguePage, PageStatus, Tier
from memory.services.turns import turn_run

pytestmark = pytest.mark.usefixtures("memory_env")


def test_two_threads_of_one_user(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 3}
    user = make_user()
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            for i in range(6):
                turn_run(user=user, message=f"{name} says message {i} about sailing boats.")
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    pages = list(DialoguePage.objects.filter(user=user))
    assert len(pages) == 12
    assert sorted(p.seq for p in pages) == list(range(1, 13))
    assert all(p.status == PageStatus.COMPLETE for p in pages)
    assert sum(p.tier == Tier.STM for p in pages) == 3
    assert all((p.tier == Tier.MTM) == (p.segment_id is not None) for p in pages)
    assert {p.query for p in pages} == {f"{n} says message {i} about sailing boats."
                                        for n in ("left", "right") for i in range(6)}
