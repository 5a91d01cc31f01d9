"""Where a write's own time goes: wall time of each maintenance step (no profiler), over WRITES
writes (a chat turn's store, scale.page_write, then maintenance_run, as `bench scale` times
them) on a bench-built store of PAGES pages, beside their MiniLM time. The evidence for
BENCHMARKS.md, "Writes: a move reads three columns, promotion only what could be hot" and "A
write's own work, and recall's keyword searches".

    .venv/bin/python scripts/write_steps.py 10000 30
    .venv/bin/python scripts/write_steps.py 10000 30 --turns-beside

--turns-beside runs the variant tried and left in BENCHMARKS.md ("Tried and left: a write's
utterances embedded beside its other steps"): the new utterances' embedding starts on a worker
thread where maintenance would index them, and they are indexed just before the memory models'
steps, with those vectors. Its MiniLM time is then what the calls took beside the other steps.

Steps nest (page_write holds page_start and page_reply_store, maintenance_run the rest;
_readdress runs when maintenance's graph block closes): read the totals as such. Then the SQL statements a write
runs and their execution time (the database's own, without the ORM's building of them), the
costliest first. Last, how much of a write is Django's ORM: the time inside QuerySet and
Model calls (building, compiling and running statements, making rows into instances), less the
database's own execution of their SQL, beside what is left for everything else, and how much of
that rest is Qdrant Edge's own calls (every call on the shard: update, query, scroll, retrieve, flush...).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import sys
import time

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from memory.adapters import configured  # noqa: E402
from memory.benchmarks import common, scale  # noqa: E402
from memory.services import graph, maintenance, segments  # noqa: E402

STEPS = {
    maintenance: ("pages_interrupted_complete", "facts_from_turns", "_embed_missing", "index_turns",
                  "_link_chains", "_overflow_stm", "_rederive_segments", "_refresh_summaries", "segments_evict",
                  "_promote", "supersession_detect_pending", "_model_steps", "_settle", "maintenance_run"),
    graph: ("_readdress",),
    segments: ("_merge_topics", "_refresh_segment", "_record_move"),
    scale: ("page_write", "page_start", "page_reply_store"),
}


def adding_time(function, spent: collections.Counter, key: str):
    """`function`, with the wall time of each call added to spent[key]."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - started
    return wrapper


def timed(spent: collections.Counter, module, name: str) -> None:
    setattr(module, name, adding_time(getattr(module, name), spent, name))


# What runs or builds ORM statements: the time from the outermost such call to its return is the
# ORM's (a call inside another, get_or_create's filter say, counts once).
QUERYSET_CALLS = ("_fetch_all", "aggregate", "bulk_create", "bulk_update", "count", "create", "defer", "delete",
                  "exclude", "exists", "filter", "first", "get", "get_or_create", "in_bulk", "iterator", "last",
                  "only", "order_by", "select_for_update", "select_related", "update", "update_or_create",
                  "values", "values_list", "__getitem__")
MODEL_CALLS = ("save", "delete", "refresh_from_db")


def orm_timed(spent: collections.Counter) -> list[int]:
    """Time the ORM's outermost calls into spent["orm"]; returns the depth of ORM calls under way
    (the SQL wrapper reads it to tell the ORM's statements from the raw ones)."""
    from django.db.models import Model, QuerySet

    depth = [0]

    def outermost(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if depth[0]:
                return function(*args, **kwargs)
            depth[0] += 1
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent["orm"] += time.perf_counter() - started
                depth[0] -= 1
        return wrapper

    for cls, names in ((QuerySet, QUERYSET_CALLS), (Model, MODEL_CALLS)):
        for name in names:
            setattr(cls, name, outermost(getattr(cls, name)))
    return depth


class _TimedShard:
    """The Edge shard with each of its calls' wall time added to spent["edge"]."""

    def __init__(self, shard, spent: collections.Counter) -> None:
        self._shard, self._spent = shard, spent

    def __getattr__(self, name: str):
        return adding_time(getattr(self._shard, name), self._spent, "edge")


def edge_timed(spent: collections.Counter) -> None:
    from memory.adapters.vectors import EdgeVectorIndex

    shard_of = EdgeVectorIndex._shard

    @contextlib.contextmanager
    def timed(index):
        with shard_of(index) as shard:
            yield _TimedShard(shard, spent)

    EdgeVectorIndex._shard = timed


def turns_embedded_beside() -> None:
    """Maintenance as in the variant tried and left (see the module doc): index_turns only starts
    the embedding, and the indexing runs before _model_steps. Put in after the step timers, so
    the indexing is still timed as index_turns."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from memory.services import utterances

    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turns-beside")
    started: dict[int, Future] = {}
    index_turns, model_steps = maintenance.index_turns, maintenance._model_steps

    def start(*, user_id: int, **_options) -> int:
        texts = utterances.turn_texts(*utterances.unindexed_batch(user_id))
        embedder = configured.embedder()  # the metered one, resolved on this thread
        started[user_id] = worker.submit(lambda: dict(zip(texts, embedder.embed(texts), strict=True)))
        return 0

    def index_then_model_steps(user_id: int, report, now) -> None:
        future = started.pop(user_id, None)
        if future is not None:
            report.turns_indexed = index_turns(user_id=user_id, vectors=future.result())
        model_steps(user_id, report, now)

    maintenance.index_turns, maintenance._model_steps = start, index_then_model_steps


def main(size: int, writes: int, turns_beside: bool = False) -> None:
    spent: collections.Counter = collections.Counter()
    for module, names in STEPS.items():
        for name in names:
            if hasattr(module, name):
                timed(spent, module, name)
    if turns_beside:
        turns_embedded_beside()
    parts: collections.Counter = collections.Counter()  # a write's own time: "orm", its "sql", "edge"
    in_orm_call = orm_timed(parts)
    edge_timed(parts)
    configured.embedder().embed(["warm up"])
    gen = scale.TextGenerator(99)
    with common.bench_env(isolate_db=True, keep=False) as env:
        builder = scale.store_built(env, size, noise=0.05)
        messages = [gen.page(scale.TOPIC_NAMES[n % len(scale.TOPIC_NAMES)]) for n in range(writes + 3)]

        def write(message: tuple[str, str]) -> None:
            scale.page_write(builder.user, builder.sona, message)
            maintenance.maintenance_run(user_id=builder.user.pk)

        for message in messages[:3]:  # warm-up: caches, the first segment moves
            write(message)
        spent.clear()
        parts.clear()
        meter = common.EmbeddingMeter()
        statements: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])

        def executed(execute, sql, params, many, context):
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                statements[sql[:110]][0] += 1
                statements[sql[:110]][1] += time.perf_counter() - started
                if in_orm_call[0]:
                    parts["sql"] += time.perf_counter() - started

        started = time.perf_counter()
        with common.embeddings_metered(meter), connection.execute_wrapper(executed):
            for message in messages[3:]:
                write(message)
        total = (time.perf_counter() - started) * 1000 / writes
    minilm = meter.per(writes)["ms"]
    print(f"{'utterances embedded beside the other steps; ' if turns_beside else ''}"
          f"pages {size:,}  writes {writes}  write {total:.1f} ms  MiniLM {minilm:.1f} ms  "
          f"other {total - minilm:.1f} ms  write / MiniLM {total / minilm:.2f}  load {os.getloadavg()[0]:.1f}")
    for name, seconds in spent.most_common():
        print(f"  {name:30s} {1000 * seconds / writes:7.1f} ms")
    count = sum(n for n, _ in statements.values()) / writes
    executing = 1000 * sum(s for _, s in statements.values()) / writes
    print(f"SQL: {count:.1f} statements a write, {executing:.1f} ms executing them")
    for sql, (n, seconds) in sorted(statements.items(), key=lambda item: -item[1][1])[:8]:
        print(f"  {1000 * seconds / writes:6.2f} ms  {n / writes:4.1f}x  {sql}")
    in_orm, orm_sql, in_edge = (1000 * parts[key] / writes for key in ("orm", "sql", "edge"))
    print(f"ORM: {in_orm:.1f} ms a write inside QuerySet and Model calls: {in_orm - orm_sql:.1f} ms its own Python, "
          f"{orm_sql:.1f} ms executing its SQL")
    print(f"Besides MiniLM: the ORM's own Python {in_orm - orm_sql:.1f} ms, all SQL executing {executing:.1f} ms, "
          f"the rest {total - minilm - in_orm - (executing - orm_sql):.1f} ms (Qdrant Edge's calls {in_edge:.1f} ms "
          f"of it); at write / MiniLM 1.3 all of it gets {0.3 * minilm:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), "--turns-beside" in sys.argv[3:])
