"""The person's API tokens: a settings page to make one (shown once) and revoke any."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from memory.selectors.accounts import api_tokens
from memory.services.common import MemoryInputError
from memory.services.tokens import token_create, token_revoke
from memory.web.htmx import refused_status


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request):
    shown, error = None, ""
    if request.method == "POST":
        try:
            if "revoke" in request.POST:
                revoke = request.POST["revoke"]
                # the page's own forms send a token's number; isdigit() would take "²", which int() refuses
                if not (revoke.isascii() and revoke.isdecimal()):
                    raise MemoryInputError("No such token.")
                token_revoke(user=request.user, token_id=int(revoke))
            else:
                _, shown = token_create(user=request.user, name=request.POST.get("name", ""))
        except MemoryInputError as exc:
            error = str(exc)
    return render(request, "memory/tokens.html", {"tokens": api_tokens(user=request.user), "shown": shown,
                                                  "error": error, "v1_base": request.build_absolute_uri("/v1")},
                  status=refused_status(request, bool(error)))
