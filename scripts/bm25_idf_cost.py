"""What a keyword (BM25) search pays for IDF over one user's points, before and after queries
carried their own IDF weights, on a bench-built store of PAGES pages with HNSW built.

- "query IDF" is the product's search_text: the user's document frequencies are held beside the
  shard (memory/adapters/term_counts.py) and the query's weights are their IDF.
- "Edge IDF" is how it was before: the same points copied into a shard whose text vectors carry
  Edge's IDF modifier, searched with IdfParams over the user's points, so that Edge counts each
  term's documents at every search.
Both run the hybrid policy's search of the mid-term utterances (400 hits, no payload), QUERIES
queries a round, the two forms one after the other. The top hits of the two must be the same
points with the same scores (a mismatch fails the script). Also timed: the first search after the
counts are dropped, which reads the user's text vectors once (one scroll).

    .venv/bin/python scripts/bm25_idf_cost.py 100000

The evidence for BENCHMARKS.md, "Issue 51: keyword search brings its own IDF".
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

import django  # noqa: E402

django.setup()

import qdrant_edge as edge  # noqa: E402

from memory.adapters import configured, vectors  # noqa: E402
from memory.adapters.vector_points import SPARSE, call_scope, sparse_pairs  # noqa: E402
from memory.benchmarks import common, scale  # noqa: E402
from memory.engine.sparse import sparse_query  # noqa: E402
from memory.models import Tier  # noqa: E402

QUERIES, ROUNDS, HITS = 60, 3, 400


def _summary(spent: list[float]) -> str:
    return f"p50 {statistics.median(spent):.2f} / p95 {statistics.quantiles(spent, n=20)[-1]:.2f} ms"


def main(size: int) -> None:
    configured.embedder().embed(["warm up"])
    gen = scale.TextGenerator(7 + 1_000_003)
    texts = [gen.query() for _ in range(QUERIES)]
    with common.bench_env(isolate_db=True, keep=False) as env, tempfile.TemporaryDirectory() as spare:
        builder = scale.store_built(env, size)
        env.index.optimize()
        user_id = str(builder.user.pk)
        scope = call_scope(user_id, kind="turn", match_any={"tier": [Tier.MTM]})
        started = time.perf_counter()
        legacy = edge.EdgeShard.create(str(Path(spare)), vectors._edge_config(env.index.dimension, idf_modifier=True))
        vectors._ensure_edge_indexes(legacy)
        with env.index._shard() as shard:
            vectors._copy_points(shard, legacy)
        legacy.optimize()
        print(f"pages {size:,}: a copy with Edge's IDF modifier built in {time.perf_counter() - started:.0f} s")

        def product(text: str) -> list:
            return env.index.search_text(user_id=user_id, text=text, limit=HITS, kind="turn",
                                         match_any={"tier": [Tier.MTM]}, fields=())

        def before(text: str) -> list:
            query = edge.Query.Nearest(edge.SparseVector(*sparse_pairs(sparse_query(text))), using=SPARSE)
            corpus = vectors._edge_filter(call_scope(user_id))
            request = edge.QueryRequest(limit=HITS, query=query, filter=vectors._edge_filter(scope),
                                        params=edge.SearchParams(idf=edge.IdfParams(corpus=corpus)),
                                        with_payload=False, with_vector=False)
            return legacy.query(request)

        def timed(search) -> list[float]:
            spent = []
            for text in texts:
                begun = time.perf_counter()
                search(text)
                spent.append((time.perf_counter() - begun) * 1000)
            return spent

        env.index._terms.forget(user_id)
        begun = time.perf_counter()
        product(texts[0])
        print(f"  first search, the user's counts read from the shard: {(time.perf_counter() - begun) * 1000:.0f} ms")
        for text in texts:
            ours = [(hit.id, round(hit.score, 3)) for hit in product(text)[:10]]
            theirs = [(str(point.id), round(point.score, 3)) for point in before(text)[:10]]
            if ours != theirs:
                raise SystemExit(f"the two forms rank {text!r} differently:\n  {ours}\n  {theirs}")
        print(f"  the top 10 of all {QUERIES} queries: the same points and scores in both forms")
        timed(before)  # warm-up
        print(f"  {QUERIES} keyword searches of {HITS} hits a round, load {os.getloadavg()[0]:.1f}")
        for n in range(ROUNDS):
            old, new = timed(before), timed(product)
            print(f"  round {n + 1}: Edge IDF {_summary(old)}; query IDF {_summary(new)}; "
                  f"p50 ratio {statistics.median(new) / statistics.median(old):.2f}")
        legacy.close()


if __name__ == "__main__":
    main(int(sys.argv[1]))
