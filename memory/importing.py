"""Replaying a recorded conversation through the same write path as live turns."""

from __future__ import annotations

import time
from dataclasses import dataclass

from tqdm import tqdm

from memory import components
from memory.locomo import Conversation, conversation_pages
from memory.maintenance import maintenance_run
from memory.services import page_complete, page_start, page_text, sona_get_or_create
from memory.turns import index_turns

EMBED_BATCH = 64
IMPORT_MODEL_NAME = "imported"


@dataclass
class ImportReport:
    sample_id: str
    turns: int
    pages: int
    seconds: float


def conversation_import(*, user, conversation: Conversation, progress: bool = False) -> ImportReport:
    """Each pair of speaker runs becomes a page with its original time and source turn ids;
    maintenance runs after every page, as it would after every live turn."""
    started = time.perf_counter()
    sona = sona_get_or_create(user=user, name=conversation.speaker_b,
                              profile=f"{conversation.speaker_b}, talking with {conversation.speaker_a}.")
    pages = conversation_pages(conversation)
    bar = tqdm(total=len(pages), desc=f"import {conversation.sample_id}", unit="page", disable=not progress)
    for start in range(0, len(pages), EMBED_BATCH):
        batch = pages[start:start + EMBED_BATCH]
        vectors = components.embedder().embed([page_text(p.query, p.response) for p in batch])
        for item, vector in zip(batch, vectors, strict=True):
            page = page_start(user=user, query=item.query, sona=sona, timestamp=item.timestamp,
                              source_ids=item.source_ids,
                              utterances=[{"id": i, "speaker": who, "text": text} for i, who, text in item.utterances])
            page_complete(page=page, response=item.response, reply_model=IMPORT_MODEL_NAME, embedding=vector,
                          schedule=False)
            maintenance_run(user_id=user.pk, now=item.timestamp, index_turns_now=False)
            bar.update(1)
        index_turns(user_id=user.pk)
    bar.close()
    return ImportReport(sample_id=conversation.sample_id, turns=conversation.turn_count, pages=len(pages),
                        seconds=time.perf_counter() - started)
