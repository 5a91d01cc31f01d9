"""`bench understanding`: what people say, understood: facts captured from statements in everyday
wording, nothing from what states nothing, no promise to remember what was not kept, and changes
and corrections that reach the next answer.

The statements are memory/benchmarks/data/understanding_tune.json (the half the reader is tuned on)
and understanding_fresh.json (held out: written by a helper who had not read the code, never tuned
on). Each statement is the first message of a fresh user, sent through the real write path
(memory/services/turns.py turn_run, offline engine, the after-reply work inline); then the facts
stored for that user are read back:

- capture: a fact statement is captured when a stored fact holds every word its `about` names
  (one of "a|b"); recall is captured / fact statements, precision is captured / statements that
  stored any fact (a fact stored for a statement of no fact, or a wrong one, counts against it);
- negation kept: a captured negative fact still says no (not, n't, no, never, without);
- answered: the statement's `ask`, sent next, is answered with one of `answer_any`;
- false "I'll remember": a reply that says it will remember (or noted) when the turn stored no fact.

Each change script (`changes`) is a fresh user's turns: `before`, `say`, then `ask`, whose answer
must hold one of `answer_any` and none of `answer_none`. Change and correction scripts measure
recall of the change; non-changes measure that nothing was changed.

`--engine` reads the statements with the offline reader alone (no database, no turn): capture only.
The reader's judgement by meaning (memory/engine/judging.py) compares statements with the tune,
dev2 and dev3 halves' statements: on those halves its figures are in-sample; the fresh half is the
one none of it has seen.
A turn that raises, or a file that is not well formed, is an error: the command fails and reports
no rate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from memory.benchmarks import common

DATA = Path(__file__).resolve().parent / "data"
HALVES = {"tune": DATA / "understanding_tune.json", "fresh": DATA / "understanding_fresh.json"}
# Requests not to keep something ("never store this: …"), each naming a detail, and controls that
# mention forgetting while they state a fact (issue 49), in the same two halves.
REQUESTS = DATA / "forget_requests.json"
FACT_KINDS = ("health", "diet", "allergy", "family", "partner", "pet", "home", "origin", "language", "work",
              "education", "plan", "hobby", "preference", "possession", "routine", "identity")
NO_FACT_KINDS = ("hypothetical", "others_news", "question", "small_talk", "mood", "opinion", "request")
CHANGE_KINDS = ("change", "correction", "nonchange")
TARGETS = {"recall": 0.90, "precision": 0.95, "false_promises": 0, "facts_from_requests": 0}
# What a reply says when it claims to keep something.
PROMISE = re.compile(r"\bI(?:'ll| will) (?:remember|keep|note|make a note)\b|\bI(?:'ve| have) (?:noted|saved|stored|"
                     r"remembered|made a note)\b|\bnoted\b|\bI'll keep (?:that|it) in mind\b", re.I)
NEGATION = re.compile(r"\bnot\b|n't\b|\bno\b|\bnever\b|\bwithout\b|\bno longer\b", re.I)


def add_arguments(parser) -> None:
    parser.add_argument("--half", action="append", choices=sorted({*HALVES, *request_halves()}),
                        help="which statements (and their requests) to run, or a half of requests alone "
                             "(repeatable; default: all)")
    parser.add_argument("--file", type=Path, action="append", default=[],
                        help="a statements file of your own (the same format), run as its own half")
    parser.add_argument("--engine", action="store_true",
                        help="the offline reader alone, no turns: capture only (fast)")
    parser.add_argument("--limit", type=int, default=0, help="the first N statements and N change scripts of each half")
    parser.add_argument("--misses", action="store_true", help="list each miss with what was stored and replied")
    parser.add_argument("--in-place", action="store_true",
                        help="throwaway users in the configured database instead of a fresh one (tests)")


def load(path: Path) -> dict[str, list[dict[str, Any]]]:
    """A file's statements and change scripts, checked: a malformed entry is an error naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path}: cannot read the statements: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("statements"), list):
        raise CommandError(f"{path}: expected {{\"statements\": [...], \"changes\": [...]}}")
    for entry in data["statements"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or not isinstance(
                entry.get("fact"), bool) or entry.get("kind") not in FACT_KINDS + NO_FACT_KINDS:
            raise CommandError(f"{path}: a statement needs text, fact (true/false) and a known kind ({entry!r:.80})")
        if entry["fact"] and not entry.get("about"):
            raise CommandError(f"{path}: {entry.get('id')}: a fact statement names the words of its fact (about)")
    for script in data.get("changes", []):
        if not isinstance(script, dict) or script.get("kind") not in CHANGE_KINDS or not script.get("say") \
                or not script.get("ask") or not script.get("answer_any"):
            raise CommandError(f"{path}: a change script needs kind, say, ask and answer_any ({script!r:.80})")
    return {"statements": data["statements"], "changes": data.get("changes", [])}


def holds(text: str, words: Iterable[str]) -> bool:
    """Whether a text holds every word ("a|b": one of them), case-insensitive, a hyphen read as a
    space ("night-shift" is held by "night shift")."""
    lowered = text.lower().replace("-", " ")
    return all(any(option.lower().replace("-", " ") in lowered for option in word.split("|")) for word in words)


def _captured(entry: dict[str, Any], facts: Sequence[str]) -> tuple[bool, bool]:
    """Whether the facts capture the statement's fact, and (for a negative one) keep its no."""
    from memory.engine.wording import to_person

    said = [f"{fact} / {to_person(fact)}" for fact in facts]
    right = [fact for fact in said if holds(fact, entry["about"])]
    return bool(right), bool(right) and (not entry.get("negated") or any(NEGATION.search(f) for f in right))


def _statement_check(entry: dict[str, Any], facts: Sequence[str], reply: str = "", answer: str = "") -> dict:
    captured, negation = _captured(entry, facts) if entry["fact"] else (False, False)
    check = {"id": entry.get("id", ""), "kind": entry["kind"], "form": entry.get("form", ""), "fact": entry["fact"],
             "text": entry["text"], "facts": list(facts), "captured": captured, "negation_kept": negation,
             "reply": reply, "false_promise": bool(reply) and not facts and bool(PROMISE.search(reply))}
    if entry["fact"] and entry.get("about_all"):
        check["all_captured"] = all(_captured({**entry, "about": words}, facts)[0] for words in entry["about_all"])
    if entry.get("ask") and answer:
        check["answered"] = any(word.lower() in answer.lower() for word in entry.get("answer_any", ()))
        check["answer"] = answer
    return check


def _turn(user, message: str, what: str) -> str:
    from memory.services.turns import turn_run

    try:
        return turn_run(user=user, message=message).reply
    except Exception as exc:
        raise CommandError(f"{what}: the turn failed: {type(exc).__name__}: {exc}") from exc


def _current_facts(user) -> list[str]:
    from persona.models import KnowledgeFact

    return list(KnowledgeFact.objects.filter(user=user, valid_until__isnull=True).values_list("text", flat=True))


def run_statements(env, statements: Sequence[dict[str, Any]], *, label: str, show: bool) -> list[dict]:
    checks = []
    for entry in common.progress_iter(statements, f"{label} statements", enabled=show):
        user = env.make_user("understand")
        reply = _turn(user, entry["text"], entry.get("id", entry["text"][:40]))
        facts = _current_facts(user)
        answer = _turn(user, entry["ask"], f"{entry.get('id')} ask") if entry.get("ask") and entry["fact"] else ""
        checks.append(_statement_check(entry, facts, reply, answer))
    return checks


# When the answer says it was told ("(you told me on 29 November 2026)", "On 29 November 2026 (today)
# you told me"): the day of telling, which an old value must not be found in ("I'm 29" -> "30").
_PROVENANCE = re.compile(r"\(you told me on [^)]*\)|\bOn \d{1,2} \w+ \d{4}(?: \(today\))?(?= you told me)")


def _without_provenance(answer: str) -> str:
    return _PROVENANCE.sub("", answer)


def run_changes(env, scripts: Sequence[dict[str, Any]], *, label: str, show: bool) -> list[dict]:
    checks = []
    for script in common.progress_iter(scripts, f"{label} changes", enabled=show):
        user = env.make_user("understand")
        for message in [*script.get("before", ()), script["say"]]:
            _turn(user, message, script.get("id", "change"))
        answer = _turn(user, script["ask"], f"{script.get('id')} ask")
        right = any(w.lower() in answer.lower() for w in script["answer_any"])
        claims = _without_provenance(answer).lower()
        kept_out = not any(w.lower() in claims for w in script.get("answer_none", ()))
        checks.append({"id": script.get("id", ""), "kind": script["kind"], "say": script["say"],
                       "ask": script["ask"], "answer": answer, "passed": right and kept_out,
                       "changed": kept_out if script["kind"] != "nonchange" else not right})
    return checks


def engine_statements(statements: Sequence[dict[str, Any]]) -> list[dict]:
    """The statements read by the offline reader alone (its parse, and its judgement by meaning:
    memory/services/facts.py facts_judged_offline), no turn, no database."""
    from memory.engine.facts import facts_of_all, statement_in
    from memory.services.facts import facts_judged_offline

    facts_of_all(statement_in(entry["text"]) for entry in statements)  # parsed in one batch
    return [_statement_check(entry, facts_judged_offline(statement_in(entry["text"]))) for entry in statements]


def request_halves() -> list[str]:
    try:
        return list(json.loads(REQUESTS.read_text(encoding="utf-8"))["halves"])
    except (OSError, ValueError, KeyError) as exc:
        raise CommandError(f"{REQUESTS}: cannot read the requests: {exc}") from None


def load_requests(half: str) -> list[dict[str, Any]]:
    """The half's requests not to keep and its controls, each {"text", "detail", "request"}."""
    try:
        halves = json.loads(REQUESTS.read_text(encoding="utf-8"))["halves"]
    except (OSError, ValueError, KeyError) as exc:
        raise CommandError(f"{REQUESTS}: cannot read the requests: {exc}") from None
    if half not in halves:
        return []
    return [{**entry, "request": request} for request, key in ((True, "requests"), (False, "controls"))
            for entry in halves[half][key]]


def _request_check(entry: dict[str, Any], facts: Sequence[str], reply: str = "") -> dict:
    """A request: no fact at all may come of it, and no promise; a control: its fact is kept."""
    kept = any(holds(fact, entry["detail"].split()) for fact in facts)
    return {"text": entry["text"], "request": entry["request"], "facts": list(facts), "reply": reply,
            "right": not facts if entry["request"] else kept,
            "false_promise": entry["request"] and bool(PROMISE.search(reply))}


def run_requests(env, entries: Sequence[dict[str, Any]], *, label: str, show: bool) -> list[dict]:
    checks = []
    for entry in common.progress_iter(entries, f"{label} requests", enabled=show):
        user = env.make_user("understand")
        reply = _turn(user, entry["text"], entry["text"][:40])
        checks.append(_request_check(entry, _current_facts(user), reply))
    return checks


def engine_requests(entries: Sequence[dict[str, Any]]) -> list[dict]:
    from memory.engine.facts import statement_in
    from memory.services.facts import facts_judged_offline

    return [_request_check(entry, facts_judged_offline(statement_in(entry["text"]))) for entry in entries]


def request_scores(checks: Sequence[dict]) -> dict[str, Any]:
    requests = [c for c in checks if c["request"]]
    controls = [c for c in checks if not c["request"]]
    return {"requests": len(requests), "facts_from_requests": sum(not c["right"] for c in requests),
            "false_promises": sum(c["false_promise"] for c in requests), "controls": len(controls),
            "controls_kept": sum(c["right"] for c in controls)}


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def capture_scores(checks: Sequence[dict]) -> dict[str, Any]:
    """Recall and precision of capture, by kind and overall; negations kept, answers, false promises."""
    def score(rows: Sequence[dict]) -> dict[str, Any]:
        facts = [c for c in rows if c["fact"]]
        captured = sum(c["captured"] for c in facts)
        storing = [c for c in rows if c["facts"]]
        asked = [c for c in rows if "answered" in c]
        negative = [c for c in facts if c["captured"] and c["form"] == "negation"]
        return {"statements": len(rows), "facts": len(facts), "captured": captured,
                "stored_any": len(storing), "wrong": sum(1 for c in storing if not c["captured"]),
                "recall": _rate(captured, len(facts)), "precision": _rate(captured, len(storing)) if storing else (
                    1.0 if rows else None),
                "negation_kept": _rate(sum(c["negation_kept"] for c in negative), len(negative)),
                "answered": _rate(sum(c["answered"] for c in asked), len(asked)), "asked": len(asked),
                "false_promises": sum(c["false_promise"] for c in rows)}
    kinds = {kind: score([c for c in checks if c["kind"] == kind]) for kind in FACT_KINDS + NO_FACT_KINDS
             if any(c["kind"] == kind for c in checks)}
    forms = {form: score([c for c in checks if c["fact"] and c["form"] == form])
             for form in sorted({c["form"] for c in checks if c["fact"] and c["form"]})}
    return {"all": score(checks), "kinds": kinds, "forms": forms,
            "multi_complete": _rate(sum(c.get("all_captured", False) for c in checks),
                                    sum("all_captured" in c for c in checks))}


def change_scores(checks: Sequence[dict]) -> dict[str, Any]:
    kinds = {}
    for kind in CHANGE_KINDS:
        mine = [c for c in checks if c["kind"] == kind]
        if mine:
            kinds[kind] = {"scripts": len(mine), "passed": sum(c["passed"] for c in mine),
                           "rate": _rate(sum(c["passed"] for c in mine), len(mine))}
    changes = [c for c in checks if c["kind"] != "nonchange"]
    detected = sum(c["passed"] for c in changes)
    false_changes = sum(c["changed"] for c in checks if c["kind"] == "nonchange")
    return {"kinds": kinds, "recall": _rate(detected, len(changes)),
            "precision": _rate(detected, detected + false_changes) if detected + false_changes else None}


def run(options: dict, stdout) -> dict:
    asked = options.get("half") or ()
    halves = ({name: HALVES[name] for name in asked if name in HALVES} if asked or options.get("file")
              else dict(HALVES))
    halves.update({path.stem: path for path in options.get("file") or ()})
    loaded = {name: load(path) for name, path in halves.items()}
    limit = options.get("limit") or 0
    if limit:
        loaded = {name: {key: rows[:limit] for key, rows in data.items()} for name, data in loaded.items()}
    show = not options.get("no_progress")
    result: dict[str, Any] = {"benchmark": "understanding", "date": common.today(), "machine": common.machine(),
                              "engine_only": bool(options.get("engine")), "targets": TARGETS, "halves": {},
                              "show_misses": bool(options.get("misses"))}
    requests = {name: load_requests(name)[:limit or None] for name in loaded}
    # Halves of requests alone (a later fresh half, written once the first two were tuned on).
    alone = [name for name in request_halves() if name not in HALVES and (not asked or name in asked)]
    requests.update({name: load_requests(name)[:limit or None] for name in alone})
    if options.get("engine"):
        for name in alone:
            result["halves"][name] = {"requests": request_scores(asked := engine_requests(requests[name])),
                                      "misses": _misses([], [], asked)}
        for name, data in loaded.items():
            checks = engine_statements(data["statements"])
            asked = engine_requests(requests[name])
            result["halves"][name] = {"capture": capture_scores(checks), "requests": request_scores(asked),
                                      "misses": _misses(checks, [], asked)}
        return result
    from memory.adapters import configured

    if configured.chat_model() is not None:
        raise CommandError("bench understanding measures the offline engine: unset the LLM endpoint (LLM_ENABLED=0)")
    with common.bench_env(isolate_db=not options.get("in_place")) as env:
        for name in alone:
            asked = run_requests(env, requests[name], label=name, show=show)
            result["halves"][name] = {"requests": request_scores(asked), "misses": _misses([], [], asked)}
        for name, data in loaded.items():
            checks = run_statements(env, data["statements"], label=name, show=show)
            changed = run_changes(env, data["changes"], label=name, show=show)
            asked = run_requests(env, requests[name], label=name, show=show)
            result["halves"][name] = {"capture": capture_scores(checks), "changes": change_scores(changed),
                                      "requests": request_scores(asked), "misses": _misses(checks, changed, asked)}
    return result


def _misses(checks: Sequence[dict], changed: Sequence[dict], asked: Sequence[dict] = ()) -> list[str]:
    lines = []
    for c in checks:
        if c["fact"] and not c["captured"] or not c["fact"] and c["facts"] or c["false_promise"]:
            why = "missed" if c["fact"] and not c["captured"] else "false promise" if c["false_promise"] else "stored"
            lines.append(f"{why} [{c['kind']}/{c['form']}] {c['text'][:120]!r} → {c['facts']}"
                         + (f"\n      reply: {c['reply'][:160]}" if c["reply"] else ""))
        elif c.get("answered") is False:
            lines.append(f"unanswered [{c['kind']}] {c['text'][:80]!r} → {c['answer'][:160]!r}")
    lines += [f"{c['kind']} {c['id']}: {c['say'][:80]!r} then {c['ask']!r} → {c['answer'][:160]!r}"
              for c in changed if not c["passed"]]
    lines += [f"{'request stored' if c['request'] else 'control lost'}: {c['text'][:100]!r} → {c['facts']}"
              for c in asked if not c["right"]]
    return lines


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f} %"


def _capture_tables(half: str, capture: dict) -> list[str]:
    rows = [[kind, s["statements"], s["facts"], s["captured"], s["wrong"], _pct(s["recall"]),
             _pct(s["precision"]), _pct(s["answered"]), s["false_promises"]]
            for kind, s in [*capture["kinds"].items(), ("all", capture["all"])]]
    forms = [[form, s["facts"], s["captured"], _pct(s["recall"])] for form, s in capture["forms"].items()]
    return [common.render_table(["kind", "statements", "facts", "captured", "wrong/false", "recall", "precision",
                                 "answered", "false promises"], rows, title=f"{half}: capture by kind"),
            common.render_table(["form", "facts", "captured", "recall"], forms,
                                title=f"{half}: capture by wording (negations kept: "
                                      f"{_pct(capture['all']['negation_kept'])}, every fact of a "
                                      f"multi-fact message: {_pct(capture['multi_complete'])})")]


def render(result: dict) -> str:
    parts = []
    for half, found in result["halves"].items():
        if "capture" in found:  # a half of requests alone has none
            parts += _capture_tables(half, found["capture"])
        if "changes" in found:
            changes = found["changes"]
            rows = [[kind, s["scripts"], s["passed"], _pct(s["rate"])] for kind, s in changes["kinds"].items()]
            title = (f"{half}: changes and corrections (detection recall {_pct(changes['recall'])}, "
                     f"precision {_pct(changes['precision'])})")
            parts.append(common.render_table(["kind", "scripts", "passed", "rate"], rows, title=title))
        if found.get("requests", {}).get("requests") or found.get("requests", {}).get("controls"):
            asked = found["requests"]
            parts.append(common.render_table(
                ["requests", "facts stored from one", "false promises", "controls", "controls kept"],
                [[asked["requests"], asked["facts_from_requests"], asked["false_promises"], asked["controls"],
                  asked["controls_kept"]]], title=f"{half}: requests not to keep (\"never store this: …\")"))
        if result.get("show_misses"):
            parts.append("\n".join(f"  {line}" for line in found["misses"]))
    mode = "the offline reader alone" if result["engine_only"] else "offline engine, maintenance inline"
    parts.append(f"{result['date']}, {result['machine']}; {mode}. Targets on the fresh half: recall ≥ "
                 f"{TARGETS['recall']:.2f}, precision ≥ {TARGETS['precision']:.2f}, false promises "
                 f"{TARGETS['false_promises']}, facts from requests not to keep {TARGETS['facts_from_requests']}.")
    return "\n\n".join(parts)
