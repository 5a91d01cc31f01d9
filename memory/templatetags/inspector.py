"""Filters the inspector's templates use."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from memory.inspector import charts
from memory.selectors.log import EVENT_LABELS
from memory.selectors.memories import handle_of
from memory.web.access import can_edit

register = template.Library()


@register.filter
def event_label(kind: str) -> str:
    """A lifecycle event kind as people read it ("segment_evicted" -> "segment evicted")."""
    return EVENT_LABELS.get(kind, kind.replace("_", " "))


OPERATOR_VERBS = {"pinned": "pinned", "unpinned": "unpinned", "repressed": "repressed", "unrepressed": "unrepressed",
                  "corrected": "corrected", "deleted": "deleted"}


@register.filter
def operator_verb(kind: str) -> str:
    return OPERATOR_VERBS.get(kind, kind.replace("_", " "))


KIND_LABELS = {"kb_fact": "fact", "agent_trait": "assistant note", "user_trait": "trait", "stm_page": "recent turn",
               "mtm_page": "mid-term page", "turn": "said earlier", "profile": "profile"}


# Score parts that are moments (Unix seconds), shown as dates rather than raw numbers.
MOMENT_PARTS = frozenset({"until", "since", "at"})


@register.filter
def breakdown_value(value, name: str) -> str:
    """A recall score part as a person reads it: a moment as its date, a number to three places."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if name in MOMENT_PARTS:
        return datetime.fromtimestamp(value, tz=UTC).strftime("%-d %b %Y")
    return f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


@register.filter
def kind_label(kind: str) -> str:
    """A recalled item's kind as people read it ("kb_fact" -> "fact")."""
    return KIND_LABELS.get(kind, kind.replace("_", " "))


@register.filter
def split(text: str) -> list[str]:
    return text.split()


@register.filter
def values_text(value) -> str:
    """A correction's before or after (a dict of fields, or one value) as one line of text."""
    if isinstance(value, dict):
        return " / ".join(str(v) for v in value.values() if v not in (None, ""))
    return "" if value is None else str(value)


@register.filter
def deleted_counts(counts) -> str:
    """{"pages": 4, "segments": 1, ...} as "4 pages, 1 segment"."""
    if not isinstance(counts, dict):
        return ""
    words = {"pages": "page", "segments": "segment", "facts": "fact", "agent_traits": "agent trait",
             "traits": "trait", "recollections": "recollection"}
    return ", ".join(f"{n} {words.get(k, k)}{'' if n == 1 else 's'}" for k, n in counts.items() if n) or "nothing else"


@register.filter
def get(mapping, key):
    """mapping[key] in a template, or None."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def age_words(seconds: float) -> str:
    """Seconds as people read them ("3.2 days")."""
    return charts.age_words(float(seconds))


_JSON_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


@register.filter
def figure_script(figure_json: str, element_id: str):
    """A figure's JSON (memory.inspector.charts) in a <script type="application/json">, escaped as
    Django's json_script escapes it; static/js/charts.js draws it into `[data-figure=element_id]`."""
    return format_html('<script id="{}" type="application/json">{}</script>', element_id,
                       mark_safe(figure_json.translate(_JSON_ESCAPES)))


@register.inclusion_tag("inspector/_actions.html", takes_context=True)
def memory_actions(context, kind: str, row):
    """A memory's action bar: its flags, and the buttons when the viewer may edit this memory."""
    target = context["target"]
    memory = handle_of(kind, row)
    return {"target": target, "m": memory, "can_edit": can_edit(context["request"].user, target),
            "urls": action_urls(target.get_username(), memory.kind, memory.ident),
            "csrf_token": context.get("csrf_token")}


ACTIONS = ("pin", "repress", "correct", "delete")


def action_urls(username: str, kind: str, ident: str) -> dict[str, str]:
    """A memory's action URLs from one `reverse`: they differ only in their last part, and a page
    of the inspector shows a few hundred action bars."""
    pin = reverse("memory_pin", args=[username, kind, ident])
    base = pin[:-len("pin/")]
    return {action: f"{base}{action}/" for action in ACTIONS}
