"""REST endpoints for turns and counts. Handlers parse, call one service or selector, return."""

import json
import queue
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse
from ninja import Router

from memory.runtime.threads import work_on_thread
from memory.selectors.files import attached_files
from memory.selectors.sonas import sona_named
from memory.selectors.stats import memory_stats
from memory.services.common import MemoryInputError
from memory.services.turn_input import TurnInput, turn_input_parse
from memory.services.turns import TurnResult, turn_run
from memory.services.users import sona_get_or_create
from memory.web.api_auth import ApiError, caller_of
from memory.web.rate_limit import rate_limit_check
from memory.web.schemas import ErrorOut, StatsOut, TurnIn, TurnOut

router = Router(tags=["memory"])
ERRORS: dict[int, Any] = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut, 413: ErrorOut, 422: ErrorOut, 429: ErrorOut}
SSE = {"responses": {200: {"description": "The reply; with stream=true, a stream of server-sent events",
                           "content": {"text/event-stream": {"schema": {}}}}}}  # each event: JSON data


class RateLimited(ApiError):
    """The user's turns come faster than the chat's limit allows (the same bucket as the websocket's)."""

    def __init__(self, wait: float) -> None:
        super().__init__(429, "rate_limited", f"You are sending messages too fast. Please wait "
                         f"{max(1, round(wait))} s before sending another.", {"retry_after": round(wait, 1)})
        self.wait = wait


PREVIEW_CHARS = 500


def file_out(row) -> dict[str, Any]:
    """A file as the API shows it (files routes, and a turn's files)."""
    return {"cid": row.content_cid, "node_cid": row.cid, "name": row.name, "media_type": row.media_type,
            "size": row.size, "page_id": str(row.page_id) if row.page_id else None, "created_at": row.created_at,
            "extraction": row.extraction, "text_chars": len(row.text), "text_preview": row.text[:PREVIEW_CHARS]}


def turn_out(result: TurnResult) -> dict[str, Any]:
    return TurnOut(
        page_id=str(result.page.id), reply=result.reply, model=result.page.reply_model,
        offline=result.offline, fallback_reason=result.fallback_reason,
        trace_id=str(result.recall.trace.id) if result.recall.trace else None,
        prompt_tokens=result.prompt.tokens, policy=result.recall.policy,
        recalled=[{"kind": i.kind, "ref": i.ref, "text": i.text, "score": i.score,
                   "breakdown": dict(i.breakdown)} for i in result.prompt.included],
        files=[file_out(row) for row in attached_files(user=result.page.user, page_id=result.page.id)],
    ).dict()


def _sona(user, payload: TurnIn, name: str | None):
    """The sona the turn names: the user's own, created only when the request asks for it."""
    if name is None:
        return sona_get_or_create(user=user)
    found = sona_named(user=user, name=name)
    if found is not None:
        return found
    if not payload.create_sona:
        raise MemoryInputError(f"Unknown sona {name.strip()!r}; send \"create_sona\": true to create it.")
    return sona_get_or_create(user=user, name=name, profile=payload.sona_profile)


@router.post("/turns", response={200: TurnOut, **ERRORS}, openapi_extra=SSE)
def post_turn(request, payload: TurnIn, stream: bool = False, user: str | None = None):
    """Send a message; the reply and what was recalled for it, as the chat runs a turn (and limited by
    the chat's own bucket: 429 with Retry-After). With `stream=true` the answer is a server-sent-event
    stream: `stored` (the page id, once the message is stored), `token` events as the reply is
    written, then `done` with this route's JSON (or `error`)."""
    caller = caller_of(request, user)
    checked = turn_input_parse(message=payload.message, files=payload.files, sona=payload.sona,
                               policy=payload.policy)  # as the websocket checks it: refused before the bucket
    wait = rate_limit_check(caller.user.pk)
    if wait:
        raise RateLimited(wait)
    sona = _sona(caller.user, payload, checked.sona)
    if not stream:
        return turn_out(turn_run(user=caller.user, message=checked.message, sona=sona, policy=checked.policy,
                                 files=checked.files))
    return StreamingHttpResponse(_turn_events(caller.user, checked, sona), content_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, default=str)}\n\n"


def _turn_events(user, checked: TurnInput, sona) -> Iterator[str]:
    """The turn runs on a thread of its own; its tokens come through a queue as they are written."""
    events: queue.Queue = queue.Queue()

    def run() -> None:
        try:
            result = turn_run(user=user, message=checked.message, sona=sona, policy=checked.policy, files=checked.files,
                              on_stored=lambda page: events.put(("stored", {"page_id": str(page.id)})),
                              on_token=lambda token: events.put(("token", token)))
            events.put(("done", turn_out(result)))
        except MemoryInputError as exc:
            events.put(("error", {"code": "invalid", "message": str(exc), "detail": None}))
        except Exception:  # the reply failed after the message was stored; the client is told
            events.put(("error", {"code": "error", "message": "The reply failed; the message is stored.",
                                  "detail": None}))

    work_on_thread("api-turn", run)
    while True:
        event, data = events.get()
        yield _sse(event, data)
        if event in ("done", "error"):
            return


@router.get("/stats", response={200: StatsOut, **ERRORS})
def get_stats(request, user: str | None = None):
    return memory_stats(user=caller_of(request, user).user)
