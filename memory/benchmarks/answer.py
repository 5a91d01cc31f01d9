"""`manage.py bench answer --data FILE`: how often the offline engine's reply holds the answer.

Per conversation, in a fresh database and vector shard: replay it through the real write path
(memory.services.importing.conversation_import), then, for each single-hop (category 4) and
temporal (category 2) question, recall as a turn does (no trace, no heat update, so questions do
not change the memory the next one sees; utterances of STM ranked too) and compose the offline
reply (memory.engine.offline.compose_reply) as of the conversation's last session. A reply counts
when it contains every key token of the gold answer: LoCoMo's normalisation and Porter stems
(memory.benchmarks.qa), less function words. Beside it, in the same run, baselines that quote
turns with the date they were said: the top BM25 turn (rank-bm25 over the raw turns), the top
three BM25 turns, and the recall's own top utterance. Words per reply are reported too: a longer
reply has more chances to hold the tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from memory.benchmarks.common import bench_env, machine, progress, render_table, summarize_ms, today
from memory.benchmarks.evidence import TurnBaselines
from memory.benchmarks.qa import answer_tokens
from memory.engine.when import day_text
from memory.formats.locomo import Conversation, LocomoFormatError, load_conversations
from memory.recall.base import policy_names

CATEGORIES = {4: "single-hop", 2: "temporal"}
METHODS = ("offline engine", "bm25 top turn", "bm25 top 3 turns", "recall top turn")
# Words that carry no answer: "in 2022" is answered by a reply that says 2022.
FUNCTION_WORDS = frozenset(answer_tokens(
    "in on at of to for by with from is was are were be been her his their she he they it its i my you your "
    "me we our them him this that there"))


def add_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="a file in the public LoCoMo format")
    parser.add_argument("--sample", action="append", type=int, help="only these conversations (index)")
    parser.add_argument("--policy", choices=policy_names(), default=None,
                        help="recall policy (default: MEMORYOS_RECALL_POLICY)")
    parser.add_argument("--max-questions", type=int, default=0,
                        help="answer at most this many questions per conversation (default: all)")
    parser.add_argument("--examples", type=int, default=0,
                        help="keep this many replies per conversation in the JSON result")


# Typographic punctuation, which LoCoMo's normalisation (ASCII only) would leave stuck to words.
_TYPOGRAPHIC = str.maketrans({char: " " for char in "“”‘’–—…"})


def _tokens(text: str) -> frozenset[str]:
    return frozenset(answer_tokens(text.translate(_TYPOGRAPHIC)))


def key_tokens(gold: str) -> frozenset[str]:
    """What a reply must contain: the gold answer's stemmed tokens, function words aside."""
    tokens = _tokens(gold)
    return tokens - FUNCTION_WORDS or tokens


def contains_answer(reply: str, gold: str) -> tuple[bool, float]:
    """(every key token is in the reply, the share of key tokens that are)."""
    wanted = key_tokens(gold)
    if not wanted:
        return False, 0.0
    found = wanted & _tokens(reply)
    return found == wanted, len(found) / len(wanted)


def _quote(turns: list[tuple[str, str]], said_on: dict[str, Any]) -> str:
    """Turns quoted with the day each was said, as the offline reply quotes memories."""
    return " ".join(f"On {day_text(said_on[dia_id])}, {text}" for dia_id, text in turns)


def _questions(conversation: Conversation, limit: int) -> list[dict[str, Any]]:
    found = [qa for qa in conversation.qa if qa.get("category") in CATEGORIES
             and isinstance(qa.get("question"), str) and qa.get("answer") not in (None, "")]
    return found[:limit] if limit else found


def _replies(user, conversation: Conversation, policy: str | None) -> Callable[[str], dict[str, str]]:
    """question -> each method's reply."""
    from memory.adapters import configured
    from memory.engine.offline import compose_reply
    from memory.models import Tier
    from memory.services.recall import recall_for_query

    said_on = {turn.dia_id: date for _, date, turns in conversation.sessions for turn in turns}
    baselines = TurnBaselines(conversation, configured.embedder().embed)
    texts = dict(baselines.turns)
    now = max(date for _, date, _ in conversation.sessions)

    def replies(question: str) -> dict[str, str]:
        recall = recall_for_query(user=user, query=question, record_trace=False, update_heat=False, policy=policy,
                                  turn_tiers=(Tier.STM, Tier.MTM))
        bm25 = [unit.source_ids[0] for unit in baselines.bm25(question)[:3]]
        top = next((i for i in recall.items if i.kind == "turn" and i.source_ids), None)
        return {
            "offline engine": compose_reply(question, recall.items, now=now),
            "bm25 top turn": _quote([(bm25[0], texts[bm25[0]])], said_on),
            "bm25 top 3 turns": _quote([(dia_id, texts[dia_id]) for dia_id in bm25], said_on),
            "recall top turn": _quote([(top.source_ids[0], top.text)], said_on) if top else "",
        }

    return replies


def _conversation(conversation: Conversation, options: dict, show: bool) -> list[dict[str, Any]]:
    from memory.services.importing import conversation_import

    with bench_env() as env:
        user = env.make_user(prefix=f"answer-{conversation.sample_id}")
        conversation_import(user=user, conversation=conversation, progress=show)
        replies = _replies(user, conversation, options.get("policy"))
        asked = _questions(conversation, options.get("max_questions") or 0)
        bar = progress(len(asked), f"answers {conversation.sample_id}", enabled=show)
        results = []
        for qa in asked:
            started = time.perf_counter()
            said = replies(qa["question"])
            seconds = time.perf_counter() - started
            scored = {name: contains_answer(text, str(qa["answer"])) for name, text in said.items()}
            results.append({"sample": conversation.sample_id, "question": qa["question"], "gold": str(qa["answer"]),
                            "category": qa["category"], "ms": round(seconds * 1000, 1), "replies": said,
                            "hit": {name: hit for name, (hit, _) in scored.items()},
                            "token_recall": {name: share for name, (_, share) in scored.items()}})
            bar.update(1)
        bar.close()
        return results


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")


def summarize(answers: list[dict[str, Any]]) -> dict[str, Any]:
    groups = {name: [a for a in answers if a["category"] == cat] for cat, name in CATEGORIES.items()}
    groups["both"] = answers
    return {
        group: {"n": len(items), **{method: {
            "contains_answer": _mean([float(a["hit"][method]) for a in items]),
            "key_token_recall": _mean([a["token_recall"][method] for a in items]),
            "words": _mean([float(len(a["replies"][method].split())) for a in items]),
        } for method in METHODS}}
        for group, items in groups.items()
    }


def run(options: dict[str, Any], stdout) -> dict[str, Any]:
    try:
        conversations = load_conversations(options["data"])
    except LocomoFormatError as exc:
        raise CommandError(f"Malformed conversation file: {exc}") from None
    if options.get("sample"):
        conversations = [conversations[i] for i in options["sample"]]
    show = not options.get("no_progress")
    answers = [a for conversation in conversations for a in _conversation(conversation, options, show)]
    from django.conf import settings

    keep = options.get("examples") or 0
    examples = [a for sample in dict.fromkeys(a["sample"] for a in answers)
                for a in [x for x in answers if x["sample"] == sample][:keep]]
    return {"benchmark": "answer", "date": today(), "machine": machine(), "data": str(options["data"]),
            "policy": options.get("policy") or settings.MEMORYOS["RECALL_POLICY"],
            "conversations": [c.sample_id for c in conversations], "summary": summarize(answers),
            "reply_ms": summarize_ms([a["ms"] for a in answers]), "examples": examples}


def render(result: dict[str, Any]) -> str:
    summary = result["summary"]
    groups = [*CATEGORIES.values(), "both"]
    rows = [[method, *[summary[g][method]["contains_answer"] for g in groups],
             *[summary[g][method]["key_token_recall"] for g in groups], summary["both"][method]["words"]]
            for method in METHODS]
    headers = ["method", *[f"contains {g} (n={summary[g]['n']})" for g in groups],
               *[f"key tokens {g}" for g in groups], "words/reply"]
    title = (f"Offline answers on {result['data']} ({', '.join(result['conversations'])}), policy {result['policy']}: "
             "share of replies containing the gold answer's key tokens")
    ms = result["reply_ms"]
    return "\n".join([render_table(headers, rows, title=title), "",
                      f"recall + all replies per question: p50 {ms['p50']} ms, p95 {ms['p95']} ms",
                      f"{result['date']}, {result['machine']}."])
