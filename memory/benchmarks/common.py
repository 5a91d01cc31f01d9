"""What every `manage.py bench` subcommand shares: timings, tables, an isolated run, sizes.

The API, kept small on purpose:

- `summarize_ms(values)`: n, mean, p50, p95, max of timings in milliseconds;
  `percentile(values, q)` the linear-interpolated q-th percentile (q in 0..100).
- `render_table(headers, rows, title=None)`: a plain-text table; numbers right-aligned.
- `bench_env(isolate_db=True, keep=False)`: a context manager for a run that leaves nothing
  behind and touches nothing of the installation's data. It yields a `BenchEnv` with
  `make_user()` (throwaway users), `index` (the vector index of the run) and `workdir`.
    * database: a fresh one, created and migrated the way Django creates its test database
      (a SQLite file in the run's temp folder, or `<NAME>_bench` on PostgreSQL), dropped on
      exit. `isolate_db=False` uses the current database (tests, which already have their own)
      and deletes the throwaway users on exit instead.
    * vectors: a private Qdrant Edge directory in the temp folder (one process only may open
      an embedded shard, so a benchmark never opens the server's), or, when QDRANT_URL is set,
      a throwaway collection on that server, deleted on exit.
    * maintenance runs inline (MAINTENANCE_MODE=sync), so a benchmark measures all of it.
    * files attached to turns are stored in the run's folder.
- `progress(total, desc, enabled=True)`, `progress_iter(items, desc, enabled=True)`: tqdm bars
  on stderr, so that stdout stays clean for --json.
- `timed_ms(call)`: (milliseconds, result) of one call.
- `embeddings_metered()`: a context manager yielding an `EmbeddingMeter` that counts the texts
  the product embeds inside the block and the time their embedding took (the floor of a write
  path that must embed them).
- `peak_rss_mb()`, `current_rss_mb()`, `dir_size_mb(path)`, `database_size_mb()`, `today()`,
  `machine()`: what a result records about where and when it was measured.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memory.adapters.vectors import dir_size_mb

# --------------------------------------------------------------------------- numbers


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100), interpolated between ranks like numpy's default."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize_ms(values: Sequence[float]) -> dict[str, float]:
    """Timings in milliseconds → {n, mean, p50, p95, max}, rounded to 0.01 ms."""
    if not values:
        return {"n": 0, "mean": math.nan, "p50": math.nan, "p95": math.nan, "max": math.nan}
    return {"n": len(values), "mean": round(sum(values) / len(values), 2),
            "p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2),
            "max": round(max(values), 2)}


# --------------------------------------------------------------------------- tables


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    """A plain-text table; numbers are right-aligned, text left-aligned, missing values '-'."""
    cells = [[_cell(v) for v in row] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) if rows else False
               for i in range(len(headers))]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    out = [title] if title else []
    out += [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


# --------------------------------------------------------------------------- progress


def progress(total: int, desc: str, enabled: bool = True) -> tqdm:
    """A progress bar on stderr (stdout stays clean for --json)."""
    return tqdm(total=total, desc=desc, unit="it", file=sys.stderr, disable=not enabled,
                dynamic_ncols=True, leave=False)


def progress_iter(items: Sequence[Any], desc: str, enabled: bool = True) -> Iterator[Any]:
    bar = progress(len(items), desc, enabled)
    try:
        for item in items:
            yield item
            bar.update(1)
    finally:
        bar.close()


# --------------------------------------------------------------------------- process and disk


def today() -> str:
    return datetime.date.today().isoformat()


def machine() -> str:
    """'2 cores, 23.4 GiB RAM, Python 3.11.9, load 0.4': where the numbers were measured, and how
    busy the machine was (the 1-minute load average) when asked."""
    try:
        kib = int(next(line for line in Path("/proc/meminfo").read_text().splitlines()
                       if line.startswith("MemTotal")).split()[1])
        memory = f", {kib / 2**20:.1f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        memory = ""
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{os.cpu_count()} cores{memory}, Python {platform.python_version()}{load}"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def current_rss_mb() -> float:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return math.nan
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def database_size_mb() -> float:
    """Size of the current database: the SQLite file and its WAL, or pg_database_size."""
    from django.db import connection

    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        name = str(connection.settings_dict["NAME"])
        if name == ":memory:" or name.startswith("file:"):
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA page_count")
                pages = cursor.fetchone()[0]
                cursor.execute("PRAGMA page_size")
                return round(pages * cursor.fetchone()[0] / 2**20, 2)
        return round(sum(os.path.getsize(p) for p in (name, name + "-wal") if os.path.exists(p)) / 2**20, 2)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_database_size(current_database())")
            return round(cursor.fetchone()[0] / 2**20, 2)
    return math.nan


# --------------------------------------------------------------------------- isolated runs


@dataclass
class BenchEnv:
    workdir: Path
    isolated_db: bool
    vector_location: str
    _users: list[Any] = field(default_factory=list)

    @property
    def index(self):
        from memory.adapters import configured

        return configured.vector_index()

    def make_user(self, prefix: str = "bench"):
        """A throwaway user (no usable password)."""
        from django.contrib.auth import get_user_model

        user = get_user_model()(username=f"{prefix}-{uuid.uuid4().hex[:10]}")
        user.set_unusable_password()
        user.save()
        self._users.append(user)
        return user

    def shard_size_mb(self) -> float:
        """Disk size of the embedded shard; NaN for a Qdrant server (its disk is not ours to read)."""
        shard_dir = getattr(self.index, "shard_dir", None)
        if shard_dir is None:
            return math.nan
        self.index.flush()
        return dir_size_mb(shard_dir)


def _reset_vectors() -> None:
    from memory.adapters import configured

    if configured.vector_index.cache_info().currsize:
        close = getattr(configured.vector_index(), "close", None)
        if close:
            close()
    configured.vector_index.cache_clear()


@contextmanager
def _settings_override(**values: Any) -> Iterator[None]:
    from django.conf import settings

    missing = object()
    saved = {name: getattr(settings, name, missing) for name in values}
    for name, value in values.items():
        setattr(settings, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                delattr(settings, name)
            else:
                setattr(settings, name, value)


@contextmanager
def _fresh_database(workdir: Path) -> Iterator[None]:
    """A new, migrated database, as Django builds its test database; dropped on exit."""
    from django.db import connection

    test_settings = connection.settings_dict.setdefault("TEST", {})
    saved_test_name = test_settings.get("NAME")
    if connection.vendor == "sqlite":
        test_settings["NAME"] = str(workdir / "bench.sqlite3")
    else:
        test_settings["NAME"] = f"{connection.settings_dict['NAME']}_bench"
    old_name = connection.settings_dict["NAME"]
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=False)
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
        test_settings["NAME"] = saved_test_name
        if saved_test_name is None:
            test_settings.pop("NAME", None)


@contextmanager
def bench_env(*, isolate_db: bool = True, keep: bool = False) -> Iterator[BenchEnv]:
    """An isolated run: fresh database (or throwaway users), private vectors, inline maintenance."""
    from django.conf import settings

    workdir = Path(tempfile.mkdtemp(prefix="memoryos-bench-"))
    collection = f"bench_{uuid.uuid4().hex[:12]}"
    server = bool(settings.QDRANT_URL)
    env = BenchEnv(workdir=workdir, isolated_db=isolate_db,
                   vector_location=f"{settings.QDRANT_URL} collection {collection}" if server
                   else str(workdir / "qdrant"))
    overrides = {"QDRANT_PATH": workdir / "qdrant",
                 "MEMORYOS": {**settings.MEMORYOS, "MAINTENANCE_MODE": "sync"},
                 "STORAGES": {**settings.STORAGES, "memory_files": {
                     "BACKEND": "django.core.files.storage.FileSystemStorage",
                     "OPTIONS": {"location": str(workdir / "files")}}}}
    if server:
        overrides["QDRANT_COLLECTION"] = collection
    _reset_vectors()
    try:
        with _settings_override(**overrides), _file_storage_reset():
            with _fresh_database(workdir) if isolate_db else _noop():
                try:
                    yield env
                finally:
                    if server and not keep:
                        _drop_server_collection()
                    _reset_vectors()
                    if not isolate_db:
                        for user in env._users:
                            user.delete()
    finally:
        _reset_vectors()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def _noop() -> Iterator[None]:
    yield


@contextmanager
def _file_storage_reset() -> Iterator[None]:
    """Attached files go to the run's folder while it lasts (Django builds storages once, from
    settings.STORAGES, and keeps them): the handler forgets them on the way in and out."""
    from django.core.files.storage import storages

    def reset() -> None:
        storages._backends = None
        storages._storages = {}
        storages.__dict__.pop("backends", None)

    reset()
    try:
        yield
    finally:
        reset()


def _drop_server_collection() -> None:
    from memory.adapters import configured

    index = configured.vector_index()
    client = getattr(index, "client", None)
    if client is not None:
        client.delete_collection(index.collection)


def readdress_per_write():
    """The write path as it was before graph.readdress_once: the graph re-addressed on every write
    (the baseline of bench ingest and bench scale's write sample)."""
    from contextlib import nullcontext
    from unittest import mock

    from memory.services import graph

    return mock.patch.object(graph, "readdress_once", nullcontext)


@dataclass
class EmbeddingMeter:
    """Texts embedded and seconds spent embedding them, summed over the calls in a block."""

    calls: int = 0
    texts: int = 0
    seconds: float = 0.0

    def per(self, units: int) -> dict[str, float]:
        """Texts and embedding milliseconds per unit (a turn, a page), and the units a second the
        embeddings alone would allow: what no other saving can take a write path past."""
        if units <= 0 or self.seconds <= 0:
            return {"texts": math.nan, "ms": math.nan, "ceiling_per_s": math.nan}
        return {"texts": round(self.texts / units, 2), "ms": round(1000 * self.seconds / units, 2),
                "ceiling_per_s": round(units / self.seconds, 1)}


class _MeteredEmbedder:
    """The configured embedder, its embed() calls counted into a meter."""

    def __init__(self, inner, meter: EmbeddingMeter) -> None:
        self._inner, self._meter = inner, meter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed(self, texts):
        started = time.perf_counter()
        try:
            return self._inner.embed(texts)
        finally:
            self._meter.calls += 1
            self._meter.texts += len(texts)
            self._meter.seconds += time.perf_counter() - started


@contextmanager
def embeddings_metered(meter: EmbeddingMeter | None = None) -> Iterator[EmbeddingMeter]:
    """Count what the product embeds inside the block (every write embeds through
    memory.adapters.configured.embedder), into `meter` when given (to sum several blocks)."""
    from unittest import mock

    from memory.adapters import configured

    meter = meter or EmbeddingMeter()
    # One wrapper for the block: what the product keeps per embedder (the sona names it embedded)
    # must see the same embedder on every call, as it does unmetered.
    metered = _MeteredEmbedder(configured.embedder(), meter)
    with mock.patch.object(configured, "embedder", lambda: metered):
        yield meter


def timed_ms(call: Callable[[], Any]) -> tuple[float, Any]:
    """(milliseconds, result) of one call."""
    started = time.perf_counter()
    result = call()
    return (time.perf_counter() - started) * 1000, result
