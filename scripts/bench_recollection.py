"""Cost of Exocortex recollection clustering (memory/policies/exocortex/engine/recollection.py), cold and warm.

For pools of 50, 100 and 200 candidate pages of a LoCoMo conversation (real MiniLM embeddings,
Exocortex weights against each question), it times in this process:
  - warm: `cluster_recollections` (gather, UMAP, HDBSCAN, guard) and `summarize_recollection`
    for every kept cluster, per question, after one warm-up call; UMAP + HDBSCAN alone too, in a
    call of their own on the same input (so on a busy machine it may read above the whole);
  - baselines in the same run: a plain cosine ranking of the same candidates (numpy), and
    MiniLM's embedding of one query (what every recall pays already);
and in a fresh process per size, the cold cost: importing umap, then the first call (numba
compiles UMAP's kernels), then a second one.
It also replays the conversation turn by turn (the prompt and the 3 pages before it each bring
16 older pages, 48 are pooled) and counts how often a turn's pool is the previous turn's: the
hit rate a cache of UMAP/HDBSCAN results keyed on unchanged inputs would have.

    .venv/bin/python scripts/bench_recollection.py [--sizes 50 100 200] [--questions 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.engine.clusters import cluster_labels  # noqa: E402
from memory.policies.exocortex.engine.decay import CORE, DecaySettings, exocortex_weight, recencies  # noqa: E402
from memory.policies.exocortex.engine.recollection import (  # noqa: E402
    Candidate,
    RecollectionParams,
    cluster_recollections,
    gather_candidates,
    summarize_recollection,
)

DATA = ROOT.parent / "shared" / "data" / "locomo_dev2.json"


def load(sample: int) -> tuple[list[str], np.ndarray, np.ndarray, list, list[str]]:
    """Pages (texts, unit vectors, recency), their times and the questions of one conversation."""
    from memory.adapters.embeddings import build_embedder
    from memory.formats.locomo import conversation_pages, load_conversations

    conversation = load_conversations(DATA)[sample]
    pages = conversation_pages(conversation)
    texts = [f"{p.query} {p.response}".strip() for p in pages]
    times = [p.timestamp for p in pages]
    vectors = np.asarray(build_embedder(backend="minilm").embed(texts), dtype=np.float64)
    now = times[-1] + timedelta(days=1)
    ages = [(now - t).total_seconds() for t in times]
    recency = recencies(ages, oldest_age_seconds=max(ages), settings=DecaySettings())
    return texts, vectors, recency, times, [q["question"] for q in conversation.qa]


def candidates(indices, *, texts, vectors, recency, times, prompt: np.ndarray) -> list[Candidate]:
    result = []
    for i in indices:
        relevance = float(np.clip(vectors[i] @ prompt, 0.0, 1.0))
        weight = exocortex_weight(relevance=relevance, recency=float(recency[i]), kind=CORE).weight
        result.append(Candidate(id=f"p{i:04d}", text=texts[i], embedding=tuple(vectors[i]), weight=weight,
                                timestamp=times[i]))
    return result


def params_for(size: int) -> RecollectionParams:
    return RecollectionParams(max_cluster_memories=math.ceil(size / 3))  # a pool of `size` at 3 dimensions


def ms(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {"p50": 1000 * statistics.median(ordered),
            "p95": 1000 * ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
            "mean": 1000 * statistics.fmean(ordered)}


def warm(size: int, questions: list[tuple[str, np.ndarray]], data: dict) -> dict:
    params = params_for(size)
    pools = [(q, vector, candidates(np.argsort(-(data["vectors"] @ vector))[:size], prompt=vector, **data))
             for q, vector in questions]
    cluster_recollections(prompt_embedding=pools[0][1], anchors=[pools[0][2]], params=params)  # warm-up
    total, reduce, summary, ranking, kept = [], [], [], [], []
    for question, vector, pool in pools:
        start = time.perf_counter()
        plan = cluster_recollections(prompt_embedding=vector, anchors=[pool], params=params)
        middle = time.perf_counter()
        for cluster in plan.clusters:
            summarize_recollection(cluster=cluster, prompt=question)
        total.append(middle - start)
        summary.append(time.perf_counter() - middle)
        kept.append(len(plan.clusters))
        matrix = np.asarray([c.embedding for c in sorted(gather_candidates([pool], limit=size), key=lambda c: c.id)])
        start = time.perf_counter()
        cluster_labels(matrix / np.linalg.norm(matrix, axis=1, keepdims=True), dimensions=params.dimensions,
                       min_cluster_size=params.min_cluster_size, neighbours=params.neighbours,
                       min_points_for_umap=params.min_points_for_umap, random_state=params.random_state)
        reduce.append(time.perf_counter() - start)
        start = time.perf_counter()
        np.argsort(-(matrix @ vector))  # the plain ranking of the same candidates (the baseline)
        ranking.append(time.perf_counter() - start)
    return {"size": size, "cluster_ms": ms(total), "umap_hdbscan_ms": ms(reduce), "summaries_ms": ms(summary),
            "cosine_ranking_ms": ms(ranking), "clusters_kept": statistics.fmean(kept)}


def cold(size: int, path: Path) -> dict:
    """A fresh interpreter: import umap, then two calls on the same pool."""
    out = subprocess.run([sys.executable, __file__, "--cold-child", str(path), str(size)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cold_child(path: Path, size: int) -> None:
    saved = np.load(path, allow_pickle=False)
    vectors, weights = saved["vectors"][:size], saved["weights"][:size]
    pool = [Candidate(id=f"p{i:04d}", text="x", embedding=tuple(v), weight=float(w))
            for i, (v, w) in enumerate(zip(vectors, weights, strict=True))]
    start = time.perf_counter()
    import umap  # noqa: F401

    imported = time.perf_counter()
    cluster_recollections(prompt_embedding=saved["prompt"], anchors=[pool], params=params_for(size))
    first = time.perf_counter()
    cluster_recollections(prompt_embedding=saved["prompt"], anchors=[pool], params=params_for(size))
    second = time.perf_counter()
    print(json.dumps({"import_ms": 1000 * (imported - start), "first_call_ms": 1000 * (first - imported),
                      "second_call_ms": 1000 * (second - first)}))


def replay(data: dict, *, recent: int = 3, per_anchor: int = 16, pool: int = 48) -> dict:
    """Turn by turn: how often is a turn's pool the previous turn's (a cache hit)?"""
    vectors, hits, overlaps, previous = data["vectors"], 0, [], None
    for turn in range(recent + per_anchor, len(vectors)):
        older = np.arange(0, turn - recent)  # long-term: before the short-term items
        anchors = [vectors[turn], *vectors[turn - recent:turn]]
        brought = [candidates(older[np.argsort(-(vectors[older] @ a))[:per_anchor]], prompt=vectors[turn], **data)
                   for a in anchors]
        ids = frozenset(c.id for c in gather_candidates(brought, limit=pool))
        if previous is not None:
            hits += ids == previous
            overlaps.append(len(ids & previous) / len(ids | previous))
        previous = ids
    return {"turns": len(overlaps), "identical_pool": hits / len(overlaps), "mean_jaccard": statistics.fmean(overlaps)}


def query_embedding_ms(texts: list[str]) -> dict[str, float]:
    from memory.adapters.embeddings import build_embedder

    embedder = build_embedder(backend="minilm")
    embedder.embed([texts[0]])
    timings = []
    for text in texts:
        start = time.perf_counter()
        embedder.embed([text])
        timings.append(time.perf_counter() - start)
    return ms(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--sample", type=int, default=1, help="conversation index in the file (1: conv-47, 355 pages)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cold-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        return cold_child(Path(args.cold_child[0]), int(args.cold_child[1]))
    texts, vectors, recency, times, questions = load(args.sample)
    data = {"texts": texts, "vectors": vectors, "recency": recency, "times": times}
    from memory.adapters.embeddings import build_embedder

    asked = questions[:: max(1, len(questions) // args.questions)][:args.questions]
    asked_vectors = np.asarray(build_embedder(backend="minilm").embed(asked), dtype=np.float64)
    result: dict = {"pages": len(texts), "questions": len(asked), "query_embedding_ms": query_embedding_ms(asked)}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pool.npz"
        order = np.argsort(-(vectors @ asked_vectors[0]))
        np.savez(path, vectors=vectors[order], weights=np.clip(vectors[order] @ asked_vectors[0], 0, 1),
                 prompt=asked_vectors[0])
        result["cold"] = {size: cold(size, path) for size in args.sizes}
    result["warm"] = [warm(size, list(zip(asked, asked_vectors, strict=True)), data) for size in args.sizes]
    result["replay"] = replay(data)
    print(json.dumps(result, indent=2) if args.json else render(result))


def render(result: dict) -> str:
    embed = result["query_embedding_ms"]["p50"]
    lines = [f"{result['pages']} pages, {result['questions']} questions; one query's MiniLM embedding p50 "
             f"{embed:.1f} ms", "", "warm, per recall (ms, p50 / p95) and p50 as a multiple of the baselines:",
             f"{'pool':>5} {'cluster+guard':>15} {'umap+hdbscan':>14} {'summaries':>11} {'cosine rank':>12} "
             f"{'x rank':>8} {'x embed':>8} {'kept':>5}"]
    for row in result["warm"]:
        cluster, ranking = row["cluster_ms"], row["cosine_ranking_ms"]
        lines.append(f"{row['size']:>5} {cluster['p50']:>7.1f} / {cluster['p95']:<6.1f} "
                     f"{row['umap_hdbscan_ms']['p50']:>7.1f} / {row['umap_hdbscan_ms']['p95']:<5.1f}"
                     f"{row['summaries_ms']['p50']:>6.1f} / {row['summaries_ms']['p95']:<4.1f}"
                     f"{ranking['p50']:>9.3f}   {cluster['p50'] / ranking['p50']:>7.0f} "
                     f"{cluster['p50'] / embed:>8.1f} {row['clusters_kept']:>5.1f}")
    lines += ["", "cold, a fresh process (ms): import umap, first call (numba compiles), second call"]
    for size, row in result["cold"].items():
        lines.append(f"{size:>5} {row['import_ms']:>8.0f} {row['first_call_ms']:>10.0f} {row['second_call_ms']:>8.1f}"
                     f"   first call = {row['first_call_ms'] / embed:.0f} query embeddings")
    replay = result["replay"]
    lines += ["", f"replay of {replay['turns']} turns: pool identical to the previous turn's in "
                  f"{100 * replay['identical_pool']:.1f} %, mean Jaccard {replay['mean_jaccard']:.2f}"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
