"""Another person's turns while an upload is stored (issue 49, finding 5): the time from message
to stored reply of TURNS offline-engine turns, 0.3 s apart, with no import, with the import worker
giving way to replies (the default, memory/runtime/imports.py), and with it not giving way; the
export is MESSAGES messages made here (memory/benchmarks/exports.py). A fresh SQLite database and
shard in a temporary folder; real MiniLM; one process, as one server.

    .venv/bin/python scripts/import_fairness.py [MESSAGES] [TURNS]

Defaults: 600 messages (300 pages), 15 turns. Ratios are to the no-import run of the same process.
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["MEMORYOS_VAR_DIR"] = tempfile.mkdtemp(prefix="memoryos-fairness-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from memory.benchmarks.exports import large_chatgpt_export  # noqa: E402
from memory.runtime import imports  # noqa: E402
from memory.services.history_import import history_read  # noqa: E402
from memory.services.history_jobs import history_job_queue  # noqa: E402
from memory.services.importing import GiveWay  # noqa: E402
from memory.services.turns import turn_run  # noqa: E402


def _p95(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(0.95 * len(values)))]


def _turns(user, count: int) -> list[float]:
    took = []
    for number in range(count):
        started = time.perf_counter()
        turn_run(user=user, message=f"What did I say about the garden, question {number}?")
        took.append((time.perf_counter() - started) * 1000)
        time.sleep(0.3)
    return took


def _run(label: str, data: bytes, turns: int, give_way: GiveWay | None, importing: bool) -> list[float]:
    users = get_user_model().objects
    importer = users.create_user(f"importer-{label}", password="a-long-secret-1")
    talker = users.create_user(f"talker-{label}", password="a-long-secret-1")
    turn_run(user=talker, message="Hello there, I like gardening.")  # the process warm
    job = worker = None
    if importing:
        imports.GIVE_WAY = give_way
        stream = io.BytesIO(data)
        read = history_read(user=importer, data=stream, name="conversations.json")
        job = history_job_queue(user=importer, read=read, stream=stream, name="conversations.json")
        worker = imports.imports_kick()
        time.sleep(3)  # the import under way
    took = _turns(talker, turns)
    extra = ""
    if job is not None:
        job.refresh_from_db()
        during = job.done
        worker.join(900)
        job.refresh_from_db()
        if job.status != "done":
            raise SystemExit(f"the import ended {job.status}: {job.error}")
        extra = f"  (import: {during} pages stored while measured, then {job.done}/{job.total})"
    print(f"{label:<22} p50 {statistics.median(took):8.1f} ms  p95 {_p95(took):8.1f} ms{extra}", flush=True)
    return took


def main() -> None:
    messages = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    call_command("migrate", verbosity=0)
    data = large_chatgpt_export(messages)
    giving_way = imports.GIVE_WAY
    base = _run("no import", data, turns, None, importing=False)
    on = _run("import giving way", data, turns, giving_way, importing=True)
    off = _run("import not giving way", data, turns, GiveWay(wanted=lambda: False, wait=lambda: None), importing=True)
    for label, took in (("giving way", on), ("not giving way", off)):
        print(f"{label}: p50 {statistics.median(took) / statistics.median(base):.2f}x, "
              f"p95 {_p95(took) / _p95(base):.2f}x of no import")


if __name__ == "__main__":
    main()
