"""`manage.py bench imported --data FILE --sample N [--policy P ...]`: one LoCoMo conversation
recalled as imported from LoCoMo's file and as imported from a ChatGPT export of the same words.

The export (locomo_chatgpt_export) holds a ChatGPT conversation per LoCoMo session, in the shape of
ChatGPT's conversations.json (a `mapping` tree of messages): speaker_a is the user, speaker_b the
assistant, each message's id its turn's dia_id and its create_time the session's date plus its place
in the session, in seconds (each message said at its own time, as in ChatGPT's exports). It is
stored through the upload's path (history_import) for a person whose profile name is speaker_a;
the file through conversation_import for another person, in the same run, each in a fresh database
and vector shard of its own (keyword statistics are the shard's).

The export cannot say what speaker_b was called: the importer names the assistant after the export
(ChatGPT), as it must. So the ChatGPT side is asked each question twice: as written, and with
speaker_b's name, where the question says it, written as the assistant's (RENAMED), the way the
person would ask about what their assistant said. Questions that name speaker_b and those that do
not are also counted apart.

Evidence recall is counted as `bench retrieval` counts it (evidence.recall_at_k over the turns
behind each policy's ranked context); an imported turn's id, `chatgpt:<conversation>:<dia_id>`
(`#n` for the part of a long message), counts as its dia_id. A turn of the file missing from the
imported pages, or an id that names no turn, stops the run: a gap would be hidden in the figures.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from memory.benchmarks.common import bench_env, machine, progress, render_table, today
from memory.benchmarks.evidence import CATEGORY_NAMES, Question, Unit, questions, recall_at_k
from memory.benchmarks.exports import ChatGPTConversation
from memory.formats.histories import ASSISTANT_NAMES
from memory.formats.locomo import Conversation

KS = (5, 10, 20)
SIDES = ("locomo", "chatgpt")
# The export cannot hold speaker_b's name: the importer calls the assistant by the export's
# (histories.ASSISTANT_NAMES). The ChatGPT side is also asked with that name in the questions.
RENAMED = "chatgpt, speaker_b asked as ChatGPT"


def add_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="a file in the public LoCoMo format")
    parser.add_argument("--sample", type=int, required=True, help="the conversation (index in the file)")
    parser.add_argument("--policy", action="append",
                        help="recall policy to measure (repeatable; default: the configured one)")
    parser.add_argument("--write-export", type=Path, metavar="FILE",
                        help="also write the ChatGPT export made of the conversation to FILE")


def locomo_chatgpt_export(conversation: Conversation) -> bytes:
    """The conversation as ChatGPT's conversations.json: a conversation per session (module doc)."""
    chats = []
    for number, date, turns in conversation.sessions:
        chat = ChatGPTConversation(f"{conversation.sample_id} session {number}",
                                   f"{conversation.sample_id}-s{number}", date)
        for position, turn in enumerate(turns):
            role = "user" if turn.speaker == conversation.speaker_a else "assistant"
            chat.add(role, turn.text, minutes=position / 60)
            message = chat.mapping.pop(chat.current)
            message["id"] = message["message"]["id"] = turn.dia_id
            chat.mapping[message["parent"]]["children"][-1] = turn.dia_id
            chat.mapping[turn.dia_id] = message
            chat.current = turn.dia_id
        chats.append(chat.export())
    return json.dumps(chats).encode()


def dia_id_of(source_id: str, valid: set[str]) -> str:
    """The LoCoMo turn an imported turn id names (module doc); CommandError for any other id."""
    kind, _, rest = source_id.partition(":")
    dia_id = rest.partition(":")[2].split("#")[0]
    if kind != "chatgpt" or dia_id not in valid:
        raise CommandError(f"imported turn id {source_id!r} names no turn of the conversation")
    return dia_id


def _stored_turns(user) -> list[str]:
    from memory.models import DialoguePage

    return [turn for ids in DialoguePage.objects.filter(user=user).values_list("source_ids", flat=True)
            for turn in ids]


def _imported(env, conversation: Conversation, side: str, export: bytes):
    """A person holding the conversation as imported from `side`: LoCoMo's file or the export."""
    from memory.services.history_import import history_import
    from memory.services.importing import conversation_import
    from memory.services.long_term import profile_update

    user = env.make_user(prefix=f"{side}-{conversation.sample_id}")
    if side == "locomo":
        conversation_import(user=user, conversation=conversation)
        return user
    profile_update(user=user, name=conversation.speaker_a)
    history_import(user=user, data=export, name="conversations.json")
    valid = {turn.dia_id for _, _, turns in conversation.sessions for turn in turns}
    found = {dia_id_of(source_id, valid) for source_id in _stored_turns(user)}
    if found != valid:
        missing = sorted(valid - found)
        raise CommandError(f"the ChatGPT import lost {len(missing)} turn(s) of {conversation.sample_id}: "
                           f"{', '.join(missing[:10])}")
    return user


def _units(user, question: str, policy: str, valid: set[str] | None) -> list[Unit]:
    """The policy's ranked context, as `bench retrieval` reads it; an imported turn as its dia_id."""
    from memory.benchmarks.retrieval import policy_units

    units = policy_units(user, question, policy)
    if valid is None:
        return units
    return [Unit(source_ids=tuple(dia_id_of(i, valid) for i in unit.source_ids), text=unit.text)
            for unit in units]


def in_export_names(question: str, conversation: Conversation) -> str:
    """The question with speaker_b's name, as a word, written as the assistant's name in the export."""
    return re.sub(rf"\b{re.escape(conversation.speaker_b)}\b", ASSISTANT_NAMES["chatgpt"], question)


def _askings(side: str, question: Question, conversation: Conversation) -> list[tuple[str, str]]:
    if side == "locomo":
        return [(side, question.text)]
    return [(side, question.text), (RENAMED, in_export_names(question.text, conversation))]


def _score(table: dict, question: Question, units: list[Unit], names_b: bool) -> None:
    table[("names speaker_b" if names_b else "others", "R@10")].append(recall_at_k(units, question.evidence, 10))
    for k in KS:
        table[("all", f"R@{k}")].append(recall_at_k(units, question.evidence, k))
    table[(question.category, "R@10")].append(recall_at_k(units, question.evidence, 10))
    table[("all", "all@10")].append(float(recall_at_k(units, question.evidence, 10) == 1.0))


def run(options: dict[str, Any], stdout) -> dict[str, Any]:
    from memory.benchmarks.retrieval import measured_policies
    from memory.formats.locomo import load_conversations
    from memory.recall.base import default_policy_name

    conversations = load_conversations(options["data"])
    if not 0 <= options["sample"] < len(conversations):
        raise CommandError(f"--sample {options['sample']}: the file holds {len(conversations)} conversation(s)")
    conversation = conversations[options["sample"]]
    policies = measured_policies({"policy": options.get("policy") or [default_policy_name()]})
    export = locomo_chatgpt_export(conversation)
    if options.get("write_export"):
        Path(options["write_export"]).write_bytes(export)
    valid = {turn.dia_id for _, _, turns in conversation.sessions for turn in turns}
    asked = questions(conversation)
    scores: dict[tuple[str, str], dict] = defaultdict(lambda: defaultdict(list))
    per_question: list[dict[str, Any]] = [{"question": q.text, "category": q.category} for q in asked]
    pages = {}
    for side in SIDES:  # each in a database and vector shard of its own: keyword statistics are the shard's
        with bench_env() as env:
            user = _imported(env, conversation, side, export)
            pages[side] = _page_count(user)
            bar = progress(len(asked), f"{side} {conversation.sample_id}", enabled=not options.get("no_progress"))
            for question, row in zip(asked, per_question, strict=True):
                names_b = in_export_names(question.text, conversation) != question.text
                for policy, (asking, text) in itertools.product(policies, _askings(side, question, conversation)):
                    units = _units(user, text, policy, valid if side == "chatgpt" else None)
                    _score(scores[(policy, asking)], question, units, names_b)
                    row[f"{policy} {asking}"] = recall_at_k(units, question.evidence, 10)
                bar.update(1)
            bar.close()
    recall = {f"{policy} {side}": {f"{cat}/{metric}": round(sum(v) / len(v), 4)
                                   for (cat, metric), v in scores[(policy, side)].items()}
              for policy in policies for side in (*SIDES, RENAMED)}
    return {"benchmark": "imported", "date": today(), "machine": machine(), "data": str(options["data"]),
            "sample": conversation.sample_id, "questions": len(asked), "policies": list(policies),
            "pages": pages, "recall": recall, "per_question": per_question}


def _page_count(user) -> int:
    from memory.models import DialoguePage

    return DialoguePage.objects.filter(user=user).count()


def render(result: dict[str, Any]) -> str:
    groups = ("names speaker_b", "others")
    headers = ["policy, imported from", *[f"R@{k}" for k in KS], "all@10",
               *[f"R@10 {name}" for name in CATEGORY_NAMES.values()], *[f"R@10 {group}" for group in groups]]
    rows = [[name, *[figures.get(f"all/R@{k}") for k in KS], figures.get("all/all@10"),
             *[figures.get(f"{category}/R@10") for category in CATEGORY_NAMES],
             *[figures.get(f"{group}/R@10") for group in groups]]
            for name, figures in result["recall"].items()]
    title = (f"{result['sample']}: evidence recall as imported from LoCoMo's file and from a ChatGPT export "
             f"({result['questions']} questions; pages {result['pages']['locomo']} and {result['pages']['chatgpt']})")
    return render_table(headers, rows, title=title)
