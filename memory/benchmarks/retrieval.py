"""`manage.py bench retrieval --data FILE [--policy P ...] [--ablate A ...] [--check-floors F]`.

LoCoMo evidence recall. Each conversation is replayed into a fresh user through the normal write
path (maintenance included); then, for every question of categories 1–4, each recall policy
retrieves context and the share of the question's evidence turns among the turns behind it is
counted in relevance order, at k = 5, 10, 20 turns and within 1,000 and 2,000 tokens, and
"all@10" says whether the whole evidence is within the first 10 turns. BM25 and dense cosine over
the raw turns run in the same process as baselines. Each conversation's figures are kept apart
too (the folds of a 2-fold check: tune on one conversation, read the other). The target: every
policy's R@10 at least 0.05 above BM25's, overall and in every category.

`--ablate` runs a policy again with one of its own terms, or one part of the shared relevance
core, switched off (ABLATIONS), so a table shows what each term is worth. `--check-floors FILE`
compares each policy's R@10 with the floors recorded in FILE and fails (CommandError, exit 1)
when one is more than FLOOR_TOLERANCE below: CI's memory-quality gate.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

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
from memory.policies import registry as models

KS = (5, 10, 20)
BUDGETS = (1000, 2000)
BASELINES = ("bm25", "dense")
EMBED = "query embedding"  # its latency alone, beside the methods' (which include it)
TARGET_BASELINE = "bm25"
TARGET_MARGIN = 0.05
FLOOR_TOLERANCE = 0.02
FLOORS_FILE = Path(__file__).with_name("retrieval_floors.json")


def measured_policies(options: dict[str, Any]) -> tuple[str, ...]:
    """The policies a run measures: those asked for, else every registered policy."""
    from memory.recall.base import policy_names

    known = policy_names()
    policies = tuple(options.get("policy") or known)
    unknown = [p for p in policies if p not in known]
    if unknown:
        raise CommandError(f"unknown recall policy {', '.join(unknown)}; choose from {', '.join(known)}")
    return policies


# ----------------------------------------------------------------------------- ablations
#
# Each switches one thing off for the run it wraps: a part of the shared relevance core (every
# policy's relevance), or one policy's own terms.

@contextmanager
def _core_params(**changes: Any) -> Iterator[None]:
    from memory.recall import relevance

    saved = relevance.PARAMS
    relevance.PARAMS = relevance.with_params(**changes)
    try:
        yield
    finally:
        relevance.PARAMS = saved


@contextmanager
def _flag(module: str, name: str, value: Any) -> Iterator[None]:
    import importlib

    target = importlib.import_module(module)
    saved = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, saved)


def _built_from(module: str) -> Callable[[str], bool]:
    """Whether a policy is built from `module`: its class, or one it builds on, is defined there. An
    ablation switches off a term of one module, so it is measured on the policies that use it."""
    def applies(policy: str) -> bool:
        from memory.recall.base import get_policy

        return any(cls.__module__ == module for cls in type(get_policy(policy)).__mro__)

    return applies


# An ablation of the shared core is measured on the policies that rank the core directly.
CORE = _built_from("memory.recall.hybrid")
ABLATIONS: dict[str, tuple[str, Callable[[], Any], Callable[[str], bool] | None]] = {
    "core-hop": ("the relevance core without the second hop", lambda: _core_params(hop_weight=0.0), CORE),
    "core-time": ("the relevance core without time windows", lambda: _core_params(time_boost=0.0), CORE),
    "core-long-term": ("the relevance core without long-term memory's facts",
                       lambda: _core_params(long_term_boost=0.0), CORE),
    "core-feedback": ("the relevance core without pseudo-relevance feedback",
                      lambda: _core_params(feedback_weight=0.0), CORE),
    "core-speaker": ("the relevance core without the speaker boost", lambda: _core_params(speaker_boost=0.0), CORE),
    "core-smoothing": ("the relevance core without smoothing along the dialogue",
                       lambda: _core_params(previous_weight=0.0, next_weight=0.0), CORE),
    "core-meaning": ("the relevance core without smoothing by meaning (nearest turns in embedding space)",
                     lambda: _core_params(meaning_weight=0.0), CORE),
    "core-pair": ("the relevance core without turn pairs (a question among the best lending its answer)",
                  lambda: _core_params(pair_weight=0.0), CORE),
    "core+diversity": ("the relevance core with diversity across sessions (penalty 1.0)",
                       lambda: _core_params(session_penalty=1.0), CORE),
    "memoryos-segments": ("MemoryOS without its first stage: pages from every segment",
                          lambda: _flag("memory.recall.memoryos", "SEGMENTS_FIRST", False),
                          _built_from("memory.recall.memoryos")),
    "memoryos-jaccard": ("MemoryOS segments by relevance alone (no keyword Jaccard in Fscore)",
                         lambda: _flag("memory.recall.memoryos", "KEYWORD_JACCARD", False),
                         _built_from("memory.recall.memoryos")),
    # The memory models' own (memory/policies/<model>/hooks.py): exocortex-decay, memoria-terms.
    **models.ablations(),
}
# Context always in the prompt but not ranked by relevance goes last, in this order.
TAIL_KINDS = ("kb_fact", "agent_trait", "stm_page")


def add_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="a file in the public LoCoMo format")
    parser.add_argument("--policy", action="append",
                        help="recall policy to measure (repeatable; default: every registered policy)")
    parser.add_argument("--sample", action="append", type=int, help="only these conversations (index)")
    parser.add_argument("--ablate", action="append", choices=sorted(ABLATIONS),
                        help="also run every measured policy with this switched off (repeatable)")
    parser.add_argument("--check-floors", nargs="?", const=str(FLOORS_FILE), type=Path, metavar="FILE",
                        help=f"fail when a policy's R@10 is more than {FLOOR_TOLERANCE} below the floor recorded "
                             f"in FILE (default {FLOORS_FILE.name} beside this module)")


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
    scores[name][("all", "all@10")].append(1.0 if recall_at_k(units, q.evidence, 10) == 1.0 else 0.0)
    for budget in BUDGETS:
        scores[name][("all", f"B{budget}")].append(recall_at_budget(units, q.evidence, budget))


def _conversation(conv, policies, scores, latencies, ingest, show, ablations=(), folds=None) -> int:
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
                if folds is not None:
                    _score(folds[conv.sample_id], name, q, units)
            for policy in policies:
                started = time.perf_counter()
                units = policy_units(user, q.text, policy)
                latencies[policy].append((time.perf_counter() - started) * 1000)
                _score(scores, policy, q, units)
                if folds is not None:
                    _score(folds[conv.sample_id], policy, q, units)
                for ablation in ablations:
                    _, switch_off, applies = ABLATIONS[ablation]
                    if applies is not None and not applies(policy):
                        continue
                    with switch_off():
                        units = policy_units(user, q.text, policy)
                    _score(scores, f"{policy} {ablation}", q, units)
                    if folds is not None:
                        _score(folds[conv.sample_id], f"{policy} {ablation}", q, units)
            bar.update(1)
        bar.close()
        return len(asked)


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")


def _targets(summary: dict[str, dict[str, float]], policies) -> dict[str, dict[str, Any]]:
    """Per policy and category: R@10, BM25's, and whether the margin is met."""
    result = {}
    for policy in policies:
        checks = {}
        for cat in ["all", *CATEGORY_NAMES]:
            key = f"{cat}/R@10"
            best = summary[TARGET_BASELINE].get(key, 0.0)
            value = summary[policy].get(key, 0.0)
            checks[str(cat)] = {"r10": value, "best_baseline": best, "margin": round(value - best, 4),
                                "met": value >= best + TARGET_MARGIN}
        result[policy] = checks
    return result


def run(options: dict[str, Any], stdout) -> dict[str, Any]:
    from memory.formats.locomo import load_conversations

    policies = measured_policies(options)
    floors = _read_floors(options["check_floors"]) if options.get("check_floors") else None
    if floors and floors.get("data") and Path(options["data"]).name != floors["data"]:
        raise CommandError(f"the floors were recorded on {floors['data']}, not {Path(options['data']).name}")
    conversations = load_conversations(options["data"])
    if options.get("sample"):
        conversations = [conversations[i] for i in options["sample"]]
    show = not options.get("no_progress")
    ablations = tuple(options.get("ablate") or ())
    scores: dict[str, dict] = defaultdict(lambda: defaultdict(list))
    folds: dict[str, dict] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    latencies: dict[str, list[float]] = defaultdict(list)
    ingest: list[tuple] = []
    counted = sum(_conversation(c, policies, scores, latencies, ingest, show, ablations, folds)
                  for c in conversations)
    summary = {name: {f"{cat}/{metric}": _mean(values) for (cat, metric), values in table.items()}
               for name, table in scores.items()}
    by_fold = {sample: {name: {key: _mean(values) for key, values in
                               ((f"{cat}/{metric}", v) for (cat, metric), v in table.items())
                               if key.endswith("R@10") or key.endswith("all@10")}
                        for name, table in fold.items()}
               for sample, fold in folds.items()}
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
        "folds": by_fold,
        "ablations": {name: ABLATIONS[name][0] for name in ablations},
        "floors": _check_floors(summary, policies, floors, options.get("sample")) if floors else None,
    }


def _read_floors(path: Path) -> dict[str, Any]:
    try:
        floors = json.loads(Path(path).read_text())
        r10 = floors["r10"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CommandError(f"cannot read the floors in {path}: {error}") from error
    if not isinstance(r10, dict) or not all(isinstance(v, int | float) for v in r10.values()):
        raise CommandError(f"{path}: 'r10' must map policy names to numbers")
    return floors


def _check_floors(summary, policies, floors: dict[str, Any], samples) -> dict[str, Any]:
    """Each measured policy's R@10 against its floor; a CommandError names every one that fell."""
    wanted = floors.get("sample")
    if wanted is not None and samples != [wanted]:
        raise CommandError(f"the floors were recorded on --sample {wanted}; run with exactly that sample")
    checks, fell = {}, []
    for policy in policies:
        floor = floors["r10"].get(policy)
        if floor is None:
            raise CommandError(f"no floor recorded for policy {policy!r}: add it to the floors file")
        value = summary[policy]["all/R@10"]
        checks[policy] = {"r10": value, "floor": floor, "ok": value >= floor - FLOOR_TOLERANCE}
        if not checks[policy]["ok"]:
            fell.append(f"{policy} R@10 {value:.4f} < floor {floor:.4f} - {FLOOR_TOLERANCE}")
    if fell:
        raise CommandError("memory quality fell below the recorded floors: " + "; ".join(fell))
    return checks


def render(result: dict[str, Any]) -> str:
    names = [*BASELINES, *result["policies"]]
    names += [name for name in result["recall"] if name not in names]  # the ablations
    cats = ["all", *CATEGORY_NAMES]
    headers = ["method", *[f"R@{k}" for k in KS], "all@10", *[f"B{b}" for b in BUDGETS],
               *[f"R@10 {CATEGORY_NAMES[c]}" for c in CATEGORY_NAMES], "p50 ms", "p95 ms"]
    rows = []
    for name in names:
        rec, lat = result["recall"][name], result["latency_ms"].get(name, {})
        rows.append([name, *[rec[f"all/R@{k}"] for k in KS], rec["all/all@10"], *[rec[f"all/B{b}"] for b in BUDGETS],
                     *[rec.get(f"{c}/R@10") for c in CATEGORY_NAMES], lat.get("p50"), lat.get("p95")])
    counts = result["questions_per_category"]
    title = (f"LoCoMo evidence recall, {result['questions']} questions "
             f"({', '.join(f'{CATEGORY_NAMES[int(c)]} {n}' for c, n in sorted(counts.items()) if c != 'all')})")
    target_rows = [[policy, *[f"{'yes' if t['met'] else 'NO'} ({t['margin']:+.3f})" for t in checks.values()]]
                   for policy, checks in result["targets"].items()]
    ingest = result["ingest"]
    lines = [render_table(headers, rows, title=title), "",
             render_table(["policy", *[str(c) if c == "all" else CATEGORY_NAMES[c] for c in cats]], target_rows,
                          title=f"R@10 at least {TARGET_MARGIN:.2f} above {TARGET_BASELINE}?"),
             "", _render_folds(result),
             "", f"query embedding alone: p50 {result['latency_ms'][EMBED]['p50']} ms, "
                 f"p95 {result['latency_ms'][EMBED]['p95']} ms",
             f"ingest: {ingest['ms_per_turn']} ms per turn "
                 + ", ".join(f"{c['sample']} {c['turns']} turns in {c['seconds']} s" for c in ingest["conversations"])]
    if result.get("floors"):
        lines += ["", "floors: " + ", ".join(f"{p} {c['r10']:.3f} (floor {c['floor']:.3f}) ok"
                                             for p, c in result["floors"].items())]
    return "\n".join(lines)


def _render_folds(result: dict[str, Any]) -> str:
    """R@10 per conversation (the folds of a 2-fold check) and their mean."""
    folds = result["folds"]
    samples = list(folds)
    names = [n for n in result["recall"] if all(n in folds[s] for s in samples)]
    rows = []
    for name in names:
        values = [folds[s][name].get("all/R@10") for s in samples]
        alls = [folds[s][name].get("all/all@10") for s in samples]
        rows.append([name, *values, round(sum(values) / len(values), 4), *alls])
    headers = ["method", *[f"R@10 {s}" for s in samples], "fold mean", *[f"all@10 {s}" for s in samples]]
    return render_table(headers, rows, title="Per conversation (2-fold: tune on one, read the other)")
