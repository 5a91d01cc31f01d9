"""Dialogue pages: the message stored before any model is called, then the reply stored beside it.

Scheduling maintenance after a reply is the turn's business (memory/services/turns.py), so that
maintenance, which completes the pages of stopped turns, can use these without a cycle.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.engine import offline
from memory.engine.hybrid_scoring import HybridParams
from memory.engine.ports import VectorPoint
from memory.models import (
    MEMORY_ONLY_REPLIES,
    AttachedFile,
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    PageStatus,
    Sona,
    Tier,
    vector_to_bytes,
)
from memory.policies import registry as models
from memory.recall.base import default_policy_name
from memory.services import graph
from memory.services.common import embed_or_none, lock_user_state_counting_up, lock_user_state_writing
from memory.services.events import event_record
from memory.services.files import files_attach
from memory.services.turn_holders import turn_holder
from memory.services.turn_input import validate_message
from memory.services.utterances import (
    page_utterances,
    points_write,
    turn_points,
    turn_texts,
    utterance_before,
)

# "Caroline: ..." in imported transcripts: a speaker label is not a topic keyword.
SPEAKER_LABEL = re.compile(r"(?:(?<=^)|(?<=\s))[A-Z][\w'-]{0,30}:\s")


def page_start(*, user, query: str, sona: Sona | None = None, timestamp: datetime | None = None,
               source_ids: Sequence[str] = (), utterances: Sequence[dict] = (),
               files: Sequence[AttachedFile] = ()) -> DialoguePage:
    """Store the user's message as a pending page in STM, before any model is called, with the
    files it carries (checked by files_for_turn) attached in the same transaction."""
    query = validate_message(query)
    with transaction.atomic():
        seq = _seq_take(user.pk)
        page = DialoguePage.objects.create(
            user=user, sona=sona, seq=seq, query=query, status=PageStatus.PENDING, held_by=turn_holder(),
            timestamp=timestamp or timezone.now(), source_ids=list(source_ids), utterances=list(utterances),
        )
        event_record(user_id=user.pk, kind=LifecycleEvent.Kind.PAGE_ADDED, subject_id=page.id,
                     at=page.timestamp, seq=page.seq, sona=sona.name if sona else None)
        files_attach(user=user, page=page, files=files)
    return page


def _seq_take(user_id: int) -> int:
    """The user's next page seq, counted up under the user's lock (inside a transaction)."""
    return lock_user_state_counting_up(user_id, "next_seq") - 1


def page_text(query: str, response: str, reply_model: str = "", attachments: str = "") -> str:
    """What a page is indexed and summarised by: the words and the text of its attached files. An
    offline reply only restates recalled memory, so it would add noise, not information: such pages
    are indexed by the user's words alone."""
    said = query.strip() if reply_model in MEMORY_ONLY_REPLIES else f"{query}\n{response}".strip()
    return f"{said}\n{attachments}" if attachments else said


def page_row_text(page: DialoguePage) -> str:
    """page_text of a stored page."""
    return page_text(page.query, page.response, page.reply_model, page.attachment_text)


def page_reply_store(*, page: DialoguePage, response: str, reply_model: str,
                     embedding: Sequence[float] | None = None) -> DialoguePage:
    """Store the reply, the page's keywords and embedding, and mark maintenance due.

    Without an `embedding`, the page's text, its utterances and their contexts are embedded here,
    in one call, each distinct text once, and its utterances are indexed with the reply. The page
    keeps a vector of its own text: one derived from its speaker-named contexts made unrelated live
    pages look alike (MiniLM cosine 0.03 -> 0.24), which moved the meta chain's, Fscore's and the
    Exocortex's thresholds (BENCHMARKS.md, "Writes at the embedding floor"). With an `embedding`
    (the chat's reply thread, a whole-file import), maintenance indexes the utterances
    (utterances.index_turns)."""
    text = page_text(page.query, response, reply_model, page.attachment_text)
    said = _said_embedded(page, response, reply_model, text) if embedding is None else None
    if said is not None:
        embedding = said.vectors[text]
    keywords = sorted(offline.extract_keywords(SPEAKER_LABEL.sub(" ", text)))
    with transaction.atomic():
        # The user's lock, and maintenance marked due: committed with the reply, before any job is queued
        lock_user_state_writing(page.user_id, maintenance_due=True)
        # Maintenance may have moved the page while the reply streamed; keep where it is now.
        page.refresh_from_db(fields=["tier", "segment", "status"])
        new = page.status == PageStatus.PENDING  # its reply stored for the first time
        page.response = response
        page.status = PageStatus.COMPLETE
        page.reply_model = reply_model
        page.keywords = keywords
        page.embedding = vector_to_bytes(embedding) if embedding is not None else b""
        # The page's node first (from the reply): the page's row is saved once, its CID with it.
        node = graph.row_node_put(user_id=page.user_id, kind=MemoryNode.Kind.PAGE, row=page, row_saved=True)
        fields = ["response", "status", "reply_model", "keywords", "embedding", "cid"]
        points = [page_point(page, embedding)] if embedding is not None else []
        if said is not None and page.tier == Tier.STM and not page.repressed:
            page.utterances, page.turns_indexed = said.utterances, True
            fields += ["utterances", "turns_indexed"]
            points += turn_points([page], said.before, HybridParams(), said.vectors)
        page.save(update_fields=fields)
        # The memory models' page work (memory/policies/): Memoria's sona membership, on every page.
        models.page_stored(page=page, node=node, text=text, new=new, policy=lambda: _policy_in_use(page))
        if points:
            transaction.on_commit(lambda: points_write(points))
    return page


def _policy_in_use(page: DialoguePage) -> str:
    """The policy the page's sona recalls with (the configured one when the sona names none)."""
    sona = page.sona if page.sona_id else None
    return (sona.recall_policy if sona is not None else "") or default_policy_name()


@dataclass(frozen=True)
class _Said:
    utterances: list[dict]  # what the page's utterances will be (utterances.page_utterances)
    before: dict | None  # the utterance before them, their first one's context
    vectors: dict  # utterance and context texts -> vectors


def _said_embedded(page: DialoguePage, response: str, reply_model: str, text: str) -> _Said | None:
    """The page's utterances with the reply, and the page's `text`, its utterances and their
    contexts embedded in one call, each distinct text once; None when the embedder fails, or the
    page has nothing said (maintenance embeds its text and indexes it later)."""
    page.response, page.reply_model = response, reply_model
    said = page_utterances(page)
    if not said:
        return None
    before = utterance_before(page)
    shown = copy(page)
    shown.utterances = said
    texts = list(dict.fromkeys([text, *turn_texts([shown], before)]))
    vectors = embed_or_none(texts)
    if vectors is None:
        return None
    return _Said(utterances=said, before=before, vectors=dict(zip(texts, vectors, strict=True)))


def page_point(page: DialoguePage, embedding: Sequence[float]) -> VectorPoint:
    return VectorPoint(
        id=str(page.id), vector=list(embedding), text=page_row_text(page),
        payload={"user_id": str(page.user_id), "kind": "page", "tier": page.tier,
                 "segment_id": str(page.segment_id) if page.segment_id else "", "seq": page.seq,
                 "timestamp": page.timestamp.timestamp()},
    )
