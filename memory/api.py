"""REST endpoints for memory. Handlers parse, call one service or selector, return."""

from __future__ import annotations

from ninja import Router

from memory.schemas import StatsOut, TurnIn, TurnOut
from memory.selectors import memory_stats
from memory.services import sona_get_or_create, turn_run

router = Router(tags=["memory"])


@router.post("/turns", response=TurnOut)
def post_turn(request, payload: TurnIn):
    sona = sona_get_or_create(user=request.user, name=payload.sona)
    result = turn_run(user=request.user, message=payload.message, sona=sona)
    return TurnOut(
        page_id=str(result.page.id), reply=result.reply, model=result.page.reply_model,
        offline=result.offline, fallback_reason=result.fallback_reason,
        trace_id=str(result.recall.trace.id) if result.recall.trace else None,
        prompt_tokens=result.prompt.tokens,
        recalled=[{"kind": i.kind, "ref": i.ref, "text": i.text, "score": i.score,
                   "breakdown": dict(i.breakdown)} for i in result.prompt.included],
    )


@router.get("/stats", response=StatsOut)
def get_stats(request):
    return memory_stats(user=request.user)
