"""The Exocortex's part of the web pages: the decay settings' form on the profile page (its view at
settings/decay/) and the decay curves on the inspector's overview, plugged in through the registry
(memory/policies/registry.py: on_urls, on_page_context). The templates draw what the contexts hold
in this package's templates/exocortex/ (the decay settings' section of the profile page, the curves'
section of the overview), which the core's pages include from `model_sections`.
"""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from memory.policies import registry
from memory.policies.exocortex.selectors import decay_settings_initial, exocortex_curves
from memory.policies.exocortex.services import decay_settings_update
from memory.selectors.long_term import profile_initial
from memory.services.common import MemoryInputError
from memory.web.forms import ProfileForm
from memory.web.htmx import refused_status

# This package's templates/ (on the template path: memoryos_site/settings.py)
PROFILE_SECTION = "exocortex/decay_settings.html"
OVERVIEW_SECTION = "exocortex/overview_curves.html"


class DecaySettingsForm(forms.Form):
    """The Exocortex decay curve's two user settings (engine/decay.py); the service checks them again
    (services.py decay_settings_update)."""

    short_term_minutes = forms.FloatField(
        min_value=0.5, max_value=7 * 24 * 60, label="Short-term memory duration (minutes)",
        help_text="How long a memory counts as short-term: its recency falls exponentially over this time.")
    long_term_threshold = forms.FloatField(
        min_value=0.0001, max_value=0.89, label="Long-term decay threshold",
        help_text="The recency your oldest memory decays to (0.01 by default: old but relevant memories still "
                  "come back, old irrelevant ones stay quiet).")


@login_required
@require_POST
def decay_settings(request):
    """The decay settings' form on the profile page: saved through the service, errors shown in place."""
    form = DecaySettingsForm(request.POST)
    saved = False
    if form.is_valid():
        try:
            decay_settings_update(user=request.user, **form.cleaned_data)
            saved = True
        except MemoryInputError as exc:
            form.add_error(None, str(exc))
    if not request.htmx:
        if saved:
            return redirect("profile")
        # The profile page as its own view builds it (every model's section), with this form's errors.
        context = {**registry.page_context("profile", user=request.user), "decay_form": form,
                   "form": ProfileForm(initial=profile_initial(user=request.user))}
        return render(request, "memory/profile.html", context, status=400)
    return render(request, "exocortex/decay_settings.html#decay-form", {"decay_form": form, "decay_saved": saved},
                  status=refused_status(request, not saved))


def profile_context(*, user) -> dict:
    return {"decay_form": DecaySettingsForm(initial=decay_settings_initial(user=user))}


def overview_context(*, user) -> dict:
    return {"decay": exocortex_curves(user=user)}


def register() -> None:
    registry.on_urls([path("settings/decay/", decay_settings, name="decay_settings")])
    registry.on_page_context("profile", profile_context, template=PROFILE_SECTION)
    registry.on_page_context("inspector_overview", overview_context, template=OVERVIEW_SECTION)
