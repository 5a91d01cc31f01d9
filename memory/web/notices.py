"""The chat's "remembered" notice: what a turn's after-reply work did to facts, sent to the
person's open tabs, and the undo each change offers.

The after-reply work runs in the low-priority lane, a Celery worker or inline, all synchronous:
the frame goes through the channel layer from sync code (consumers.broadcast, which never raises).
Frame: {"type": "memory.changed", "page_id": ..., "changes": [{"action": "remembered" | "changed" |
"forgotten", "fact_id": ..., "text": ..., "previous": ... (changed), "undo_url": ...}]}.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from memory.engine.fact_answers import said_to_person
from memory.services.common import MemoryInputError, MemoryNotFound
from memory.services.facts import FactChange, fact_change_undo
from memory.web.consumers import broadcast


def change_frame(change: FactChange) -> dict[str, Any]:
    entry: dict[str, Any] = {"action": change.action, "fact_id": change.fact_id,
                             "text": said_to_person(change.text),
                             "undo_url": reverse("chat_memory_undo", args=[change.fact_id])}
    if change.previous:
        entry["previous"] = said_to_person(change.previous)
    return entry


def memory_changed_frame(*, page_id: str, changes: Sequence[FactChange]) -> dict[str, Any]:
    return {"type": "memory.changed", "page_id": str(page_id), "changes": [change_frame(c) for c in changes]}


def memory_changed_send(*, user_id: int, page_id: str, changes: Sequence[FactChange]) -> None:
    """Tell the person's tabs what a turn changed (a listener of memory/services/facts.py)."""
    if changes:
        async_to_sync(broadcast)(user_id, memory_changed_frame(page_id=page_id, changes=changes))


@login_required
@require_POST
def memory_undo(request, fact_id):
    """Undo what a turn did to one of the person's facts (audited: memory/services/facts.py)."""
    try:
        restored = fact_change_undo(user=request.user, fact_id=str(fact_id))
    except MemoryNotFound:
        raise Http404("No such fact in your memory.") from None
    except MemoryInputError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse({"undone": str(fact_id), "current_again": [said_to_person(t) for t in restored]})
