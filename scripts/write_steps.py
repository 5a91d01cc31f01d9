"""Where a write's own time goes: wall time of each maintenance step (no profiler), over WRITES
writes (page_start + page_reply_store + maintenance_run, as `bench scale` times them) on a
bench-built store of PAGES pages, beside their MiniLM time. The evidence for BENCHMARKS.md,
"Writes: a move reads three columns, promotion only what could be hot".

    .venv/bin/python scripts/write_steps.py 10000 30

Steps nest (page_reply_store holds _said_embedded, maintenance_run the rest; _readdress runs
when maintenance's graph block closes): read the totals as such. Then the SQL statements a write
runs and their execution time (the database's own, without the ORM's building of them), the
costliest first.
"""

from __future__ import annotations

import collections
import functools
import os
import sys
import time

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory.adapters import configured  # noqa: E402
from memory.benchmarks import common, scale  # noqa: E402
from memory.services import graph, maintenance, pages, segments  # noqa: E402

STEPS = {
    maintenance: ("pages_interrupted_complete", "facts_from_turns", "_embed_missing", "index_turns",
                  "_link_chains", "_overflow_stm", "_rederive_segments", "_refresh_summaries", "segments_evict",
                  "_promote", "supersession_detect_pending", "_model_steps", "_settle", "maintenance_run"),
    graph: ("_readdress",),
    segments: ("_merge_topics", "_refresh_segment", "_record_move"),
    pages: ("page_start", "page_reply_store", "_said_embedded"),
}


def timed(spent: collections.Counter, module, name: str) -> None:
    function = getattr(module, name)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    setattr(module, name, wrapper)


def main(size: int, writes: int) -> None:
    spent: collections.Counter = collections.Counter()
    for module, names in STEPS.items():
        for name in names:
            if hasattr(module, name):
                timed(spent, module, name)
    configured.embedder().embed(["warm up"])
    options = {"seed": 7, "pool": 1000, "noise": 0.05, "segment_pages": 50, "in_place": False, "keep": False}
    gen = scale.TextGenerator(99)
    with common.bench_env(isolate_db=True, keep=False) as env:
        builder = scale.StoreBuilder(env, pages=size, options=options,
                                     pool=scale.embedding_pool(min(1000, size), 7, False))
        builder.build(False)
        messages = [gen.page(scale.TOPIC_NAMES[n % len(scale.TOPIC_NAMES)]) for n in range(writes + 3)]

        def write(message: tuple[str, str]) -> None:
            page = pages.page_start(user=builder.user, query=message[0], sona=builder.sona, timestamp=timezone.now())
            pages.page_reply_store(page=page, response=message[1], reply_model="bench")
            maintenance.maintenance_run(user_id=builder.user.pk)

        for message in messages[:3]:  # warm-up: caches, the first segment moves
            write(message)
        spent.clear()
        meter = common.EmbeddingMeter()
        statements: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])

        def executed(execute, sql, params, many, context):
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                statements[sql[:110]][0] += 1
                statements[sql[:110]][1] += time.perf_counter() - started

        started = time.perf_counter()
        with common.embeddings_metered(meter), connection.execute_wrapper(executed):
            for message in messages[3:]:
                write(message)
        total = (time.perf_counter() - started) * 1000 / writes
    minilm = meter.per(writes)["ms"]
    print(f"pages {size:,}  writes {writes}  write {total:.1f} ms  MiniLM {minilm:.1f} ms  "
          f"other {total - minilm:.1f} ms  write / MiniLM {total / minilm:.2f}  load {os.getloadavg()[0]:.1f}")
    for name, seconds in spent.most_common():
        print(f"  {name:30s} {1000 * seconds / writes:7.1f} ms")
    count = sum(n for n, _ in statements.values()) / writes
    executing = 1000 * sum(s for _, s in statements.values()) / writes
    print(f"SQL: {count:.1f} statements a write, {executing:.1f} ms executing them")
    for sql, (n, seconds) in sorted(statements.items(), key=lambda item: -item[1][1])[:8]:
        print(f"  {1000 * seconds / writes:6.2f} ms  {n / writes:4.1f}x  {sql}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
