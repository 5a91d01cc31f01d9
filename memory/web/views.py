"""The browser chat: the page, sign-up, sona switching and the "what I remembered" panels.

A view returns a template partial when htmx asks (django-htmx's `request.htmx`); the chat itself
runs over the websocket (memory/web/consumers.py).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory.config import memory_params
from memory.selectors.chat import chat_history
from memory.selectors.long_term import profile_exists
from memory.selectors.recall_panel import turn_recall
from memory.selectors.sonas import sona_for_user, sona_list
from memory.selectors.stats import memory_stats
from memory.services.common import MemoryInputError
from memory.services.users import sona_get_or_create, sona_rename
from memory.web.forms import ProfileForm, SignUpForm, SonaForm
from memory.web.htmx import refused_status

SESSION_SONA = "chat_sona_id"


def _active_sona(request):
    """The sona chosen in this session, or the user's default one."""
    sona = sona_for_user(user=request.user, sona_id=request.session.get(SESSION_SONA, ""))
    return sona or sona_get_or_create(user=request.user)


def _sona_context(request, form: SonaForm | None = None, rename_error: str = "") -> dict:
    active = _active_sona(request)
    return {"sonas": sona_list(user=request.user), "active_sona": active,
            "sona_form": form or SonaForm(user=request.user), "rename_error": rename_error}


@login_required
@require_GET
def home(request):
    """The chat page: the conversation so far (every tier, by turn order) and the composer."""
    pages, total = chat_history(user=request.user, limit=settings.MEMORYOS_CHAT["HISTORY_LIMIT"])
    if request.htmx and request.GET.get("part") == "transcript":  # a tab catching up after a reconnect
        return render(request, "memory/home.html#transcript", {"pages": pages, "total": total})
    context = {
        "pages": pages, "total": total, "stats": memory_stats(user=request.user),
        "stm_capacity": memory_params().stm_capacity,
        "ask_profile": not profile_exists(user=request.user),
        "profile_form": ProfileForm(),
        "max_chars": settings.MEMORYOS["MAX_MESSAGE_CHARS"], **_sona_context(request),
        "max_files": settings.MEMORYOS["MAX_FILES_PER_TURN"], "max_file_bytes": settings.MEMORYOS["MAX_FILE_BYTES"],
    }
    return render(request, "memory/home.html", context)


@login_required
@require_GET
def stats(request):
    return render(request, "memory/home.html#stats", {"stats": memory_stats(user=request.user),
                                                      "stm_capacity": memory_params().stm_capacity})


@login_required
@require_GET
def recall_panel(request, page_id):
    """What entered the prompt of one reply, with each item's score breakdown."""
    recall = turn_recall(user=request.user, page_id=page_id)
    if recall is None and not request.htmx:
        raise Http404("No retrieval trace for this turn.")
    return render(request, "memory/recall_panel.html", {"recall": recall})


@login_required
@require_POST
def sona_select(request):
    sona = sona_for_user(user=request.user, sona_id=request.POST.get("sona", ""))
    if sona is not None:
        request.session[SESSION_SONA] = str(sona.id)
    if not request.htmx:
        return redirect("home")
    return render(request, "memory/home.html#sona-bar", _sona_context(request))


@login_required
@require_POST
def sona_create(request):
    form = SonaForm(request.POST, user=request.user)
    if form.is_valid():
        sona = sona_get_or_create(user=request.user, name=form.cleaned_data["name"],
                                  profile=form.cleaned_data["profile"],
                                  recall_policy=form.cleaned_data["recall_policy"])
        request.session[SESSION_SONA] = str(sona.id)
        form = None
    if not request.htmx:
        return redirect("home")
    context = _sona_context(request, form)
    context["creating"] = form is not None
    return render(request, "memory/home.html#sona-bar", context)


@login_required
@require_POST
def sona_rename_view(request):
    """Rename the sona in use: its memories stay with it (Memoria embeds the new name)."""
    error = ""
    try:
        sona_rename(user=request.user, sona=_active_sona(request), name=request.POST.get("name", ""))
    except MemoryInputError as exc:
        error = str(exc)
    if not request.htmx:
        return redirect("home")
    context = _sona_context(request, rename_error=error)
    return render(request, "memory/home.html#sona-bar", context, status=refused_status(request, bool(error)))


@require_http_methods(["GET", "POST"])
def signup(request):
    if request.user.is_authenticated:
        return redirect("home")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form})
