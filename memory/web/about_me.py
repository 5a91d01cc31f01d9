""""What I know about you": the person's own page of their memory (the inspector is the
operator's). Current facts, profile and strongest traits, each with where it came from; past facts
with their period; correct or forget each; export; erase everything, confirmed.

Every route acts on request.user's memory only: an id of anyone else's memory is a 404, never
data. Each view parses, calls one service (memory/services/forgetting.py, memory_talk.py) and goes
back to the page, with a notice (and, for a correction, its undo)."""

from __future__ import annotations

import io

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory.engine.wording import to_stored
from memory.selectors.about_me import about_me as about_me_read
from memory.selectors.export import export_data
from memory.services.common import MemoryInputError, MemoryNotFound
from memory.services.deletion import memory_delete
from memory.services.export_bundle import memory_export_bundle
from memory.services.forgetting import correction_undo, correction_undoable, memories_correct, memory_erase_all
from memory.services.memory_talk import memory_item_forget, memory_item_forget_plan

ERASE_WORD = "erase"
KINDS = {"facts": "fact", "profile": "profile", "traits": "trait", "said": "page", "notes": "agent_trait"}


def _page(undo: int | None = None) -> str:
    url = reverse("about_me")
    return f"{url}?undo={undo}" if undo else url


@login_required
@require_GET
def about_me(request):
    undo = request.GET.get("undo", "")
    event = correction_undoable(user=request.user, event_id=int(undo)) if undo.isdigit() else None
    return render(request, "memory/about_me.html", {"known": about_me_read(user=request.user), "undo": event})


@login_required
@require_http_methods(["GET", "POST"])
def forget(request, kind: str, ident: str):
    """GET: what forgetting one item removes, turn by turn and why, before it acts; POST: forget it
    for good."""
    if kind not in KINDS:
        raise Http404("No such memory.")
    if request.method == "GET":
        if kind == "notes":
            raise Http404("No such memory.")  # a note is forgotten from the page itself: it has no turns
        try:
            plan = memory_item_forget_plan(user=request.user, kind=KINDS[kind], ident=ident)
        except MemoryNotFound:
            raise Http404("No such memory.") from None
        return render(request, "memory/about_me_forget.html", {"plan": plan, "kind": kind})
    if kind == "notes":  # one of the assistant's notes: deleted along its provenance, audited
        try:
            memory_delete(user=request.user, kind="agent_trait", ident=ident, actor=request.user,
                          reason="forgotten by the person")
        except (MemoryNotFound, MemoryInputError):
            raise Http404("No such memory.") from None
        messages.success(request, "Forgotten for good: 1 note of the assistant's.")
        return redirect(_page())
    try:
        done = memory_item_forget(user=request.user, kind=KINDS[kind], ident=ident, actor=request.user)
    except MemoryNotFound:
        raise Http404("No such memory.") from None
    parts = [f"{done.facts} fact(s)" if done.facts else "", f"{done.pages} turn(s)" if done.pages else "",
             f"{done.profile_values} profile value(s)" if done.profile_values else "",
             f"{done.traits} trait(s)" if done.traits else ""]
    messages.success(request, f"Forgotten for good: {', '.join(p for p in parts if p) or 'nothing was left'}.")
    return redirect(_page())


@login_required
@require_POST
def correct(request, kind: str, ident: str):
    """A fact's or a profile value's new text; the page shows an undo."""
    value = request.POST.get("value", "")
    try:
        if kind == "facts":  # the box shows the fact as the page says it: stored again in the third person
            done = memories_correct(user=request.user, fact_texts={ident: to_stored(value)}, actor=request.user)
        elif kind == "profile":
            done = memories_correct(user=request.user, profile={ident: value}, actor=request.user)
        else:
            raise Http404("No such memory.")
    except MemoryNotFound:
        raise Http404("No such memory.") from None
    except MemoryInputError as exc:
        messages.error(request, str(exc))
        return redirect(_page())
    messages.success(request, "Corrected.")
    return redirect(_page(done.event_id))


@login_required
@require_POST
def undo(request, event_id: int):
    try:
        correction_undo(user=request.user, event_id=event_id, actor=request.user)
    except MemoryNotFound:
        raise Http404("Nothing to undo.") from None
    messages.success(request, "Undone: it is back as it was.")
    return redirect(_page())


@login_required
@require_GET
def export(request):
    """The whole memory as a zip to read and to import again (memory/services/export_bundle.py)."""
    bundle = io.BytesIO()
    memory_export_bundle(user=request.user, out=bundle, data=export_data(user=request.user))
    response = HttpResponse(bundle.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="memoryos-{request.user.get_username()}.zip"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def erase(request):
    """GET: the confirmation, with the export offered first; POST with the word typed: erase all."""
    error = ""
    if request.method == "POST":
        if request.POST.get("confirm", "").strip().lower() == ERASE_WORD:
            counts = memory_erase_all(user=request.user, actor=request.user)
            messages.success(request, f"Everything I knew about you is erased ({counts.get('pages', 0)} turns, "
                                      f"{counts.get('facts', 0)} facts). Your account stays.")
            return redirect(_page())
        error = f"Type “{ERASE_WORD}” to confirm."
    return render(request, "memory/about_me_erase.html", {"error": error, "word": ERASE_WORD},
                  status=400 if error else 200)
