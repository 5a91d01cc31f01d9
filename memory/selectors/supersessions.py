"""Reads for the review queue of facts that change: each supersession (open or decided) with both
facts, the turns they were stated in, their dates and the detector's reason. No writes; access is
checked at the edge (can_inspect / can_edit)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from memory.models import DialoguePage
from persona.models import KnowledgeFact, Supersession

STATUSES = tuple(Supersession.Status.values)


@dataclass(frozen=True)
class SourceTurn:
    page_id: str
    text: str
    timestamp: datetime | None


@dataclass(frozen=True)
class FactSide:
    id: str
    text: str
    stated_at: datetime | None
    valid_until: datetime | None
    superseded_by: str | None
    sources: tuple[SourceTurn, ...]


@dataclass(frozen=True)
class Review:
    id: str
    status: str
    status_label: str
    slot: str
    confidence: float
    reason: str
    decided_by: str
    occurred_at: datetime | None
    created_at: datetime
    decided_at: datetime | None
    old: FactSide
    new: FactSide

    @property
    def is_open(self) -> bool:
        return self.status == Supersession.Status.OPEN


def _side(fact: KnowledgeFact, pages: dict[str, DialoguePage]) -> FactSide:
    sources = tuple(SourceTurn(page_id=str(pid), text=pages[str(pid)].query, timestamp=pages[str(pid)].timestamp)
                    for pid in fact.source_page_ids or () if str(pid) in pages)
    return FactSide(id=str(fact.pk), text=fact.text, stated_at=fact.timestamp, valid_until=fact.valid_until,
                    superseded_by=str(fact.superseded_by) if fact.superseded_by else None, sources=sources)


def _reviews(user, rows: list[Supersession]) -> list[Review]:
    page_ids = {str(pid) for row in rows for fact in (row.old_fact, row.new_fact) for pid in fact.source_page_ids or ()}
    pages = {str(p.pk): p for p in DialoguePage.objects.filter(user=user, pk__in=page_ids).only("id", "query",
                                                                                               "timestamp")}
    labels = dict(Supersession.Status.choices)
    return [Review(id=str(row.pk), status=row.status, status_label=labels[row.status], slot=row.slot,
                   confidence=row.confidence, reason=row.reason, decided_by=row.decided_by,
                   occurred_at=row.occurred_at, created_at=row.created_at, decided_at=row.decided_at,
                   old=_side(row.old_fact, pages), new=_side(row.new_fact, pages)) for row in rows]


def supersession_rows(*, user, status: str | None = Supersession.Status.OPEN):
    """The user's supersessions as a queryset, newest first: open ones by default, any with None."""
    rows = Supersession.objects.filter(user=user).select_related("old_fact", "new_fact").order_by("-created_at", "id")
    return rows.filter(status=status) if status else rows


def reviews_of(*, user, rows) -> list[Review]:
    """Rows of supersession_rows as reviews, their source turns read in one query."""
    return _reviews(user, list(rows))


def supersession_reviews(*, user, status: str | None = Supersession.Status.OPEN, limit: int = 200,
                         offset: int = 0) -> list[Review]:
    """The user's supersessions, newest first: open ones by default, any status with None."""
    return _reviews(user, list(supersession_rows(user=user, status=status)[offset:offset + limit]))


def supersession_review(*, user, ident: str) -> Review | None:
    """One of the user's supersessions (None for another user's or an unknown id)."""
    try:
        key = uuid.UUID(str(ident))
    except ValueError:
        return None
    rows = list(Supersession.objects.filter(user=user, pk=key).select_related("old_fact", "new_fact"))
    return _reviews(user, rows)[0] if rows else None


def supersession_counts(*, user) -> dict[str, int]:
    """How many supersessions of each status the user has (every status, zero included)."""
    counts = dict.fromkeys(STATUSES, 0)
    for status in Supersession.objects.filter(user=user).values_list("status", flat=True):
        counts[status] += 1
    return counts
