"""What a person's export says of their memory in words and data (memory/services/export_bundle.py
writes it into the zip): facts with the words that told them and their periods, earlier facts,
profile, traits, the assistant's notes, every turn, and the files."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from memory.models import AttachedFile, DialoguePage
from memory.selectors.about_me import about_me


def _when(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


def export_data(*, user) -> dict[str, Any]:
    """The export's words and data (module doc), newest facts as /me/ lists them."""
    known = about_me(user=user)

    def fact(view) -> dict[str, Any]:
        return {"fact": view.said, "stored_as": view.text, "since": _when(view.valid_from),
                "until": _when(view.valid_until), "period": view.period,
                "told": [{"words": s.text, "at": _when(s.at)} for s in view.sources]}

    pages = DialoguePage.objects.filter(user=user).select_related("sona").order_by("seq")
    files = AttachedFile.objects.filter(user=user).order_by("created_at")
    return {
        "person": user.get_username(), "exported_at": timezone.now().isoformat(),
        "facts": [fact(f) for f in known.facts], "earlier_facts": [fact(f) for f in known.past],
        "profile": [{"what": v.label, "value": v.value, "since": v.since or ""} for v in known.profile],
        "traits": [{"trait": t.name, "score": round(t.score, 3)} for t in known.traits],
        "assistant_notes": [{"note": n.text, "at": _when(n.at)} for n in known.notes],
        "conversation": [{"turn": p.seq, "at": _when(p.timestamp), "you": p.query, "assistant": p.response,
                          "with": p.sona.name if p.sona else ""} for p in pages],
        "files": [{"name": f.name, "type": f.media_type, "size": f.size, "at": _when(f.created_at),
                   "content_id": f.content_cid, "path": f"files/{file_name(f)}"} for f in files],
    }


def file_name(row: AttachedFile) -> str:
    """Its name in the zip: unique by its id, readable by its name (cleaned when it was uploaded)."""
    return f"{str(row.pk)[:8]}-{row.name}"
