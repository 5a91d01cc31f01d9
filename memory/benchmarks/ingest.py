"""`bench ingest`: importing a LoCoMo-format conversation through the product, whole-file batches
against turn by turn.

Both variants are memory.services.importing.conversation_import with the offline engine and
maintenance after every page:
- before (the baseline): turn by turn with the graph re-addressed after every write, as before
  graph.readdress_once (turned off for it);
- turn by turn: batches off, the graph re-addressed once per maintenance run;
- batched: the path `import_conversation` takes for a whole file (one transaction per batch of
  pages, the graph re-addressed once in it).
Each variant imports the conversation --repeat times, each time for a fresh user in the same
fresh database and vector shard, the variants taking turns. The end states are compared (pages
by tier, segments, facts, traits, the graph's CIDs and edges, events): a difference is an error,
and an error stops the benchmark with no rate.

Each import's embeddings are metered (common.embeddings_metered): the texts embedded a turn, their
milliseconds a turn, and the turns a second the embeddings alone would allow, a ceiling that no
saving elsewhere in the write path can lift.
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from memory.benchmarks import common
from memory.formats.locomo import Conversation, load_conversations
from memory.models import DialoguePage, LifecycleEvent, MemoryEdge, MemoryNode, Segment
from persona.models import AgentTrait, KnowledgeFact, UserTrait

BASELINE, TURN_BY_TURN, BATCHED = "before: re-addressed per write", "turn by turn", "batched"


def add_arguments(parser) -> None:
    parser.add_argument("file", type=Path, nargs="?",
                        help="a LoCoMo-format JSON file, or a chat export (ChatGPT's or Claude's conversations.json, "
                             "ChatGPT's zip, a .jsonl transcript)")
    parser.add_argument("--chatgpt-messages", type=int, default=0,
                        help="instead of a file: a ChatGPT export of about N messages made here "
                             "(memory/benchmarks/exports.py)")
    parser.add_argument("--sample", type=int, default=0, help="index of the conversation in the file")
    parser.add_argument("--turns", type=int, default=0, help="import only the first N turns (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="imports per variant (default 1)")
    parser.add_argument("--batched-only", action="store_true",
                        help="only the path a whole-file import takes (no baseline, no end states compared)")


def truncated(conversation: Conversation, turns: int) -> Conversation:
    if turns <= 0:
        return conversation
    sessions, total = [], 0
    for number, when, session_turns in conversation.sessions:
        if total >= turns:
            break
        kept = session_turns[:turns - total]
        sessions.append((number, when, kept))
        total += len(kept)
    return dataclasses.replace(conversation, sessions=tuple(sessions))


def _conversation(options: dict) -> Conversation:
    """The conversation to import: a LoCoMo sample, a chat export read as the importer reads it
    (memory/services/history_import.py), or a ChatGPT export made here."""
    from django.conf import settings

    from memory.benchmarks.exports import large_chatgpt_export
    from memory.formats.histories import HistoryFormatError, Limits, export_conversation, read_export, read_export_file
    from memory.formats.locomo import LocomoFormatError

    limit = settings.MEMORYOS["MAX_MESSAGE_CHARS"]
    unbounded = Limits(max_bytes=1 << 40, max_messages=1 << 40)  # a benchmark's own file: no upload caps
    if options["chatgpt_messages"]:
        kind, histories = read_export(large_chatgpt_export(options["chatgpt_messages"]), limits=unbounded)
        return export_conversation(kind, histories, person="bench", max_chars=limit, name="chatgpt-export")
    if options["file"] is None:
        raise CommandError("name a file or --chatgpt-messages N")
    try:
        return load_conversations(options["file"])[options["sample"]]
    except LocomoFormatError:
        try:
            kind, histories = read_export_file(Path(options["file"]), limits=unbounded)
        except (HistoryFormatError, OSError) as exc:
            raise CommandError(f"{options['file']}: neither LoCoMo nor a chat export: {exc}") from None
        return export_conversation(kind, histories, person="bench", max_chars=limit, name=Path(options["file"]).name)


def end_state(user) -> dict[str, Any]:
    """What the import left, in terms that do not depend on row ids or the wall clock."""
    return {
        "pages": sorted(DialoguePage.objects.filter(user=user).values_list("seq", "cid", "tier", "segment__cid")),
        "segments": sorted(Segment.objects.filter(user=user).values_list(
            "cid", "status", "page_count", "n_visit", "l_interaction", "last_access", "promoted_count")),
        "facts": sorted(KnowledgeFact.objects.filter(user=user).values_list("cid", "text")),
        "agent_traits": sorted(AgentTrait.objects.filter(user=user).values_list("cid", "text")),
        "traits": sorted(UserTrait.objects.filter(user=user).values_list("key", "score")),
        "nodes": sorted(MemoryNode.objects.filter(user=user).values_list("kind", "cid")),
        "edges": sorted(MemoryEdge.objects.filter(user=user).values_list(
            "source__cid", "relation", "weight", "target__cid")),
        "events": sorted(LifecycleEvent.objects.filter(user=user).values_list("kind", "occurred_at")),
    }


def run(options: dict, stdout) -> dict:
    from memory.adapters import configured
    from memory.services.importing import conversation_import

    show = not options.get("no_progress")
    conversation = truncated(_conversation(options), options["turns"])
    configured.embedder().embed(["warm up"])
    variants_on = {BASELINE: common.readdress_per_write,
                   TURN_BY_TURN: nullcontext, BATCHED: nullcontext}
    if options["batched_only"]:
        variants_on = {BATCHED: nullcontext}
    timings: dict[str, list[float]] = {name: [] for name in variants_on}
    meters = {name: common.EmbeddingMeter() for name in variants_on}
    states: dict[str, dict] = {}
    with common.bench_env() as env:
        for round_ in range(options["repeat"]):
            names = list(variants_on)
            for name in names if round_ % 2 == 0 else reversed(names):
                user = env.make_user("ingest")
                started = time.perf_counter()
                try:
                    with variants_on[name](), common.embeddings_metered(meters[name]):
                        conversation_import(user=user, conversation=conversation, batched=name == BATCHED,
                                            progress=show)
                except Exception as exc:
                    raise CommandError(f"the import failed ({name}): {type(exc).__name__}: {exc}; "
                                       "no rate is reported") from exc
                timings[name].append(time.perf_counter() - started)
                if name not in states:  # one snapshot a variant (setdefault read it on every repeat)
                    states[name] = end_state(user)
    compared = (TURN_BY_TURN, BATCHED) if BASELINE in states else ()
    differing = sorted({f"{name}: {part}" for name in compared for part in states[BASELINE]
                        if states[name][part] != states[BASELINE][part]})
    if differing:
        raise CommandError(f"the end states differ from the baseline's: {', '.join(differing)}; no rate is reported")
    turns = conversation.turn_count
    variants = {name: {"seconds": [round(s, 2) for s in values],
                       "turns_per_s": round(turns * len(values) / sum(values), 2),
                       "ms_per_turn": round(1000 * sum(values) / (turns * len(values)), 1),
                       "embeddings_per_turn": meters[name].per(turns * len(values))}
                for name, values in timings.items()}
    return {"benchmark": "ingest", "date": common.today(), "machine": common.machine(),
            "file": str(options["file"]), "sample": conversation.sample_id, "turns": turns,
            "pages": len(states[BATCHED]["pages"]), "repeat": options["repeat"], "variants": variants,
            "speedup": round(variants[BATCHED]["turns_per_s"] / variants[BASELINE]["turns_per_s"], 2)
            if BASELINE in variants else None,
            "same_end_state": True if compared else None}


def _over_embedding(variant: dict) -> float:
    """The whole write's time over its embeddings' (1.0: nothing but embedding)."""
    embedding = variant["embeddings_per_turn"]["ms"]
    return round(variant["ms_per_turn"] / embedding, 2) if embedding else float("nan")


def render(result: dict) -> str:
    rows = [[name, result["turns"], v["turns_per_s"], v["ms_per_turn"],
             round(v["turns_per_s"] / result["variants"][BASELINE]["turns_per_s"], 2)
             if BASELINE in result["variants"] else "n/a",
             v["embeddings_per_turn"]["texts"], v["embeddings_per_turn"]["ms"],
             v["embeddings_per_turn"]["ceiling_per_s"], _over_embedding(v)]
            for name, v in result["variants"].items()]
    table = common.render_table(["import", "turns", "turns/s", "ms/turn", "vs before", "texts embedded/turn",
                                 "embedding ms/turn", "turns/s by the embeddings alone",
                                 "write / embedding"], rows,
                                title=f"Importing {result['sample']} ({result['pages']} pages), offline engine")
    states = ("all end states equal (pages, segments, facts, traits, CIDs, edges, events)"
              if result["same_end_state"] else "the batched path alone (--batched-only): no end states compared")
    return "\n\n".join([table, f"{result['date']}, {result['machine']}; {result['repeat']} import(s) per variant, "
                               f"taking turns; {states}."])
