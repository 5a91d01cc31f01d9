"""What a keyword (BM25) search pays for IDF counted over one user's points, on a bench-built
store of PAGES pages with HNSW built: the hybrid policy's search of the mid-term utterances (400
hits, no payload) as the product makes it (Edge's IdfParams over the user's points), and the same
search with IDF from the whole shard's statistics. The store has one user, so the two rank alike;
in the product they would not (every user's points share the shard). Medians and p95 of QUERIES
queries, rounds one after the other.

    .venv/bin/python scripts/bm25_idf_cost.py 100000

The evidence for BENCHMARKS.md, "A write's own work, and recall's keyword searches".
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

import django  # noqa: E402

django.setup()

from memory.adapters import configured  # noqa: E402
from memory.adapters.vector_points import SPARSE, call_scope, sparse_pairs  # noqa: E402
from memory.benchmarks import common, scale  # noqa: E402
from memory.engine.sparse import sparse_query  # noqa: E402
from memory.models import Tier  # noqa: E402

QUERIES, ROUNDS, HITS = 60, 3, 400


def main(size: int) -> None:
    configured.embedder().embed(["warm up"])
    gen = scale.TextGenerator(7 + 1_000_003)
    queries = [sparse_pairs(sparse_query(gen.query())) for _ in range(QUERIES)]
    with common.bench_env(isolate_db=True, keep=False) as env:
        builder = scale.store_built(env, size)
        env.index.optimize()
        user_id = str(builder.user.pk)
        scope = call_scope(user_id, kind="turn", match_any={"tier": [Tier.MTM]})

        def timed(corpus) -> list[float]:
            spent = []
            for query in queries:
                started = time.perf_counter()
                # The adapter's own search: its public search_text always counts IDF over the user's
                # points, and the other form is what this script compares it with.
                env.index._search(query, SPARSE, scope, HITS, corpus, ())
                spent.append((time.perf_counter() - started) * 1000)
            return spent

        timed(call_scope(user_id))  # warm-up
        print(f"pages {size:,}, {QUERIES} keyword searches of {HITS} hits a round, load {os.getloadavg()[0]:.1f}")
        for n in range(ROUNDS):
            per_user, whole_shard = timed(call_scope(user_id)), timed(None)
            print(f"  round {n + 1}: IDF over the user's points p50 {statistics.median(per_user):.2f} / p95 "
                  f"{statistics.quantiles(per_user, n=20)[-1]:.2f} ms; from the shard's statistics p50 "
                  f"{statistics.median(whole_shard):.2f} / p95 {statistics.quantiles(whole_shard, n=20)[-1]:.2f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]))
