"""`bench feel`: memory a person can feel, on short chat scripts through the offline engine.

Each script is a fresh user's conversation: `say` steps are turns whose reply is not checked, `ask`
steps are turns whose reply is (`expect_any`: at least one of these substrings, case-insensitive;
`expect_none`: none of them). Every turn goes through the real write path
(memory/services/turns.py turn_run) with the offline engine and the after-reply work run inline
between turns, as `manage.py chat` does with MAINTENANCE_MODE=sync. An ask's `kind` is what it
measures:

- told: a fact told is answered from the next turn on;
- current: the current value after a change;
- past: the past value when the question is about the past;
- nonchange: visits, hypotheticals and other people's changes leave the fact;
- forget, correct, why: talking to memory in the chat (scripts in feel_talk.json).

The scripts are memory/benchmarks/data/feel_first.json (the half the engine may be tuned on),
feel_fresh.json (fresh wording, written before the first half's results were seen) and
feel_talk.json when present. A turn that raises, or a script that is not well formed, is an error:
the command fails (non-zero exit) and reports no rate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from memory.benchmarks import common

DATA = Path(__file__).resolve().parent / "data"
HALVES = {"first": DATA / "feel_first.json", "fresh": DATA / "feel_fresh.json", "talk": DATA / "feel_talk.json"}
KINDS = ("told", "current", "past", "nonchange", "forget", "correct", "why")
TARGETS = {"told": 0.95, "current": 0.90, "past": 0.80, "nonchange": 0.95, "forget": 1.0, "correct": 0.90,
           "why": 0.90}


def add_arguments(parser) -> None:
    parser.add_argument("--half", action="append", choices=sorted(HALVES),
                        help="which scripts to run (repeatable; default: every file present)")
    parser.add_argument("--file", type=Path, action="append", default=[],
                        help="a script file of your own (the same format), run as its own half")
    parser.add_argument("--script", action="append", default=[], help="run only scripts with this name")
    parser.add_argument("--misses", action="store_true", help="list each failed check with its reply")
    parser.add_argument("--in-place", action="store_true",
                        help="throwaway users in the configured database instead of a fresh one (tests)")


def load_scripts(path: Path) -> list[dict[str, Any]]:
    """A script file's scripts, checked: a malformed one is an error naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path}: cannot read the scripts: {exc}") from None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, list):
        raise CommandError(f"{path}: expected {{\"scripts\": [...]}}")
    for script in scripts:
        name = script.get("name") if isinstance(script, dict) else None
        steps = script.get("steps") if isinstance(script, dict) else None
        if not isinstance(name, str) or not isinstance(steps, list) or not steps:
            raise CommandError(f"{path}: every script needs a name and steps ({script!r:.80})")
        for step in steps:
            if not isinstance(step, dict) or ("say" in step) == ("ask" in step):
                raise CommandError(f"{path}: {name}: a step is either {{\"say\": ...}} or {{\"ask\": ...}}")
            if "ask" in step and step.get("kind") not in KINDS:
                raise CommandError(f"{path}: {name}: an ask's kind is one of {', '.join(KINDS)}")
            if "ask" in step and not (step.get("expect_any") or step.get("expect_none") or step.get("expect_all")):
                raise CommandError(f"{path}: {name}: an ask needs expect_any, expect_all or expect_none")
    return scripts


def check(reply: str, step: dict[str, Any], *, today: str = "") -> tuple[bool, str]:
    """Whether a reply passes an ask (expect_any: one of; expect_all: every one; expect_none: none
    of; "{today}" stands for the day the script runs, as replies write it), and why not."""
    lowered = reply.lower()

    def said(words: str) -> bool:
        return words.replace("{today}", today).lower() in lowered

    any_of, all_of, none_of = (step.get(key) or () for key in ("expect_any", "expect_all", "expect_none"))
    if any_of and not any(map(said, any_of)):
        return False, f"none of {list(any_of)}"
    missing = [w for w in all_of if not said(w)]
    if missing:
        return False, f"misses {missing}"
    unwanted = [w for w in none_of if said(w)]
    if unwanted:
        return False, f"holds {unwanted}"
    return True, ""


def run_script(user, script: dict[str, Any]) -> list[dict[str, Any]]:
    """One script's checks: its turns in order through turn_run (maintenance inline)."""
    from django.utils import timezone

    from memory.engine.memory_talk import day
    from memory.services.turns import turn_run

    results = []
    for number, step in enumerate(script["steps"]):
        message = step.get("say") or step["ask"]
        try:
            reply = turn_run(user=user, message=message).reply
        except Exception as exc:
            raise CommandError(f"{script['name']} step {number}: the turn failed: {type(exc).__name__}: {exc}") from exc
        if "ask" in step:
            passed, why = check(reply, step, today=day(timezone.now()))
            results.append({"script": script["name"], "kind": step["kind"], "ask": message, "passed": passed,
                            "why": why, "reply": reply})
    return results


def run_halves(halves: dict[str, Sequence[dict[str, Any]]], *, only: Sequence[str] = (),
               show: bool = False, in_place: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Each half's checks, every script for a fresh user in a fresh store (the offline engine)."""
    from memory.adapters import configured

    if configured.chat_model() is not None:
        raise CommandError("bench feel measures the offline engine: unset the LLM endpoint (LLM_ENABLED=0)")
    results: dict[str, list[dict[str, Any]]] = {}
    with common.bench_env(isolate_db=not in_place) as env:
        for half, scripts in halves.items():
            chosen = [s for s in scripts if not only or s["name"] in only]
            results[half] = []
            for script in common.progress_iter(chosen, f"feel {half}", enabled=show):
                results[half] += run_script(env.make_user("feel"), script)
    return results


def scores(checks: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per kind: asked, passed, the rate and whether it meets its target."""
    table = {}
    for kind in KINDS:
        mine = [c for c in checks if c["kind"] == kind]
        if mine:
            passed = sum(c["passed"] for c in mine)
            rate = passed / len(mine)
            table[kind] = {"asked": len(mine), "passed": passed, "rate": round(rate, 3), "target": TARGETS[kind],
                           "met": rate >= TARGETS[kind]}
    return table


def run(options: dict, stdout) -> dict:
    asked, files = options.get("half"), options.get("file") or ()
    halves = {name: HALVES[name] for name in asked or ()} if asked or files else {
        name: path for name, path in HALVES.items() if path.exists()}
    halves.update({path.stem: path for path in files})
    loaded: dict[str, list[dict[str, Any]]] = {}
    for name, path in halves.items():  # a file whose scripts name their half (feel_talk.json) is split by it
        for script in load_scripts(path):
            loaded.setdefault(f"{name}-{script['half']}" if script.get("half") else name, []).append(script)
    checks = run_halves(loaded, only=options.get("script") or (), show=not options.get("no_progress"),
                        in_place=bool(options.get("in_place")))
    return {"benchmark": "feel", "date": common.today(), "machine": common.machine(),
            "halves": {half: {"scripts": len({c["script"] for c in found}), "scores": scores(found),
                              "misses": [c for c in found if not c["passed"]]}
                       for half, found in checks.items()},
            "show_misses": bool(options.get("misses"))}


def render(result: dict) -> str:
    parts = []
    for half, found in result["halves"].items():
        rows = [[kind, s["asked"], s["passed"], f"{100 * s['rate']:.0f} %", f"≥ {100 * s['target']:.0f} %",
                 "yes" if s["met"] else "NO"] for kind, s in found["scores"].items()]
        parts.append(common.render_table(["kind", "asked", "passed", "rate", "target", "met"], rows,
                                         title=f"{half}: {found['scripts']} scripts"))
        if result.get("show_misses"):
            parts += [f"  miss {m['script']} [{m['kind']}] {m['ask']!r}: {m['why']}\n    reply: {m['reply'][:300]}"
                      for m in found["misses"]]
    parts.append(f"{result['date']}, {result['machine']}; offline engine, maintenance inline between turns.")
    return "\n\n".join(parts)
