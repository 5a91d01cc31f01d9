"""Importing the chat histories people have (memory/formats/histories.py: ChatGPT's and Claude's
exports, JSON Lines transcripts) through the same write path as a LoCoMo replay
(memory/services/importing.py): a page per exchange with the time it was said, maintenance after
each, utterances indexed, facts extracted as for any page.

The whole file is read and checked before anything is stored (the first problem named by its
place); the exchanges of every conversation in it are stored in the order they were said, under a
sona named after the assistant (ChatGPT, Claude, Assistant), the person speaking under their
profile name (else their user name), as live turns index them. A second run adds nothing, and an
interrupted one adds what is missing: a page is known by its source message ids and its time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from memory.formats.histories import History, HistoryFormatError, export_conversation, histories_summary, read_export
from memory.formats.locomo import Conversation
from memory.models import LifecycleEvent
from memory.services.common import MemoryInputError
from memory.services.events import event_record
from memory.services.import_claims import import_claimed
from memory.services.importing import conversation_import, conversations_validate


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


def history_read(*, user, data: bytes, name: str) -> tuple[str, list[History], Conversation]:
    """The export read and checked whole, as one conversation in the order things were said;
    MemoryInputError names the first problem, and nothing is stored."""
    try:
        kind, histories = read_export(data, name=name)
    except HistoryFormatError as exc:
        raise MemoryInputError(f"Nothing was imported: {exc}") from None
    whole = export_conversation(kind, histories, person=_person_name(user), name=name,
                                max_chars=settings.MEMORYOS["MAX_MESSAGE_CHARS"])
    conversations_validate([whole])
    return kind, histories, whole


def history_import(*, user, data: bytes, name: str, progress: bool = False, claim: str | None = None,
                   on_page: Callable[[int, int], None] | None = None) -> HistoryImportReport:
    """Store the export's exchanges as pages of `user` (module doc); what was read, added and skipped.
    `on_page(done, total)` is told after each page stored. One import at a time for a person:
    `claim`, the caller's claim (memory/services/import_claims.py), or one taken before the file is
    read (ImportRunning when another import holds it)."""
    started = time.perf_counter()
    with import_claimed(user=user, claim=claim) as token:
        kind, histories, whole = history_read(user=user, data=data, name=name)
        report = (conversation_import(user=user, conversation=whole, progress=progress, on_page=on_page,
                                      claim=token) if whole.sessions else None)
    summary = histories_summary(histories)
    event_record(user_id=user.pk, kind=LifecycleEvent.Kind.HISTORY_IMPORTED, subject_id=kind, format=kind,
                 file=name[:200], conversations=summary["conversations"], messages=summary["messages"],
                 added=report.added if report else 0, already=report.already if report else 0,
                 skipped=summary["skipped"])
    return HistoryImportReport(
        format=kind, conversations=summary["conversations"], messages=summary["messages"],
        pages=report.pages if report else 0, added=report.added if report else 0,
        already=report.already if report else 0, seconds=time.perf_counter() - started,
        skipped=summary["skipped"], titles=[h.title for h in histories if h.title])
