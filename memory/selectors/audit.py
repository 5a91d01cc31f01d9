"""The audit trail: each operator action of the lifecycle log with the memory it acted on (who did
it and why are in the event itself: memory/services/editing.py, deletion.py)."""

from __future__ import annotations

from memory.engine.traits import TRAITS_BY_KEY
from memory.models import DialoguePage, LifecycleEvent
from memory.selectors.ids import uuids
from memory.selectors.segment_names import segment_names
from persona.models import AgentTrait, KnowledgeFact

OPERATOR_KINDS = frozenset({"pinned", "unpinned", "repressed", "unrepressed", "corrected", "deleted"})


def events_with_subjects(*, user, events) -> list[tuple[LifecycleEvent, str]]:
    """Each event of a page of the log with the text of the memory an operator acted on ("" for
    other events, and for a deleted memory: its text went with it)."""
    wanted: dict[str, set[str]] = {}
    for event in events:
        if event.kind in OPERATOR_KINDS and event.kind != "deleted":
            wanted.setdefault(str(event.payload.get("target", "")), set()).add(event.subject_id)
    texts = _memory_texts(user, wanted)
    return [(event, texts.get((str(event.payload.get("target", "")), event.subject_id), "")) for event in events]


def _memory_texts(user, wanted: dict[str, set[str]]) -> dict[tuple[str, str], str]:
    texts: dict[tuple[str, str], str] = {}
    for page in DialoguePage.objects.filter(user=user, id__in=uuids(wanted.get("page", ()))).only("id", "query"):
        texts[("page", str(page.id))] = page.query
    if wanted.get("segment"):
        names = segment_names(user=user)
        for sid in wanted["segment"]:
            if sid in names:
                texts[("segment", sid)] = f"segment “{names[sid].name or sid[:8]}”"
    for model, kind in ((KnowledgeFact, "fact"), (AgentTrait, "agent_trait")):
        for row in model.objects.filter(user=user, id__in=uuids(wanted.get(kind, ()))).only("id", "text"):
            texts[(kind, str(row.id))] = row.text
    for key in wanted.get("trait", ()):
        if key in TRAITS_BY_KEY:
            texts[("trait", key)] = f"trait {TRAITS_BY_KEY[key].name}"
    return texts
