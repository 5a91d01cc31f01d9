"""Segments' names and keyword chips as the inspector shows them (memory/engine/naming.py): the most
distinctive words of each, as its pages write them, computed once per version of the user's log
(a segment's keywords change only with an event: a page joining, a correction, a deletion)."""

from __future__ import annotations

from collections import Counter

from memory.engine.naming import SegmentName, name_segments
from memory.models import DialoguePage, Segment
from memory.selectors.log import log_derived

PAGES_READ = 24  # a segment's newest pages read for its name: its keywords are made from the newest


def segment_names(*, user) -> dict[str, SegmentName]:
    """Every segment of the user's (active and evicted), by id."""
    return log_derived(user, "segment_names", lambda log: _names(user))


def _names(user) -> dict[str, SegmentName]:
    keywords = {str(sid): frozenset(words or ()) for sid, words in
                Segment.objects.filter(user=user).values_list("id", "keywords")}
    texts: dict[str, list[str]] = {sid: [] for sid in keywords}
    rows = (DialoguePage.objects.filter(user=user, segment__isnull=False).order_by("-seq")
            .values_list("segment_id", "query", "response"))
    for sid, query, response in rows.iterator(chunk_size=2000):
        kept = texts.get(str(sid))
        if kept is not None and len(kept) < PAGES_READ:
            kept.append(f"{query}\n{response}")
    frequency = Counter(k for words in keywords.values() for k in words)
    return name_segments({sid: (keywords[sid], texts[sid]) for sid in keywords},
                         document_frequency=frequency, total=len(keywords))


def segment_name(names: dict[str, SegmentName], segment) -> SegmentName:
    return names.get(str(segment.id)) or SegmentName(name="", keywords=())


def segment_label_of(names: dict[str, SegmentName], segment_id: str) -> str:
    """The segment's name and the head of its id, to name it in a list or a figure."""
    found = names.get(str(segment_id))
    return f"{(found.name if found else '') or '(no keywords)'} · {str(segment_id)[:6]}"
