"""Filters of the chat's "What I remembered" panel."""

from __future__ import annotations

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from memory.engine.text import WORD

register = template.Library()


@register.filter
def highlight(text: str, words) -> SafeString:
    """The text, escaped, with the given words (those it shares with the message) in <mark>."""
    wanted = {word.lower() for word in words or ()}
    if not wanted:
        return escape(text)
    parts, last = [], 0
    for match in WORD.finditer(text):
        if match.group().lower() in wanted:
            parts.append(escape(text[last:match.start()]))
            parts.append(format_html("<mark>{}</mark>", match.group()))
            last = match.end()
    parts.append(escape(text[last:]))
    return mark_safe("".join(parts))


@register.filter
def legend_for(legend, label: str) -> str:
    """The explanation of one score, from the panel's legend ((label, meaning) pairs)."""
    return dict(legend or ()).get(label, "")
