"""How a turn's text is shown: an imported transcript's "Maya: " before each line is who spoke, which
the bubble already says; it is left out of the bubble (the stored text keeps it)."""

from __future__ import annotations

import re

from django import template

register = template.Library()


@register.filter
def without_speaker(text: str, page) -> str:
    """`text` without the "Name: " its lines start with, for the speakers of an imported page."""
    speakers = {str(u.get("speaker", "")).strip() for u in (getattr(page, "utterances", None) or ())
                if isinstance(u, dict)} - {""}
    if not text or not speakers:
        return text
    names = "|".join(re.escape(name) for name in sorted(speakers, key=len, reverse=True))
    return re.sub(rf"(?m)^(?:{names}):\s*", "", text)
