"""Replaying a recorded conversation through the same write path as live turns.

An import can be run again: pages already stored (the same source turn ids at the same session
time) are skipped, a page whose reply was not stored yet (an import stopped mid-page) is
completed, and only what is missing is added. A file is checked whole before anything is stored.

A whole file is imported in batches (without a chat model): maintenance still runs after every
page, at the page's time, so every decision (segment, heat, promotion, eviction) is the one a
turn-by-turn import makes, but each batch of pages is one transaction in which the memory graph
is re-addressed once (graph.readdress_once) and the vector writes wait for its commit. The end
state is turn-by-turn import's; only the graph's aliases differ (the CIDs nodes had between two
pages of a batch were never made). A stop mid-file loses the batch; a re-run adds it.

Either way the texts of the file's utterances and contexts are embedded up front, each distinct text
once, in one call sorted by length (EMBED_PAGES pages at a time): little padding in MiniLM's
batches, and no embedding call per page.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from django.conf import settings
from tqdm import tqdm

from memory.adapters import configured
from memory.engine.facts import facts_of_all, said_by_person, statement_in
from memory.engine.reading import parse_parts
from memory.formats.locomo import Conversation, LocomoPage, conversation_pages, conversation_problems
from memory.models import DialoguePage, PageStatus
from memory.services import graph
from memory.services.common import MemoryInputError, text_problem
from memory.services.import_claims import import_claimed, import_renew
from memory.services.maintenance import maintenance_run
from memory.services.pages import page_reply_store, page_start, page_text
from memory.services.users import SONA_NAME_MAX_CHARS, sona_get_or_create
from memory.services.utterances import context_text, index_turns, utterance_text

PAGE_BATCH = 64  # pages a transaction (batched) and an indexing pass hold
EMBED_PAGES = 16 * PAGE_BATCH  # pages whose texts are embedded together, up front (a LoCoMo file: all)
IMPORT_MODEL_NAME = "imported"


@dataclass(frozen=True)
class GiveWay:
    """How an import gives way to replies: `wanted()`, whether one is under way; `wait()`, until none is."""

    wanted: Callable[[], bool]
    wait: Callable[[], None]


@dataclass
class ImportReport:
    sample_id: str
    turns: int
    pages: int
    seconds: float
    added: int = 0  # pages stored by this run (completed ones included)
    already: int = 0  # pages a previous run had stored whole


def conversations_validate(conversations: Sequence[Conversation]) -> None:
    """Raise MemoryInputError naming every place that would stop an import; store nothing."""
    limit = settings.MEMORYOS["MAX_MESSAGE_CHARS"]
    problems = [problem for index, conversation in enumerate(conversations)
                for problem in conversation_problems(conversation, index=index, max_chars=limit)]
    # speaker_b becomes the sona the conversation is held with: a name the chat would take.
    problems += [f"sample {index} ({conversation.sample_id}), field 'speaker_b': a sona's name is at most "
                 f"{SONA_NAME_MAX_CHARS} characters; this one has {len(conversation.speaker_b.strip())}"
                 for index, conversation in enumerate(conversations)
                 if not 0 < len(conversation.speaker_b.strip()) <= SONA_NAME_MAX_CHARS]
    problems += _text_problems(conversations)
    if problems:
        shown = "\n".join(f"  {problem}" for problem in problems[:20])
        more = f"\n  … and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise MemoryInputError(f"Nothing was imported: {len(problems)} problem(s) in the file:\n{shown}{more}")


def _text_problems(conversations: Sequence[Conversation]) -> list[str]:
    """Text no memory can hold (NUL, lone surrogates), in the words every way in uses."""
    found = []
    for index, conversation in enumerate(conversations):
        named = [("speaker_a", conversation.speaker_a), ("speaker_b", conversation.speaker_b)]
        found += [f"sample {index} ({conversation.sample_id}), field {field!r} {problem}"
                  for field, value in named if (problem := text_problem(value))]
        for number, _, turns in conversation.sessions:
            for position, turn in enumerate(turns):
                found += [f"sample {index} ({conversation.sample_id}), session {number}, turn {position}, "
                          f"field {field!r} {problem}"
                          for field, value in (("dia_id", turn.dia_id), ("speaker", turn.speaker), ("text", turn.text))
                          if (problem := text_problem(value))]
    return found


def _page_key(source_ids: Sequence[str], timestamp: datetime, query: str) -> tuple[tuple[str, ...], float, str]:
    return tuple(source_ids), timestamp.timestamp(), query


def _stored_pages(user) -> dict[tuple[tuple[str, ...], float, str], list[DialoguePage]]:
    """The user's pages that came from a file, by their source turn ids, session time and words."""
    pages = DialoguePage.objects.filter(user=user).exclude(source_ids=[]).only(
        "id", "user_id", "source_ids", "timestamp", "status", "query", "response", "seq", "tier", "segment_id")
    stored: dict[tuple[tuple[str, ...], float, str], list[DialoguePage]] = {}
    for page in pages:
        stored.setdefault(_page_key(page.source_ids, page.timestamp, page.query), []).append(page)
    return stored


def _stored_as(item: LocomoPage, stored: dict) -> DialoguePage | None:
    """The page `item` was stored as: its ids, time and words, and its answer once complete (a
    pending page, left by an interrupted run, is completed). None: new, even where another text
    came under the same ids before."""
    pages = stored.get(_page_key(item.source_ids, item.timestamp, item.query), [])
    return (next((page for page in pages if page.status != PageStatus.PENDING and page.response == item.response), None)
            or next((page for page in pages if page.status == PageStatus.PENDING), None))


def _embed_up_front(items: Sequence[LocomoPage]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """The pages' texts, their utterances and the utterances' contexts embedded in one call, each
    distinct text once (a LoCoMo page's text is its one context word for word): sorted by length
    over the whole file, MiniLM's batches carry little padding. By text: (the pages' vectors, the
    utterances' and contexts' as turn_points embeds them)."""
    pages = list(dict.fromkeys(page_text(item.query, item.response) for item in items))
    spoken = [utterance_text({"speaker": who, "text": text}) for item in items for _, who, text in item.utterances]
    said = list(dict.fromkeys(spoken + [context_text(a, b) for a, b in pairwise(spoken)]))
    texts = list(dict.fromkeys(pages + said))
    vectors = dict(zip(texts, configured.embedder().embed(texts), strict=True)) if texts else {}
    return {text: vectors[text] for text in pages}, {text: vectors[text] for text in said}


def _read_up_front(items: Sequence[LocomoPage]) -> None:
    """The person's words of each page read by the language pipeline in one batch, so that the
    facts read after each page (memory/services/facts.py) find their parses ready: one batch costs
    less than a parse a page."""
    said = [said_by_person(item.query, [{"speaker": who, "text": text} for _, who, text in item.utterances])
            for item in items]
    parse_parts(said)  # first: what a statement is (statement_in: a request?) is read on the parse too
    found = facts_of_all(statement_in(text) for text in said)
    parse_parts(fact.text for facts in found for fact in facts)  # read again as they are stored (same_meaning)


def _store(user, sona, item: LocomoPage, vector, existing: DialoguePage | None) -> None:
    page = existing or page_start(
        user=user, query=item.query, sona=sona, timestamp=item.timestamp, source_ids=item.source_ids,
        utterances=[{"id": i, "speaker": who, "text": text} for i, who, text in item.utterances])
    page_reply_store(page=page, response=item.response, reply_model=IMPORT_MODEL_NAME, embedding=vector)
    maintenance_run(user_id=user.pk, now=item.timestamp, index_turns_now=False, recollect=False)


def conversation_import(*, user, conversation: Conversation, progress: bool = False,
                        batched: bool | None = None, claim: str | None = None,
                        on_page: Callable[[int, int], None] | None = None,
                        give_way: GiveWay | None = None) -> ImportReport:
    """Each pair of speaker runs becomes a page with its original time and source turn ids;
    maintenance runs after every page, as it would after every live turn. Pages stored by an
    earlier run are left as they are.

    batched (default: when no chat model is configured, whose calls must not hold a transaction
    open): a transaction per batch of pages, the graph re-addressed once in it (module doc).
    `on_page(done, total)` is told after each page stored (a page in the browser shows it).
    `give_way`: a reply under way ends the batch at the page being stored, and the import waits for
    it outside any transaction (the import worker, memory/runtime/imports.py).

    One import runs at a time for a person (memory/services/import_claims.py): `claim` is the token
    of a claim the caller holds already; without one the import claims it, or is refused
    (ImportRunning) before it stores anything."""
    conversations_validate([conversation])
    with import_claimed(user=user, claim=claim) as token:
        return _conversation_store(user, conversation, progress=progress, batched=batched, claim=token,
                                   on_page=on_page, give_way=give_way)


def _conversation_store(user, conversation: Conversation, *, progress: bool, batched: bool | None, claim: str,
                        on_page: Callable[[int, int], None] | None,
                        give_way: GiveWay | None = None) -> ImportReport:
    if batched is None:
        batched = configured.chat_model() is None
    started = time.perf_counter()
    sona = sona_get_or_create(user=user, name=conversation.speaker_b,
                              profile=f"{conversation.speaker_b}, talking with {conversation.speaker_a}.")
    pages = conversation_pages(conversation, max_chars=settings.MEMORYOS["MAX_MESSAGE_CHARS"])
    stored = _stored_pages(user)
    todo = [(item, _stored_as(item, stored)) for item in pages]
    todo = [(item, page) for item, page in todo if page is None or page.status == PageStatus.PENDING]
    bar = tqdm(total=len(todo), desc=f"import {conversation.sample_id}", unit="page", disable=not progress)
    done, ready_until, start = 0, 0, 0
    if on_page is not None:
        on_page(0, len(todo))
    while start < len(todo):
        if start >= ready_until:  # the first batch alone, so that progress moves soon; then EMBED_PAGES at once
            # (a batch at a time when giving way: the up-front work is where an import holds the CPU)
            ready_until = start + (PAGE_BATCH if start == 0 or give_way is not None else EMBED_PAGES)
            if give_way is not None:
                give_way.wait()
            chunk = [item for item, _ in todo[start:ready_until]]
            page_vectors, said_vectors = _embed_up_front(chunk)
            _read_up_front(chunk)
        if give_way is not None:
            give_way.wait()  # outside any transaction: replies under way go first
        with graph.readdress_once() if batched else nullcontext():
            for item, existing in todo[start:min(start + PAGE_BATCH, ready_until)]:
                import_renew(user=user, claim=claim)  # each page: an erase takes the claim back, and this stops
                _store(user, sona, item, page_vectors[page_text(item.query, item.response)], existing)
                done, start = done + 1, start + 1
                bar.update(1)
                if on_page is not None:  # counted here: a disabled bar counts nothing
                    on_page(done, len(todo))
                if give_way is not None and give_way.wanted():
                    break  # a reply began: the batch's transaction ends here, and the import waits
        index_turns(user_id=user.pk, vectors=said_vectors)
    bar.close()
    if not todo:  # a re-run after a stop between the last page and its indexing
        index_turns(user_id=user.pk)
    return ImportReport(sample_id=conversation.sample_id, turns=conversation.turn_count, pages=len(pages),
                        seconds=time.perf_counter() - started, added=len(todo), already=len(pages) - len(todo))
