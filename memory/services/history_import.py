"""Importing the chat histories people have (memory/formats/histories.py: ChatGPT's and Claude's
exports, JSON Lines transcripts) through the same write path as a LoCoMo replay
(memory/services/importing.py): a page per exchange with the time it was said, maintenance after
each, utterances indexed, facts extracted as for any page.

The whole file is read and checked before anything is stored (the first problem named by its
place), as a stream within MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES (64 MiB) and
MEMORYOS_HISTORY_IMPORT_MAX_MESSAGES (20,000), once the person's import claim is taken. The
exchanges of every conversation in it are stored in the order they were said, under a sona named
after the assistant (ChatGPT, Claude, Assistant), the person speaking under their profile name
(else their user name), as live turns index them. A second run adds nothing, and an interrupted one
adds what is missing: a page is known by its source message ids, its time and its words.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from django.conf import settings

from memory.formats.histories import (
    HistoryFormatError,
    Limits,
    export_conversation,
    histories_summary,
    read_export_stream,
)
from memory.formats.locomo import Conversation, conversation_pages
from memory.models import LifecycleEvent
from memory.services.common import MemoryInputError, text_problem
from memory.services.events import event_record
from memory.services.import_claims import import_claimed
from memory.services.importing import GiveWay, conversation_import, conversations_validate


@dataclass
class HistoryImportReport:
    format: str
    conversations: int
    messages: int
    pages: int
    added: int
    already: int
    seconds: float
    skipped: dict[str, int] = field(default_factory=dict)
    titles: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _person_name(user) -> str:
    profile = getattr(user, "long_term_profile", None)
    return (profile.name if profile is not None and profile.name else user.get_username()).strip()


@dataclass(frozen=True)
class HistoryRead:
    """An export read and checked: its format, the whole of it as one conversation, and its counts."""

    format: str
    conversation: Conversation
    summary: dict[str, Any]
    titles: list[str]
    pages: int  # the pages it makes (an exchange each, a long message's parts joined)


def _limits() -> Limits:
    return Limits(max_bytes=settings.MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES,
                  max_messages=settings.MEMORYOS_HISTORY_IMPORT_MAX_MESSAGES)


def history_read(*, user, data: bytes | BinaryIO, name: str) -> HistoryRead:
    """The export (its bytes, or a seekable binary stream) read and checked whole, as one
    conversation in the order things were said; MemoryInputError names the first problem or the
    limit passed, and nothing is stored."""
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    try:
        kind, histories = read_export_stream(stream, name=name, limits=_limits())
    except HistoryFormatError as exc:
        raise MemoryInputError(f"Nothing was imported: {exc}") from None
    titled = [f"conversation {index}, its title, {problem}" for index, history in enumerate(histories, start=1)
              if (problem := text_problem(history.title))]
    if titled:  # shown on the import's page and in its report, so held to the rule for any stored text
        raise MemoryInputError(f"Nothing was imported: {name}: {titled[0]}")
    whole = export_conversation(kind, histories, person=_person_name(user), name=name,
                                max_chars=settings.MEMORYOS["MAX_MESSAGE_CHARS"])
    conversations_validate([whole])
    max_chars = settings.MEMORYOS["MAX_MESSAGE_CHARS"]
    return HistoryRead(format=kind, conversation=whole, summary=histories_summary(histories),
                       titles=[h.title for h in histories if h.title],
                       pages=len(conversation_pages(whole, max_chars=max_chars)))


def history_store(*, user, read: HistoryRead, name: str, claim: str, progress: bool = False,
                  on_page: Callable[[int, int], None] | None = None,
                  give_way: GiveWay | None = None) -> HistoryImportReport:
    """Store an export already read (history_read) under the person's import claim (module doc);
    `give_way`: as conversation_import's (the import worker gives way to replies)."""
    started = time.perf_counter()
    whole = read.conversation
    report = (conversation_import(user=user, conversation=whole, progress=progress, on_page=on_page,
                                  claim=claim, give_way=give_way) if whole.sessions else None)
    summary = read.summary
    event_record(user_id=user.pk, kind=LifecycleEvent.Kind.HISTORY_IMPORTED, subject_id=read.format,
                 format=read.format, file=name[:200], conversations=summary["conversations"],
                 messages=summary["messages"], added=report.added if report else 0,
                 already=report.already if report else 0, skipped=summary["skipped"])
    return HistoryImportReport(
        format=read.format, conversations=summary["conversations"], messages=summary["messages"],
        pages=report.pages if report else 0, added=report.added if report else 0,
        already=report.already if report else 0, seconds=time.perf_counter() - started,
        skipped=summary["skipped"], titles=read.titles)


def history_import(*, user, data: bytes | BinaryIO, name: str, progress: bool = False, claim: str | None = None,
                   on_page: Callable[[int, int], None] | None = None) -> HistoryImportReport:
    """Store the export's exchanges as pages of `user` (module doc); what was read, added and skipped.
    `on_page(done, total)` is told after each page stored. One import at a time for a person:
    `claim`, the caller's claim (memory/services/import_claims.py), or one taken before the file is
    read (ImportRunning when another import holds it)."""
    started = time.perf_counter()
    with import_claimed(user=user, claim=claim) as token:
        read = history_read(user=user, data=data, name=name)
        report = history_store(user=user, read=read, name=name, claim=token, progress=progress, on_page=on_page)
    report.seconds = time.perf_counter() - started
    return report
