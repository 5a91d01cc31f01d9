"""REST routes over the review queue of facts that change: list and get supersessions (open by
default), accept one (optionally with the newer fact's corrected text), reject one (both facts stay
current; a decided one is undone). The same rules as the other editing routes: one's own memory, or
`?user=NAME` with the operator permissions (audited)."""

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Router, Schema
from ninja.pagination import paginate

from memory.selectors.supersessions import Review, reviews_of, supersession_review, supersession_rows
from memory.services.supersession import supersession_accept, supersession_reject
from memory.web.api import ERRORS
from memory.web.api_auth import ApiError, caller_of
from memory.web.pagination import Pages, Projected

router = Router(tags=["supersessions"])
ReviewStatus = Literal["open", "superseded", "accepted", "rejected", "any"]


class SourceTurnOut(Schema):
    page_id: str
    text: str
    timestamp: datetime | None


class FactSideOut(Schema):
    id: str
    text: str
    stated_at: datetime | None
    valid_until: datetime | None
    superseded_by: str | None
    sources: list[SourceTurnOut]


class SupersessionOut(Schema):
    id: str
    status: str
    slot: str
    confidence: float
    reason: str
    decided_by: str
    occurred_at: datetime | None
    created_at: datetime
    decided_at: datetime | None
    old: FactSideOut
    new: FactSideOut


class AcceptIn(Schema):
    reason: str = Field("", max_length=500)
    text: str | None = Field(None, max_length=4000, description="the newer fact's corrected text (an edit)")


class RejectIn(Schema):
    reason: str = Field("", max_length=500)


def review_out(review: Review) -> dict[str, Any]:
    def side(fact) -> dict[str, Any]:
        return {"id": fact.id, "text": fact.text, "stated_at": fact.stated_at, "valid_until": fact.valid_until,
                "superseded_by": fact.superseded_by,
                "sources": [{"page_id": s.page_id, "text": s.text, "timestamp": s.timestamp} for s in fact.sources]}

    return {"id": review.id, "status": review.status, "slot": review.slot, "confidence": review.confidence,
            "reason": review.reason, "decided_by": review.decided_by, "occurred_at": review.occurred_at,
            "created_at": review.created_at, "decided_at": review.decided_at, "old": side(review.old),
            "new": side(review.new)}


def _found(user, ident: str) -> dict[str, Any]:
    review = supersession_review(user=user, ident=ident)
    if review is None:
        raise ApiError(404, "not_found", f"No supersession {ident} in this memory.")
    return review_out(review)


@router.get("/supersessions", response={200: list[SupersessionOut], **ERRORS})
@paginate(Pages)
def list_supersessions(request, status: ReviewStatus = "open", user: str | None = None):
    """Facts that change: the open reviews by default, or those of a status, or `any`."""
    caller = caller_of(request, user)
    rows = supersession_rows(user=caller.user, status=None if status == "any" else status)
    return Projected(rows, convert_page=lambda page: [review_out(r) for r in reviews_of(user=caller.user, rows=page)])


@router.get("/supersessions/{ident}", response={200: SupersessionOut, **ERRORS})
def get_supersession(request, ident: str, user: str | None = None):
    caller = caller_of(request, user)
    return _found(caller.user, ident)


@router.post("/supersessions/{ident}/accept", response={200: SupersessionOut, **ERRORS})
def accept_supersession(request, ident: str, payload: AcceptIn, user: str | None = None):
    """The newer fact supersedes the older (with `text`, corrected first: an edit)."""
    caller = caller_of(request, user)
    supersession_accept(user=caller.user, ident=ident, actor=caller.actor, reason=payload.reason, text=payload.text)
    return _found(caller.user, ident)


@router.post("/supersessions/{ident}/reject", response={200: SupersessionOut, **ERRORS})
def reject_supersession(request, ident: str, payload: RejectIn, user: str | None = None):
    """Both facts stay current; a supersession already decided is undone."""
    caller = caller_of(request, user)
    supersession_reject(user=caller.user, ident=ident, actor=caller.actor, reason=payload.reason)
    return _found(caller.user, ident)
