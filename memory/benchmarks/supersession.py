"""`manage.py bench supersession`: the offline contradiction detector on hand-written scenarios.

Each scenario holds a user's current long-term memories, a new statement and which memory (if any)
the statement supersedes. Three sets ship in memory/benchmarks/data, written one after the other:
`tune` (the detector was tuned on it), then `held_out` and `fresh`, each first run untuned (those
first runs are in BENCHMARKS.md) and then tuned on too.
A detection counts as right when it names the expected memory, as a supersession or as a review;
naming another memory is both a false positive and a false negative. Pure: no database.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from memory.benchmarks import common
from memory.engine.supersession import Decision, Memory, supersession_candidates, supersession_decide

DATA = Path(__file__).resolve().parent / "data"
SETS = ("tune", "held_out", "fresh")


def add_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, action="append",
                        help="a scenario file (repeatable); default: the tune, held-out and fresh sets")
    parser.add_argument("--show-errors", action="store_true", help="list the scenarios it got wrong")
    parser.add_argument("--conversations", type=Path,
                        help="a LoCoMo-format file: run the detector over each speaker's own utterances in "
                             "order, each against that speaker's earlier ones, and list what it decides")
    parser.add_argument("--sample", type=int, default=20, help="decisions listed from --conversations (default 20)")


def load_scenarios(path: Path) -> list[dict[str, Any]]:
    try:
        scenarios = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CommandError(f"Cannot read scenarios from {path}: {exc}") from None
    for scenario in scenarios:
        missing = {"id", "current", "statement", "expect"} - set(scenario)
        if missing:
            raise CommandError(f"Scenario {scenario.get('id', '?')} in {path} lacks {sorted(missing)}.")
    return scenarios


def score(scenarios: list[dict[str, Any]]) -> dict[str, Any]:
    """The confusion counts, precision and recall, and the scenarios it got wrong."""
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "supersede": 0, "review": 0}
    errors = []
    for scenario in scenarios:
        memories = [Memory(id=str(i), text=text) for i, text in enumerate(scenario["current"])]
        verdict = supersession_decide(scenario["statement"], memories)
        got = None if verdict.decision is Decision.NONE else int(verdict.old_id or 0)
        expected = scenario["expect"]
        if expected is not None and got == expected:
            counts["tp"] += 1
            counts[verdict.decision.value] += 1
        elif expected is None and got is None:
            counts["tn"] += 1
        else:
            counts["fp"] += got is not None
            counts["fn"] += expected is not None
            errors.append({"id": scenario["id"], "expected": expected, "got": got,
                           "decision": verdict.decision.value, "reason": verdict.reason})
    predicted, actual = counts["tp"] + counts["fp"], counts["tp"] + counts["fn"]
    return {**counts, "scenarios": len(scenarios), "contradictions": actual,
            "precision": round(counts["tp"] / predicted, 3) if predicted else float("nan"),
            "recall": round(counts["tp"] / actual, 3) if actual else float("nan"), "errors": errors}


def conversation_decisions(path: Path) -> list[dict[str, Any]]:
    """Every decision the detector makes over a conversation: each utterance, as a new statement,
    against the same speaker's earlier utterances that are still current (a superseded one drops out)."""
    from memory.formats.locomo import LocomoFormatError, load_conversations

    try:
        conversations = load_conversations(path)
    except (OSError, LocomoFormatError, ValueError) as exc:
        raise CommandError(f"Cannot read conversations from {path}: {exc}") from None
    decisions = []
    for conv in conversations:
        for speaker in (conv.speaker_a, conv.speaker_b):
            current: list[Memory] = []
            for _session, when, turns in conv.sessions:
                for turn in turns:
                    if turn.speaker != speaker:
                        continue
                    for verdict in supersession_candidates(turn.text, current):
                        old = next(m for m in current if m.id == verdict.old_id)
                        decisions.append({"conversation": conv.sample_id, "speaker": speaker,
                                          "decision": verdict.decision.value, "slot": verdict.slot,
                                          "confidence": verdict.confidence, "old": old.text,
                                          "old_at": str(old.at.date()) if old.at else "", "new": turn.text,
                                          "new_at": str(when.date()), "reason": verdict.reason})
                        if verdict.decision is Decision.SUPERSEDE:
                            current = [m for m in current if m.id != verdict.old_id]
                    current.append(Memory(id=turn.dia_id, text=turn.text, at=when))
    return decisions


def run(options: dict[str, Any], stdout) -> dict[str, Any]:
    if options.get("conversations"):
        decisions = conversation_decisions(options["conversations"])
        counts: dict[str, dict[str, int]] = {}
        for d in decisions:
            counts.setdefault(d["conversation"], {"supersede": 0, "review": 0})[d["decision"]] += 1
        sample = random.Random(27).sample(decisions, min(options.get("sample", 20), len(decisions)))
        return {"conversations": counts, "sample": sample, "date": common.today()}
    paths = options.get("data") or [DATA / f"supersession_{name}.json" for name in SETS]
    sets = {path.stem.removeprefix("supersession_"): load_scenarios(path) for path in paths}
    result = {name: score(scenarios) for name, scenarios in sets.items()}
    if len(sets) > 1:
        result["all"] = score([s for scenarios in sets.values() for s in scenarios])
    return {"sets": result, "show_errors": bool(options.get("show_errors")), "date": common.today()}


def render(result: dict[str, Any]) -> str:
    if "conversations" in result:
        table = common.render_table(
            ["conversation", "supersede", "review"],
            [[name, c["supersede"], c["review"]] for name, c in result["conversations"].items()],
            title=f"Detector over each speaker's utterances ({result['date']})")
        lines = [f"- [{d['decision']} {d['confidence']}] {d['conversation']} {d['speaker']}: "
                 f"{d['old']!r} ({d['old_at']}) -> {d['new']!r} ({d['new_at']}); {d['reason']}"
                 for d in result["sample"]]
        return "\n".join([table, *lines]) + "\n"
    sets = result["sets"]
    table = common.render_table(
        ["set", "scenarios", "contradictions", "TP (supersede/review)", "FP", "FN", "TN", "precision", "recall"],
        [[name, r["scenarios"], r["contradictions"], f"{r['tp']} ({r['supersede']}/{r['review']})", r["fp"],
          r["fn"], r["tn"], r["precision"], r["recall"]] for name, r in sets.items()],
        title=f"Offline supersession detection ({result['date']})")
    parts = [table]
    if result["show_errors"]:
        for name, r in sets.items():
            if name == "all":
                continue
            parts += [f"{name}: {e['id']} expected {e['expected']}, got {e['got']} ({e['decision']}: {e['reason']})"
                      for e in r["errors"]]
    return "\n".join(parts) + "\n"
