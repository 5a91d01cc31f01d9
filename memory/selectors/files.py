"""Files attached to turns."""

from __future__ import annotations

from django.db.models import QuerySet

from memory.models import AttachedFile


def attached_files(*, user, page_id=None) -> QuerySet[AttachedFile]:
    """The user's files, newest first: all of them, or those attached to one page."""
    rows = AttachedFile.objects.filter(user=user).order_by("-created_at", "name")
    return rows.filter(page_id=page_id) if page_id is not None else rows


def page_attachments(*, user, page_ids) -> dict[str, list[AttachedFile]]:
    """The files of several pages, by page id (one query for a page listing)."""
    out: dict[str, list[AttachedFile]] = {}
    for row in AttachedFile.objects.filter(user=user, page_id__in=list(page_ids)).order_by("created_at", "name"):
        out.setdefault(str(row.page_id), []).append(row)
    return out
