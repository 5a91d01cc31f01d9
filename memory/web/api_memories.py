"""REST routes over a user's memories: list, search, get (by id or content id), correct, pin,
repress, delete (with a dry run that returns the blast radius); recall with any policy; the event
log and the stored traces. Handlers parse, call one selector or service, return. Every list is
paginated (`limit`, `offset`); `?user=NAME` acts for another user (staff, audited)."""

from typing import Any, Literal

from django.utils import timezone
from ninja import Query, Router
from ninja.pagination import paginate

from memory.engine.traits import TRAITS_BY_KEY
from memory.recall.base import UnknownPolicyError
from memory.selectors import memories as memory_reads
from memory.selectors.log import events
from memory.selectors.traces import trace_get, traces
from memory.services.deletion import memory_delete
from memory.services.editing import memory_correct, memory_pin, memory_repress
from memory.services.recall import recall_for_query
from memory.web.api import ERRORS
from memory.web.api_auth import ApiError, caller_of
from memory.web.api_sonas import sona_or_404
from memory.web.pagination import Pages, Projected
from memory.web.schemas import (
    BlastRadiusOut,
    CorrectIn,
    EventOut,
    FlagIn,
    MemoryOut,
    RecallIn,
    RecallOut,
    TraceOut,
)

router = Router(tags=["memories"])
Kind = Literal["page", "segment", "fact", "agent_trait", "trait"]


def memory_out(kind: str, row) -> dict[str, Any]:
    """A memory as the API shows it (the same shape for every kind)."""
    out = {"kind": kind, "pinned": row.pinned, "repressed": row.repressed, "version": row.version,
           "cid": getattr(row, "cid", ""), "detail": {}}
    if kind == "page":
        out.update(id=str(row.id), text=row.query, tier=row.tier, timestamp=row.timestamp,
                   segment_id=str(row.segment_id) if row.segment_id else None,
                   detail={"response": row.response, "seq": row.seq, "status": row.status})
    elif kind == "segment":
        out.update(id=str(row.id), text=row.summary, tier=row.status, timestamp=row.last_access,
                   detail={"keywords": list(row.keywords), "n_visit": row.n_visit, "pages": row.page_count,
                           "l_interaction": row.l_interaction})
    elif kind == "trait":
        dimension = TRAITS_BY_KEY.get(row.key)
        out.update(id=row.key, text=dimension.name if dimension else row.key, score=row.score,
                   timestamp=row.updated_at, detail={"evidence": list(row.evidence)})
    else:
        out.update(id=str(row.id), text=row.text, timestamp=row.timestamp,
                   segment_id=str(row.segment_id) if row.segment_id else None,
                   detail={"source_page_ids": list(row.source_page_ids)})
    return out


def _found(user, kind: str, ident: str):
    row = memory_reads.memory_one(user=user, kind=kind, ident=ident)
    if row is None:
        raise ApiError(404, "not_found", f"No {kind.replace('_', ' ')} {ident} in this memory.")
    return row


@router.get("/memories", response={200: list[MemoryOut], **ERRORS})
@paginate(Pages)
def list_memories(request, kind: Kind = "page", tier: str = "", q: str = Query("", max_length=200),
                  pinned: bool | None = None, repressed: bool | None = None, user: str | None = None):
    caller = caller_of(request, user)
    rows = memory_reads.memories(user=caller.user, kind=kind, tier=tier, query=q, pinned=pinned, repressed=repressed)
    return Projected(rows, lambda row: memory_out(kind, row))


@router.get("/memories/search", response={200: RecallOut, **ERRORS})
def search_memories(request, q: str = Query(..., min_length=1, max_length=4000), policy: str | None = None,
                    user: str | None = None):
    """A recall that changes no heat and stores no trace: what the assistant would remember."""
    caller = caller_of(request, user)
    return _recall(caller.user, RecallIn(query=q, policy=policy))


@router.get("/memories/by-cid/{cid}", response={200: MemoryOut, **ERRORS})
def memory_by_cid(request, cid: str, user: str | None = None):
    caller = caller_of(request, user)
    found = memory_reads.memory_by_cid(user=caller.user, cid=cid)
    if found is None:
        raise ApiError(404, "not_found", f"No memory with content id {cid} here.")
    return memory_out(*found)


@router.get("/memories/{kind}/{ident}", response={200: MemoryOut, **ERRORS})
def get_memory(request, kind: Kind, ident: str, user: str | None = None):
    caller = caller_of(request, user)
    return memory_out(kind, _found(caller.user, kind, ident))


@router.post("/memories/{kind}/{ident}/correct", response={200: MemoryOut, **ERRORS})
def correct_memory(request, kind: Kind, ident: str, payload: CorrectIn, user: str | None = None):
    caller = caller_of(request, user)
    values = payload.dict(exclude_none=True, exclude={"version", "reason"})
    edit = memory_correct(user=caller.user, kind=kind, ident=ident, version=payload.version, actor=caller.actor,
                          reason=payload.reason, **values)
    return memory_out(kind, edit.row)


@router.post("/memories/{kind}/{ident}/pin", response={200: MemoryOut, **ERRORS})
def pin_memory(request, kind: Kind, ident: str, payload: FlagIn, user: str | None = None):
    """Pin (value true) or unpin (false: the undo)."""
    caller = caller_of(request, user)
    edit = memory_pin(user=caller.user, kind=kind, ident=ident, actor=caller.actor, reason=payload.reason,
                      pinned=payload.value)
    return memory_out(kind, edit.row)


@router.post("/memories/{kind}/{ident}/repress", response={200: MemoryOut, **ERRORS})
def repress_memory(request, kind: Kind, ident: str, payload: FlagIn, user: str | None = None):
    """Repress (value true: kept, never recalled) or unrepress (false: the undo)."""
    caller = caller_of(request, user)
    edit = memory_repress(user=caller.user, kind=kind, ident=ident, actor=caller.actor, reason=payload.reason,
                          repressed=payload.value)
    return memory_out(kind, edit.row)


@router.delete("/memories/{kind}/{ident}", response={200: BlastRadiusOut, **ERRORS})
def delete_memory(request, kind: Kind, ident: str, dry_run: bool = False,
                  reason: str = Query("", max_length=500), user: str | None = None):
    """Delete a memory and what depends only on it; `dry_run=true` returns the blast radius and
    changes nothing. A delete is final."""
    caller = caller_of(request, user)
    radius = memory_delete(user=caller.user, kind=kind, ident=ident, actor=caller.actor, reason=reason,
                           dry_run=dry_run)
    return {**radius.as_dict(), "deleted": not dry_run}


@router.post("/recall", response={200: RecallOut, **ERRORS})
def recall(request, payload: RecallIn, user: str | None = None):
    """What would be recalled for a query, with each item's score breakdown. Heat changes and a
    trace is stored only when asked."""
    caller = caller_of(request, user)
    return _recall(caller.user, payload)


def _recall(user, payload: RecallIn) -> dict[str, Any]:
    # a recall changes nothing (unless asked to warm memories): no sona is made for it
    sona = sona_or_404(user, payload.sona) if payload.sona else None
    try:
        found = recall_for_query(user=user, query=payload.query, sona=sona, policy=payload.policy,
                                 update_heat=payload.update_heat, record_trace=payload.record_trace,
                                 now=timezone.now())
    except UnknownPolicyError as exc:
        raise ApiError(400, "unknown_policy", str(exc)) from None
    return {"query": payload.query, "policy": found.policy, "timings_ms": found.timings_ms,
            "trace_id": str(found.trace.id) if found.trace else None,
            "items": [{"kind": i.kind, "ref": i.ref, "text": i.text, "score": i.score,
                       "breakdown": dict(i.breakdown)} for i in found.items]}


@router.get("/events", response={200: list[EventOut], **ERRORS})
@paginate(Pages)
def list_events(request, kind: list[str] = Query(None), user: str | None = None):
    caller = caller_of(request, user)
    return events(user=caller.user, kinds=kind or None)


@router.get("/traces", response={200: list[TraceOut], **ERRORS})
@paginate(Pages)
def list_traces(request, user: str | None = None):
    caller = caller_of(request, user)
    return Projected(traces(user=caller.user), lambda trace: _trace_out(trace, with_payload=False))


@router.get("/traces/{trace_id}", response={200: TraceOut, **ERRORS})
def get_trace(request, trace_id: str, user: str | None = None):
    caller = caller_of(request, user)
    trace = trace_get(user=caller.user, trace_id=trace_id)
    if trace is None:
        raise ApiError(404, "not_found", "No such trace.")
    return _trace_out(trace, with_payload=True)


def _trace_out(trace, *, with_payload: bool) -> dict[str, Any]:
    return {"id": str(trace.id), "query": trace.query, "policy": trace.policy, "latency_ms": trace.latency_ms,
            "prompt_tokens": trace.prompt_tokens, "created_at": trace.created_at,
            "page_id": str(trace.page_id) if trace.page_id else None,
            "payload": trace.payload if with_payload else None}
