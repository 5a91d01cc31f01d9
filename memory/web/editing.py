"""The inspector's actions on one memory: pin, repress, correct, delete (after a confirm dialog that
lists the blast radius). A person acts on their own memory; staff need `memory.edit_any_user`.
Each view parses, calls one service (memory/services/editing.py, deletion.py) and renders the
memory's action bar (htmx) or goes back where it came from."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import Truncator
from django.views.decorators.http import require_http_methods, require_POST

from memory.selectors.accounts import user_named
from memory.selectors.blast_radius import pinned_in_radius
from memory.selectors.memories import memory_for_actions
from memory.services.common import MemoryInputError
from memory.services.deletion import memory_delete
from memory.services.editing import memory_correct, memory_pin, memory_repress
from memory.templatetags.inspector import action_urls
from memory.web.access import can_edit, can_inspect
from memory.web.htmx import refused_status

EDITABLE_FIELDS = {"page": ("query", "response"), "segment": ("summary", "keywords"), "fact": ("text",),
                   "agent_trait": ("text",), "trait": ("score", "note")}


def _target(request, username: str, *, editing: bool):
    target = user_named(username)
    if target is None or not can_inspect(request.user, target):
        raise Http404("No memory to show here.")
    if editing and not can_edit(request.user, target):
        raise Http404("No memory to change here.")  # as for a memory one may not see: never say more
    return target


def _back(request, *candidates: str | None, default: str) -> str:
    """The first place to go back to that is on this site: `next` and the Referer come from the
    browser, and a page elsewhere could send a person off to any address (an open redirect)."""
    for url in candidates:
        if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
            return url
    return default


def _bar(request, target, kind: str, ident: str, *, notice: str = "", error: str = "", status: int = 200):
    memory = memory_for_actions(user=target, kind=kind, ident=ident)
    if memory is None:
        raise Http404("No such memory.")
    if not request.htmx:
        if error:
            messages.error(request, error)
        elif notice:
            messages.success(request, notice)
        return redirect(_back(request, request.POST.get("next"), request.META.get("HTTP_REFERER"),
                              default=reverse("inspector_home")))
    return render(request, "inspector/_actions.html", {"target": target, "m": memory, "notice": notice,
                                                        "error": error, "can_edit": True,
                                                        "urls": action_urls(target.get_username(), kind, memory.ident)},
                  status=status)


@login_required
@require_http_methods(["GET"])
def bar(request, username, kind, ident):
    """The memory's action bar (what "Cancel" on a correction goes back to)."""
    target = _target(request, username, editing=True)
    return _bar(request, target, kind, ident)


@login_required
@require_POST
def pin(request, username, kind, ident):
    target = _target(request, username, editing=True)
    value = request.POST.get("value", "1") == "1"
    try:
        memory_pin(user=target, kind=kind, ident=ident, actor=request.user, reason=request.POST.get("reason", ""),
                   pinned=value)
    except MemoryInputError as exc:
        return _bar(request, target, kind, ident, error=str(exc), status=refused_status(request, True))
    return _bar(request, target, kind, ident, notice="Pinned." if value else "Unpinned.")


@login_required
@require_POST
def repress(request, username, kind, ident):
    target = _target(request, username, editing=True)
    value = request.POST.get("value", "1") == "1"
    try:
        memory_repress(user=target, kind=kind, ident=ident, actor=request.user,
                       reason=request.POST.get("reason", ""), repressed=value)
    except MemoryInputError as exc:
        return _bar(request, target, kind, ident, error=str(exc), status=refused_status(request, True))
    return _bar(request, target, kind, ident,
                notice="Repressed: kept, never recalled." if value else "No longer repressed.")


@login_required
@require_http_methods(["GET", "POST"])
def correct(request, username, kind, ident):
    """GET: the correction form for this memory (htmx swaps it in); POST: a new version."""
    target = _target(request, username, editing=True)
    memory = memory_for_actions(user=target, kind=kind, ident=ident)
    if memory is None or kind not in EDITABLE_FIELDS:
        raise Http404("No such memory.")
    error = ""
    if request.method == "POST":
        values = {name: request.POST.get(name) for name in EDITABLE_FIELDS[kind] if request.POST.get(name) is not None}
        try:
            memory_correct(user=target, kind=kind, ident=ident, version=request.POST.get("version"),
                           actor=request.user, reason=request.POST.get("reason", ""), **values)
        except MemoryInputError as exc:
            error = str(exc)
        else:
            if request.htmx:  # the page shows the old text in places the bar does not reach: reload it
                messages.success(request, f"Corrected: version {memory.version + 1} is what is remembered now.")
                response = HttpResponse(status=200)
                response["HX-Refresh"] = "true"
                return response
            return _bar(request, target, kind, ident, notice="Corrected: a new version.")
    return render(request, "inspector/_correct.html", {"target": target, "m": memory, "error": error},
                  status=refused_status(request, bool(error)))


@login_required
@require_http_methods(["GET", "POST"])
def delete(request, username, kind, ident):
    """GET: the confirm dialog with the blast radius (a dry run); POST: delete, for good."""
    target = _target(request, username, editing=True)
    try:
        radius = memory_delete(user=target, kind=kind, ident=ident, actor=request.user,
                               reason=request.POST.get("reason", ""), dry_run=request.method == "GET")
    except MemoryInputError as exc:
        if request.htmx:  # into the dialog slot, where the confirm dialog would have gone
            return HttpResponse(format_html('<p class="error" role="alert">{}</p>', str(exc)))
        raise Http404(str(exc)) from None
    if request.method == "GET":
        return render(request, "inspector/_delete.html", {"target": target, "r": radius, "kind": kind,
                                                          "ident": ident,
                                                          "pinned": pinned_in_radius(user=target, radius=radius)})
    messages.success(request, f"Deleted “{Truncator(radius.title).words(14)}” and what depended only on it. "
                              "This is final.")
    destination = _back(request, request.POST.get("next"),
                        default=reverse("inspector_overview", args=[target.get_username()]))
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = destination
        return response
    return redirect(destination)
