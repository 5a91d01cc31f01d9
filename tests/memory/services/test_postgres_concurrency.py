"""Many users' turns at once from several processes against one PostgreSQL database.

Each process is a small driver (this module run with `-m ... --drive`) that runs `turn_run` for
every user, interleaved, with maintenance inline, as several ASGI workers would. The processes
share the PostgreSQL test database; each has its own Qdrant Edge directory, because an embedded
shard can be opened by one process only (a deployment with several workers uses a Qdrant
server). Afterwards no page may be lost, duplicated or misplaced: seq 1..n per user, every page
complete and in exactly one tier, MTM pages in an active segment, segment page counts right, and
no more than STM_CAPACITY (7) complete pages left in STM.

Skipped unless the suite runs on PostgreSQL (DATABASE_URL=postgres://...).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROCESSES = 3
USERS = 4
TURNS = 4  # per user per process: 12 pages per user, so 5 of them leave STM
ROOT = Path(__file__).resolve().parents[3]
TOPICS = ("sailing boats", "sourdough bread", "marathon training", "jazz piano", "tomato seedlings")


def _is_postgres() -> bool:
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not _is_postgres(), reason="needs PostgreSQL: set DATABASE_URL=postgres://... "
                                                  "(SQLite serialises all writers; .ci/run runs this)"),
]


def _database_url(settings_dict: dict) -> str:
    auth = settings_dict.get("USER") or "postgres"
    if settings_dict.get("PASSWORD"):
        auth += f":{settings_dict['PASSWORD']}"
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}@{host}:{port}/{settings_dict['NAME']}"


def _driver_env(tmp_path: Path, index: int, database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "QDRANT_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "memoryos_site.settings",
        "DATABASE_URL": database_url,
        "MEMORYOS_VAR_DIR": str(tmp_path / f"var-{index}"),
        "QDRANT_PATH": str(tmp_path / f"qdrant-{index}"),  # one embedded shard per process
        "MEMORYOS_MAINTENANCE_MODE": "sync",
        "PYTHONPATH": str(ROOT),
    })
    return env


def test_turns_of_many_users_from_several_processes(memory_env, make_user, tmp_path):
    from django.db import connection

    assert connection.vendor == "postgresql"
    users = [make_user(f"concurrent{i}") for i in range(USERS)]
    go = tmp_path / "go"
    url = _database_url(connection.settings_dict)
    drivers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.memory.services.test_postgres_concurrency", "--drive", "--process", str(p),
             "--users", *[str(u.pk) for u in users], "--turns", str(TURNS), "--go", str(go)],
            cwd=ROOT, env=_driver_env(tmp_path, p, url), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        for p in range(PROCESSES)
    ]
    try:
        for driver in drivers:  # every process has loaded the model before any turn starts
            line = driver.stdout.readline()
            assert line.strip() == "ready", driver.stderr.read()[-3000:]
        go.touch()
        outputs = [driver.communicate(timeout=420) for driver in drivers]
    finally:
        for driver in drivers:
            if driver.poll() is None:
                driver.kill()
    for driver, (out, err) in zip(drivers, outputs, strict=True):
        assert driver.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])["turns"] == USERS * TURNS
    for user in users:
        _assert_memory_consistent(user)


def _assert_memory_consistent(user) -> None:
    from memory.models import DialoguePage, PageStatus, Segment, Tier, UserMemoryState

    n = PROCESSES * TURNS
    pages = list(DialoguePage.objects.filter(user=user).select_related("segment"))
    assert sorted(p.seq for p in pages) == list(range(1, n + 1)), "a page was lost or duplicated"
    assert {p.query for p in pages} == {_message(proc, user.username, i)
                                        for proc in range(PROCESSES) for i in range(TURNS)}
    assert all(p.status == PageStatus.COMPLETE for p in pages)
    for page in pages:
        if page.tier == Tier.STM:
            assert page.segment_id is None
        elif page.tier == Tier.MTM:
            assert page.segment is not None and page.segment.status == Segment.Status.ACTIVE
        else:
            assert page.tier == Tier.ARCHIVED and page.segment.status == Segment.Status.EVICTED
    stm = [p for p in pages if p.tier == Tier.STM]
    assert len(stm) == 7, f"{len(stm)} complete pages in STM"
    assert sorted(p.seq for p in stm) == list(range(n - 6, n + 1)), "STM must hold the newest pages"
    for segment in Segment.objects.filter(user=user):
        assert segment.page_count == DialoguePage.objects.filter(segment=segment).count()
    state = UserMemoryState.objects.get(user=user)
    assert state.next_seq == n + 1 and not state.maintenance_due and state.maintenance_failures == 0


def _message(process: int, username: str, turn: int) -> str:
    return f"Process {process} tells {username} about {TOPICS[(process + turn) % len(TOPICS)]}, turn {turn}."


# --------------------------------------------------------------------------- the driver process


def drive(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--drive", action="store_true")
    parser.add_argument("--process", type=int, required=True)
    parser.add_argument("--users", type=int, nargs="+", required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--go", type=Path, required=True)
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from memory.adapters import configured
    from memory.services.turns import turn_run

    configured.embedder().embed(["warm up"])
    print("ready", flush=True)
    deadline = time.monotonic() + 120
    while not args.go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("never told to start")
        time.sleep(0.02)
    users = list(get_user_model().objects.filter(pk__in=args.users).order_by("pk"))
    done = 0
    for turn in range(args.turns):
        for user in users:
            turn_run(user=user, message=_message(args.process, user.username, turn))
            done += 1
    configured.reset_adapters()
    print(json.dumps({"turns": done}), flush=True)


if __name__ == "__main__" and "--drive" in sys.argv:
    drive(sys.argv[1:])
