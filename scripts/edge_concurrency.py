"""Whether Qdrant Edge's searches can overlap each other or Python work in one process: the
evidence that the relevance core's searches run one after another (BENCHMARKS.md, "Recall: why
the core's searches cannot overlap").

A fresh Edge shard in a temporary directory with POINTS random vectors (384-d, cosine, HNSW built),
then QUERIES nearest-neighbour searches of LIMIT hits (the core's `candidates`), timed in three
rounds (each round every variant once; the median is printed):

- one after another (the baseline);
- split over two threads: 0.5× the baseline if the binding let two searches run at once, 1.0× if not;
- beside a thread that runs pure Python: 1.0× if a search released the GIL, about 2× if the two
  threads take turns at it (Python's switch interval);
- two at a time through `query_batch`, against the same two through `query`;
- as a control, a NumPy product on one BLAS thread (a call that releases the GIL) beside the same
  Python thread.

    .venv/bin/python scripts/edge_concurrency.py [POINTS] [QUERIES] [LIMIT]

Defaults: 30,000 points (a 10,000-page store holds about 30,400), 200 queries, 400 hits.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import numpy as np
import qdrant_edge as edge
from threadpoolctl import threadpool_limits

DIMENSION = 384
BATCH = 2_000
ROUNDS = 3


def build_shard(path: str, points: int, rng: np.random.Generator) -> edge.EdgeShard:
    config = edge.EdgeConfig(vectors={"dense": edge.EdgeVectorParams(size=DIMENSION, distance=edge.Distance.Cosine)})
    shard = edge.EdgeShard.create(path, config)
    vectors = rng.standard_normal((points, DIMENSION)).astype(np.float32)
    for start in range(0, points, BATCH):
        shard.update(edge.UpdateOperation.upsert_points([
            edge.Point(id=start + i + 1, vector={"dense": row.tolist()}, payload={})
            for i, row in enumerate(vectors[start:start + BATCH])]))
    shard.optimize()
    return shard


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def beside_python(call: Callable[[], object]) -> float:
    """The seconds `call` takes while another thread runs a pure-Python loop."""
    stop = threading.Event()

    def spin() -> None:
        count = 0
        while not stop.is_set():
            count += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        return timed(call)
    finally:
        stop.set()
        spinner.join()


def main(points: int, queries: int, limit: int) -> None:
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="edge-concurrency-") as path:
        shard = build_shard(path, points, rng)
        vectors = rng.standard_normal((queries, DIMENSION)).astype(np.float32).tolist()

        def request(vector: list[float]) -> edge.QueryRequest:
            return edge.QueryRequest(limit=limit, query=edge.Query.Nearest(vector, using="dense"),
                                     with_payload=False, with_vector=False)

        def search(part: list[list[float]]) -> None:
            for vector in part:
                if len(shard.query(request(vector))) != min(limit, points):
                    raise RuntimeError("a search returned fewer hits than asked for")

        def two_threads() -> None:
            threads = [threading.Thread(target=search, args=(vectors[i::2],)) for i in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        def batched() -> None:
            for start in range(0, queries - 1, 2):
                found = shard.query_batch(edge.QueryBatchRequest([request(v) for v in vectors[start:start + 2]]))
                if any(len(hits) != min(limit, points) for hits in found):
                    raise RuntimeError("a batched search returned fewer hits than asked for")

        pairs = vectors[:queries - queries % 2]
        search(vectors[:20])  # warm-up
        # Each round times every variant once, so a slow minute of a shared machine falls on all;
        # the median round's figures are reported.
        rounds = [{"serial": timed(lambda: search(vectors)), "threaded": timed(two_threads),
                   "crowded": beside_python(lambda: search(vectors)), "one_by_one": timed(lambda: search(pairs)),
                   "batched": timed(batched)} for _ in range(ROUNDS)]
        shard.close()
    serial, threaded, crowded, one_by_one, as_batches = (
        float(np.median([r[name] for r in rounds])) for name in ("serial", "threaded", "crowded", "one_by_one",
                                                                 "batched"))

    matrix = rng.standard_normal((1_500, 1_500))
    with threadpool_limits(limits=1, user_api="blas"):
        control = float(np.median([timed(lambda: [matrix @ matrix for _ in range(10)]) for _ in range(ROUNDS)]))
        control_crowded = float(np.median([beside_python(lambda: [matrix @ matrix for _ in range(10)])
                                           for _ in range(ROUNDS)]))

    per = 1000 / queries
    print(f"Edge shard of {points:,} random {DIMENSION}-d points (HNSW), {queries} searches of {limit} hits; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"  one after another        {serial * per:6.2f} ms a search  1.00x (the baseline)")
    print(f"  two threads              {threaded * per:6.2f} ms a search  {threaded / serial:.2f}x "
          "(0.5x if two ran at once)")
    print(f"  beside a Python thread   {crowded * per:6.2f} ms a search  {crowded / serial:.2f}x "
          "(1.0x if the GIL were released)")
    print(f"  query_batch, two a call  {as_batches * 1000 / len(pairs):6.2f} ms a search  "
          f"{as_batches / one_by_one:.2f}x of the same searches one by one")
    print(f"  control: NumPy product on one BLAS thread beside a Python thread  {control_crowded / control:.2f}x "
          "of it alone")


if __name__ == "__main__":
    arguments = [int(value) for value in sys.argv[1:4]]
    main(*(arguments + [30_000, 200, 400][len(arguments):]))
