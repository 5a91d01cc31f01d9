"""Pages. The browser chat and the inspector build on these."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from memory.selectors import memory_stats, stm_pages


@login_required
def home(request):
    return render(request, "memory/home.html",
                  {"stats": memory_stats(user=request.user), "stm": stm_pages(user=request.user)})
