"""Run a management command with the garbage collector switched off, counted, or with the
start-up heap frozen: the evidence for BENCHMARKS.md, "Where the 0.8 ms went".

    .venv/bin/python scripts/gc_around_command.py MODE bench scale --sizes 2000 --policies hybrid ...

MODE is `on` (as the product runs), `off` (gc.disable() before anything is imported), `count`
(collections and their time by generation, printed to stderr at exit) or `freeze` (counted, after
Django is set up and the embedder has embedded one text: gc.collect() then gc.freeze()).
"""

from __future__ import annotations

import atexit
import gc
import os
import runpy
import sys
import time

MODES = ("on", "off", "count", "freeze")


def count_collections() -> None:
    totals = {generation: [0, 0.0] for generation in range(3)}
    started: dict[int, float] = {}

    def callback(phase: str, info: dict) -> None:
        generation = info["generation"]
        if phase == "start":
            started[generation] = time.perf_counter()
        else:
            totals[generation][0] += 1
            totals[generation][1] += time.perf_counter() - started[generation]

    gc.callbacks.append(callback)
    atexit.register(lambda: print(
        "gc collections by generation (count, ms):",
        {g: (n, round(seconds * 1000, 1)) for g, (n, seconds) in totals.items()},
        f"frozen {gc.get_freeze_count():,}", file=sys.stderr))


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] not in MODES:
        sys.exit(__doc__)
    mode = sys.argv[1]
    sys.path.insert(0, os.getcwd())
    if mode == "off":
        gc.disable()
    if mode == "freeze":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
        import django

        django.setup()
        from memory.adapters import configured

        configured.embedder().embed(["warm up"])
        gc.collect()
        gc.freeze()
    if mode in ("count", "freeze"):
        count_collections()
    sys.argv = ["manage.py", *sys.argv[2:]]
    runpy.run_path("manage.py", run_name="__main__")


if __name__ == "__main__":
    main()
