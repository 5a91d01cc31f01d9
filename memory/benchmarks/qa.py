"""`bench qa --data FILE`: LoCoMo answer quality (F1, BLEU-1) with the configured LLM endpoint.

Per conversation, in a fresh database and vector shard: replay it through the real write path
(memory.services.importing.conversation_import: page_start, page_reply_store, maintenance after every page),
then answer each question of categories 1-4 (5, adversarial, is skipped) from retrieved memory
with one LLM call: recall_for_query (no trace, no heat update, so questions do not change the
memory the next one sees), the product's prompt assembly within the prompt budget, one
completion. Also counted: LLM calls and prompt tokens per answer (the adapter's counters), and
LLM calls made while the conversation was replayed (maintenance: segment summaries, persona
extraction, when a model is configured).

Scoring as in LoCoMo's task_eval/evaluation.py: answers normalised (lower case, commas and
punctuation removed, articles and "and" removed), tokens Porter-stemmed, token F1; category 1
(multi-hop) answers are split on commas and each gold part takes its best-matching predicted
part; category 3 gold answers keep the part before the first ";". BLEU-1 (LoCoMo's paper
reports it; its code does not define it): clipped unigram precision of the normalised,
unstemmed tokens times the brevity penalty exp(1 - r/c) when the answer is shorter than the gold.
"""

from __future__ import annotations

import functools
import math
import re
import string
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError

from memory.adapters import configured
from memory.benchmarks import common
from memory.config import memory_params
from memory.engine.ports import ModelError
from memory.engine.retrieval import assemble_prompt
from memory.formats.locomo import Conversation, LocomoFormatError, load_conversations
from memory.recall.base import default_policy_name, policy_names
from memory.services.importing import conversation_import
from memory.services.recall import recall_for_query
from memory.services.users import sona_get_or_create

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
QA_SYSTEM = (
    "You answer questions about a long conversation between {a} and {b}, using only the memory "
    "below (each line starts with the date it was said). Answer with a short phrase of a few words, "
    "not a sentence. For questions about time, answer with the date or period the memory gives, "
    "worked out from the date of the line when it says 'yesterday', 'last week' and the like."
)
ANSWER_MAX_TOKENS = 64
NO_ENDPOINT = ("bench qa needs an LLM endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY if the server wants "
               "one), e.g. OPENAI_BASE_URL=http://127.0.0.1:8080/v1 for a local llama.cpp or vLLM server.")


def add_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-format JSON file")
    parser.add_argument("--samples", type=int, nargs="+",
                        help="indices of the conversations to run (default: all)")
    parser.add_argument("--max-questions", type=int, default=0,
                        help="answer at most this many questions per conversation (default: all)")
    parser.add_argument("--policy", choices=policy_names(), default=None,
                        help="recall policy (default: MEMORYOS_RECALL_POLICY)")
    parser.add_argument("--in-place", action="store_true",
                        help="use the configured database with throwaway users instead of a fresh database")


# --------------------------------------------------------------------------- scoring (LoCoMo)

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = str(text).replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@functools.cache
def _stem(word: str) -> str:
    return _porter().stem(word)


@functools.cache
def _porter():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def answer_tokens(text: str) -> list[str]:
    """The LoCoMo way: normalised, then Porter-stemmed tokens."""
    return [_stem(w) for w in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str) -> float:
    predicted = answer_tokens(prediction)
    expected = answer_tokens(gold)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category 1: each comma-separated gold part scored against its best predicted part."""
    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(p, g) for p in predictions) for g in golds) / len(golds)


def bleu1(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not predicted or not expected:
        return 0.0
    clipped = sum((Counter(predicted) & Counter(expected)).values())
    brevity = 1.0 if len(predicted) > len(expected) else math.exp(1 - len(expected) / len(predicted))
    return brevity * clipped / len(predicted)


def score(prediction: str, gold: str, category: int) -> tuple[float, float]:
    """(F1, BLEU-1) of one answer, the LoCoMo way for its category."""
    gold = str(gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    f1 = multi_answer_f1(prediction, gold) if category == 1 else token_f1(prediction, gold)
    return f1, bleu1(prediction, gold)


def scored_questions(conversation: Conversation) -> list[dict[str, Any]]:
    """Questions of categories 1-4 that have a gold answer."""
    return [qa for qa in conversation.qa
            if qa.get("category") in CATEGORY_NAMES and isinstance(qa.get("question"), str)
            and qa.get("answer") not in (None, "")]


# --------------------------------------------------------------------------- the run


def _model():
    if not settings.LLM_ENABLED:
        raise CommandError(NO_ENDPOINT)
    model = configured.chat_model()
    if model is None or not hasattr(model, "usage"):
        raise CommandError(NO_ENDPOINT)
    return model


def answer_question(*, model, user, sona, conversation: Conversation, question: str,
                    policy: str | None) -> tuple[str, float]:
    """(answer, seconds): recall, assemble the prompt, one completion."""
    started = time.perf_counter()
    recall = recall_for_query(user=user, query=question, sona=sona, record_trace=False, update_heat=False,
                              policy=policy)
    system = QA_SYSTEM.format(a=conversation.speaker_a, b=conversation.speaker_b)
    prompt = assemble_prompt(query=question, items=recall.items, system=system,
                             budget_tokens=memory_params().prompt_token_budget)
    try:
        answer = model.complete(prompt.messages, max_tokens=ANSWER_MAX_TOKENS).text.strip()
    except ModelError as exc:
        answer = f"[no answer: {exc}]"
    return answer, time.perf_counter() - started


def run_conversation(env: common.BenchEnv, model, conversation: Conversation, options: dict,
                     show: bool) -> dict[str, Any]:
    user = env.make_user("qa")
    before = model.usage()
    report = conversation_import(user=user, conversation=conversation, progress=show)
    after_import = model.usage()
    sona = sona_get_or_create(user=user, name=conversation.speaker_b)
    questions = scored_questions(conversation)
    if options.get("max_questions"):
        questions = questions[: options["max_questions"]]
    answers = []
    for qa in common.progress_iter(questions, f"answer {conversation.sample_id}", show):
        prediction, seconds = answer_question(model=model, user=user, sona=sona, conversation=conversation,
                                              question=qa["question"], policy=options.get("policy"))
        f1, b1 = score(prediction, qa["answer"], qa["category"])
        answers.append({"question": qa["question"], "gold": str(qa["answer"]), "prediction": prediction,
                        "category": qa["category"], "f1": round(f1, 4), "bleu1": round(b1, 4),
                        "seconds": round(seconds, 3)})
    end = model.usage()
    return {"sample_id": conversation.sample_id, "pages": report.pages, "turns": report.turns,
            "import_seconds": round(report.seconds, 1),
            "maintenance_llm_calls": after_import.calls - before.calls,
            "maintenance_prompt_tokens": after_import.prompt_tokens - before.prompt_tokens,
            "answer_llm_calls": end.calls - after_import.calls,
            "answer_prompt_tokens": end.prompt_tokens - after_import.prompt_tokens,
            "answer_failures": end.failures - after_import.failures,
            "answers": answers}


def _conversations(options: dict) -> list[Conversation]:
    try:
        conversations = load_conversations(options["data"])
    except LocomoFormatError as exc:
        raise CommandError(f"Malformed conversation file: {exc}") from None
    wanted = options.get("samples")
    if wanted:
        bad = [i for i in wanted if not 0 <= i < len(conversations)]
        if bad:
            raise CommandError(f"--samples {bad} out of range: the file has {len(conversations)} samples.")
        conversations = [conversations[i] for i in wanted]
    return conversations


def run(options: dict, stdout) -> dict:
    model = _model()
    conversations = _conversations(options)
    show = not options.get("no_progress")
    runs = []
    with common.bench_env(isolate_db=not options.get("in_place")) as env:
        for conversation in conversations:
            runs.append(run_conversation(env, model, conversation, options, show))
    return {"benchmark": "qa", "date": common.today(), "machine": common.machine(),
            "data": str(options["data"]), "model": model.name,
            "policy": options.get("policy") or default_policy_name(),
            "summary": summarize(runs), "runs": runs}


def summarize(runs: list[dict]) -> dict[str, Any]:
    answers = [a for r in runs for a in r["answers"]]
    by_category: dict[str, list[dict]] = defaultdict(list)
    for a in answers:
        by_category[CATEGORY_NAMES[a["category"]]].append(a)
    groups = {name: by_category[name] for name in CATEGORY_NAMES.values() if by_category[name]}
    groups["all"] = answers

    def mean(items: list[dict], key: str) -> float:
        return round(sum(a[key] for a in items) / len(items), 4) if items else math.nan

    n = len(answers)
    pages = sum(r["pages"] for r in runs)

    def per_answer(key: str, digits: int) -> float:
        return round(sum(r[key] for r in runs) / n, digits) if n else math.nan

    return {
        "categories": {name: {"n": len(items), "f1": mean(items, "f1"), "bleu1": mean(items, "bleu1")}
                       for name, items in groups.items()},
        "answers": n,
        "llm_calls_per_answer": per_answer("answer_llm_calls", 3),
        "prompt_tokens_per_answer": per_answer("answer_prompt_tokens", 1),
        "answer_failures": sum(r["answer_failures"] for r in runs),
        "answer_latency_ms": common.summarize_ms([a["seconds"] * 1000 for a in answers]),
        "pages": pages,
        "maintenance_llm_calls": sum(r["maintenance_llm_calls"] for r in runs),
        "maintenance_llm_calls_per_page": (round(sum(r["maintenance_llm_calls"] for r in runs) / pages, 3)
                                           if pages else math.nan),
        "maintenance_prompt_tokens": sum(r["maintenance_prompt_tokens"] for r in runs),
        "import_seconds": round(sum(r["import_seconds"] for r in runs), 1),
    }


def render(result: dict) -> str:
    s = result["summary"]
    table = common.render_table(
        ["category", "questions", "F1", "BLEU-1"],
        [[name, c["n"], c["f1"], c["bleu1"]] for name, c in s["categories"].items()],
        title=f"LoCoMo QA: {result['data']} ({len(result['runs'])} conversations), model {result['model']}, "
              f"policy {result['policy']}")
    cost = common.render_table(
        ["LLM calls / answer", "prompt tokens / answer", "answer p50 ms", "answer p95 ms", "failed answers",
         "pages replayed", "maintenance LLM calls", "import s"],
        [[s["llm_calls_per_answer"], s["prompt_tokens_per_answer"], s["answer_latency_ms"]["p50"],
          s["answer_latency_ms"]["p95"], s["answer_failures"], s["pages"], s["maintenance_llm_calls"],
          s["import_seconds"]]], title="Cost")
    return f"{table}\n\n{cost}\n\n{result['date']}, {result['machine']}."
