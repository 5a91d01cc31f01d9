"""Micro-benchmark of the embedded vector index (Qdrant Edge) at 10k and 100k points.

Random 384-d points (MiniLM's size) with short random texts, spread over a few users; prints
insert time and p50/p95 latency of filtered dense and keyword searches for one user, before and
after `optimize()` (Edge builds HNSW only when asked). Runs in a temporary directory.

    .venv/bin/python scripts/bench_vectors.py [--sizes 10000 100000] [--no-optimize]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory.adapters.vectors import EdgeVectorIndex  # noqa: E402
from memory.engine.ports import VectorPoint  # noqa: E402

DIMENSION = 384
USERS = 5
QUERIES = 200
BATCH = 1_000
VOCABULARY = [f"word{n}" for n in range(5_000)]


def make_points(count: int, rng: np.random.Generator) -> list[VectorPoint]:
    vectors = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    # Zipf-like word choice so some terms are common and most are rare, as in real text.
    words = rng.zipf(1.3, size=(count, 12)) % len(VOCABULARY)
    return [
        VectorPoint(
            id=str(uuid.UUID(int=n + 1)),
            vector=vectors[n].tolist(),
            payload={"user_id": f"user{n % USERS}", "kind": "page" if n % 4 else "segment",
                     "tier": "short"},
            text=" ".join(VOCABULARY[w] for w in words[n]),
        )
        for n in range(count)
    ]


def percentiles(timings: list[float]) -> str:
    ms = sorted(t * 1e3 for t in timings)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    return f"p50 {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms"


def timed(call: Callable[[], object], repeats: int) -> list[float]:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        timings.append(time.perf_counter() - start)
    return timings


def measure_searches(index: EdgeVectorIndex, rng: np.random.Generator, label: str) -> None:
    queries = rng.standard_normal((QUERIES, DIMENSION)).astype(np.float32).tolist()
    texts = iter([" ".join(rng.choice(VOCABULARY[:500], size=3)) for _ in range(QUERIES)])
    vectors = iter(queries)
    dense = timed(lambda: index.search(user_id="user1", vector=next(vectors), limit=10,
                                       kind="page"), QUERIES)
    keyword = timed(lambda: index.search_text(user_id="user1", text=next(texts), limit=10), QUERIES)
    print(f"  {label:<16} dense  {percentiles(dense)}")
    print(f"  {label:<16} text   {percentiles(keyword)}")


def run(count: int, *, optimize: bool) -> None:
    rng = np.random.default_rng(count)
    points = make_points(count, rng)
    with tempfile.TemporaryDirectory() as tmp:
        index = EdgeVectorIndex(Path(tmp), dimension=DIMENSION)
        start = time.perf_counter()
        for offset in range(0, count, BATCH):
            index.upsert(points[offset:offset + BATCH])
        index.flush()
        insert_s = time.perf_counter() - start
        print(f"{count:>7} points, {USERS} users: insert {insert_s:6.1f} s "
              f"({count / insert_s:,.0f} points/s), user1 has {index.count(user_id='user1'):,}")
        measure_searches(index, rng, "unoptimised")
        if optimize:
            start = time.perf_counter()
            index.optimize()
            print(f"  optimize {time.perf_counter() - start:6.1f} s")
            measure_searches(index, rng, "after optimize")
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--no-optimize", action="store_true")
    args = parser.parse_args()
    for count in args.sizes:
        run(count, optimize=not args.no_optimize)


if __name__ == "__main__":
    main()
