"""The user's profile form: asked once on the first visit, skippable, editable any time."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from memory.policies import registry as models
from memory.selectors.long_term import profile_initial
from memory.services.long_term import profile_update
from memory.web.forms import ProfileForm


@login_required
@require_http_methods(["GET", "POST"])
def profile(request):
    """The full page, or (htmx) the form alone, or the first-visit card on the chat page."""
    form = ProfileForm(request.POST or None, initial=profile_initial(user=request.user))
    card = request.POST.get("card") == "1"
    saved = request.method == "POST" and form.is_valid()
    if saved:
        data = form.cleaned_data
        profile_update(user=request.user, name=data["name"], gender=data["gender"] or "",
                       birth_year=data["birth_year"])
    if not request.htmx:
        # The memory models' sections of the page (the Exocortex's decay settings)
        sections = models.page_context("profile", user=request.user)
        return redirect("home") if saved else render(request, "memory/profile.html", {"form": form, **sections})
    partial = ("card-saved" if saved else "card") if card else "profile-form"
    return render(request, f"memory/profile.html#{partial}", {"form": form, "saved": saved, "card": card})


@login_required
@require_POST
def profile_skip(request):
    """An empty profile row remembers that the person chose to skip; they can fill it in later."""
    profile_update(user=request.user)
    if not request.htmx:
        return redirect("home")
    return render(request, "memory/profile.html#skipped", {})
