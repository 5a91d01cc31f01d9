"""The inspector's review queue of facts that change: open contradictions (and decided ones, by
status), each with both facts, the turns they were stated in, their dates and the detector's reason;
accept (supersede), edit (correct the newer fact, then accept) or reject (both stay current). Seeing
needs can_inspect, deciding can_edit, as for pin/repress/correct; anyone else gets a 404."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory.selectors.accounts import user_named
from memory.selectors.supersessions import STATUSES, supersession_counts, supersession_reviews
from memory.services.common import MemoryInputError
from memory.services.supersession import supersession_accept, supersession_reject
from memory.web.access import can_edit, can_inspect, switchable_users
from memory.web.inspector import SECTIONS


def _target(request, username: str, *, editing: bool = False):
    target = user_named(username)
    if target is None or not can_inspect(request.user, target):
        raise Http404("No memory to show here.")
    if editing and not can_edit(request.user, target):
        raise Http404("No memory to change here.")
    return target


@login_required
@require_GET
def supersessions(request, username):
    target = _target(request, username)
    status = request.GET.get("status", "open")
    status = status if status in (*STATUSES, "any") else "open"
    reviews = supersession_reviews(user=target, status=None if status == "any" else status)
    return render(request, "inspector/supersessions.html", {
        "target": target, "section": "supersessions", "sections": SECTIONS,
        "switchable": switchable_users(request.user), "reviews": reviews, "status": status,
        "statuses": STATUSES, "counts": supersession_counts(user=target), "can_edit": can_edit(request.user, target)})


@login_required
@require_POST
def decide(request, username, ident, action):
    target = _target(request, username, editing=True)
    reason = request.POST.get("reason", "")
    try:
        if action == "accept":
            text = request.POST.get("text", "").strip()
            edited = text and text != request.POST.get("original", "").strip()  # the operator changed it
            supersession_accept(user=target, ident=str(ident), actor=request.user, reason=reason,
                                text=text if edited else None)
            messages.success(request, "Accepted: the older fact is kept as history, the newer one is current.")
        elif action == "reject":
            supersession_reject(user=target, ident=str(ident), actor=request.user, reason=reason)
            messages.success(request, "Rejected: both facts stay current.")
        else:
            raise Http404("No such action.")
    except MemoryInputError as exc:
        messages.error(request, str(exc))
    return redirect(f"{reverse('inspector_supersessions', args=[target.get_username()])}"
                    f"?status={request.POST.get('status', 'open')}")
