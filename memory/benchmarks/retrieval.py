"""`manage.py bench retrieval --data FILE [--policy P ...]`: LoCoMo evidence recall.

Each conversation is replayed into a fresh user through the normal write path (maintenance
included); then, for every question of categories 1–4, each recall policy retrieves context and
the share of the question's evidence turns among the turns behind it is counted in relevance
order, at k = 5, 10, 20 turns and within 1,000 and 2,000 tokens. BM25 and dense cosine over the
raw turns run in the same process as baselines. The target: R@10 at least 0.10 above the better
baseline, overall and in every category.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from memory.benchmarks.common import bench_env, machine, progress, render_table, summarize_ms, today
from memory.benchmarks.evidence import (
    CATEGORY_NAMES,
    Question,
    TurnBaselines,
    Unit,
    questions,
    recall_at_budget,
    recall_at_k,
)

KS = (5, 10, 20)
BUDGETS = (1000, 2000)
POLICIES = ("memoryos", "hybrid", "memoria", "exocortex", "generative_agents")
BASELINES = ("bm25", "dense")
EMBED = "query embedding"  # its latency alone, beside the methods' (which include it)
TARGET_MARGIN = 0.10
# Context always in the prompt but not ranked by relevance goes last, in this order.
TAIL_KINDS = ("kb_fact", "agent_trait", "stm_page")


def add_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="a file in the public LoCoMo format")
    parser.add_argument("--policy", action="append", choices=POLICIES,
                        help="recall policy to measure (repeatable; default: all)")
    parser.add_argument("--sample", action="append", type=int, help="only these conversations (index)")


def policy_units(user, question: str, policy: str) -> list[Unit]:
    """The policy's context in relevance order: ranked pages or turns, then the unranked tail."""
    from memory.models import Tier
    from memory.services.recall import recall_for_query

    recall = recall_for_query(user=user, query=question, policy=policy, update_heat=False,
                              turn_tiers=(Tier.STM, Tier.MTM))
    ranked = sorted((i for i in recall.items if i.kind in ("mtm_page", "turn", "memoria_page", "memoria_note")),
                    key=lambda i: -i.score)
    tail = sorted((i for i in recall.items if i.kind in TAIL_KINDS),
                  key=lambda i: (TAIL_KINDS.index(i.kind), -i.score))
    return [Unit(source_ids=i.source_ids, text=i.text) for i in ranked + tail]


def _score(scores: dict, name: str, q: Question, units: list[Unit]) -> None:
    for k in KS:
        value = recall_at_k(units, q.evidence, k)
        scores[name][("all", f"R@{k}")].append(value)
        scores[name][(q.category, f"R@{k}")].append(value)
    for budget in BUDGETS:
        scores[name][("all", f"B{budget}")].append(recall_at_budget(units, q.evidence, budget))


def _conversation(conv, policies, scores, latencies, ingest, show) -> int:
    from memory.adapters import configured
    from memory.services.importing import conversation_import

    with bench_env() as env:
        user = env.make_user(prefix=f"locomo-{conv.sample_id}")
        report = conversation_import(user=user, conversation=conv, progress=show)
        ingest.append((conv.sample_id, report.turns, report.pages, report.seconds))
        baselines = TurnBaselines(conv, configured.embedder().embed)
        asked = questions(conv)
        bar = progress(len(asked), f"questions {conv.sample_id}", enabled=show)
        for q in asked:
            started = time.perf_counter()
            configured.embedder().embed([q.text])  # alone: what the policies' latency includes of it
            latencies[EMBED].append((time.perf_counter() - started) * 1000)
            for name in BASELINES:
                started = time.perf_counter()
                units = baselines.bm25(q.text) if name == "bm25" else baselines.dense(q.text)
                latencies[name].append((time.perf_counter() - started) * 1000)
                _score(scores, name, q, units)
            for policy in policies:
                started = time.perf_counter()
                units = policy_units(user, q.text, policy)
                latencies[policy].append((time.perf_counter() - started) * 1000)
                _score(scores, policy, q, units)
            bar.update(1)
        bar.close()
        return len(asked)


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")


def _targets(summary: dict[str, dict[str, float]], policies) -> dict[str, dict[str, Any]]:
    """Per policy and category: R@10, the better baseline's, and whether the margin is met."""
    result = {}
    for policy in policies:
        checks = {}
        for cat in ["all", *CATEGORY_NAMES]:
            key = f"{cat}/R@10"
            best = max(summary[b].get(key, 0.0) for b in BASELINES)
            value = summary[policy].get(key, 0.0)
            checks[str(cat)] = {"r10": value, "best_baseline": best, "margin": round(value - best, 4),
                                "met": value >= best + TARGET_MARGIN}
        result[policy] = checks
    return result


def run(options: dict[str, Any], stdout) -> dict[str, Any]:
    from memory.formats.locomo import load_conversations

    policies = tuple(options.get("policy") or POLICIES)
    conversations = load_conversations(options["data"])
    if options.get("sample"):
        conversations = [conversations[i] for i in options["sample"]]
    show = not options.get("no_progress")
    scores: dict[str, dict] = defaultdict(lambda: defaultdict(list))
    latencies: dict[str, list[float]] = defaultdict(list)
    ingest: list[tuple] = []
    counted = sum(_conversation(c, policies, scores, latencies, ingest, show) for c in conversations)
    summary = {name: {f"{cat}/{metric}": _mean(values) for (cat, metric), values in table.items()}
               for name, table in scores.items()}
    counts = defaultdict(int)
    for (cat, metric), values in scores[BASELINES[0]].items():
        if metric == "R@10":
            counts[str(cat)] = len(values)
    turns = sum(t for _, t, _, _ in ingest)
    return {
        "benchmark": "retrieval", "date": today(), "machine": machine(), "data": str(options["data"]),
        "questions": counted, "questions_per_category": dict(counts), "policies": list(policies),
        "recall": summary, "latency_ms": {name: summarize_ms(v) for name, v in latencies.items()},
        "ingest": {"conversations": [{"sample": s, "turns": t, "pages": p, "seconds": round(sec, 1)}
                                     for s, t, p, sec in ingest],
                   "ms_per_turn": round(1000 * sum(sec for *_, sec in ingest) / max(1, turns), 1)},
        "targets": _targets(summary, policies),
    }


def render(result: dict[str, Any]) -> str:
    names = [*BASELINES, *result["policies"]]
    cats = ["all", *CATEGORY_NAMES]
    headers = ["method", *[f"R@{k}" for k in KS], *[f"B{b}" for b in BUDGETS],
               *[f"R@10 {CATEGORY_NAMES[c]}" for c in CATEGORY_NAMES], "p50 ms", "p95 ms"]
    rows = []
    for name in names:
        rec, lat = result["recall"][name], result["latency_ms"][name]
        rows.append([name, *[rec[f"all/R@{k}"] for k in KS], *[rec[f"all/B{b}"] for b in BUDGETS],
                     *[rec.get(f"{c}/R@10") for c in CATEGORY_NAMES], lat["p50"], lat["p95"]])
    counts = result["questions_per_category"]
    title = (f"LoCoMo evidence recall, {result['questions']} questions "
             f"({', '.join(f'{CATEGORY_NAMES[int(c)]} {n}' for c, n in sorted(counts.items()) if c != 'all')})")
    target_rows = [[policy, *[f"{'yes' if t['met'] else 'NO'} ({t['margin']:+.3f})" for t in checks.values()]]
                   for policy, checks in result["targets"].items()]
    ingest = result["ingest"]
    lines = [render_table(headers, rows, title=title), "",
             render_table(["policy", *[str(c) if c == "all" else CATEGORY_NAMES[c] for c in cats]], target_rows,
                          title=f"R@10 at least {TARGET_MARGIN:.2f} above the better baseline?"),
             "", f"query embedding alone: p50 {result['latency_ms'][EMBED]['p50']} ms, "
                 f"p95 {result['latency_ms'][EMBED]['p95']} ms",
             f"ingest: {ingest['ms_per_turn']} ms per turn "
                 + ", ".join(f"{c['sample']} {c['turns']} turns in {c['seconds']} s" for c in ingest["conversations"])]
    return "\n".join(lines)
