"""Operators (and each person, for their own memory) steer what is remembered: pin, repress and
correct any page, segment, KB fact, agent trait or trait. Deleting is memory/services/deletion.py.

Every action runs in one transaction holding the user's lock and records a lifecycle event with the
actor, what was and what is, and the reason given; the vector index follows on commit. Bad input (an
unknown kind or trait dimension, a value out of range, an empty text, another user's memory, a stale
version) is refused with MemoryInputError and changes nothing.

- Pinned: a segment is never evicted (nor one holding a pinned page); a fact or agent trait survives
  the FIFO trim; a trait keeps the score it has whatever new evidence says.
- Repressed: kept, never recalled by any policy. Its points leave the vector index (so neither a
  vector nor a BM25 search can find them) and recall's reads skip repressed rows; a repressed
  segment takes its pages with it. Unrepressing puts the points back.
- Corrected: a new version. Content ids are content, so the memory's node takes the new id and a node
  for the old version is kept, linked by a "replaces" edge; vectors and keyword terms are rebuilt;
  the old text stays in the audit trail (the event), not in recall.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from memory.adapters import configured
from memory.engine import offline
from memory.engine.long_term import normalise_fact
from memory.engine.traits import TRAITS_BY_KEY
from memory.models import DialoguePage, LifecycleEvent, MemoryNode, Segment, Tier, vector_to_bytes
from memory.services import graph
from memory.services.common import (
    MemoryInputError,
    MemoryNotFound,
    embed_or_none,
    lock_user_state,
    text_check,
    texts_check,
)
from memory.services.events import event_record
from memory.services.long_term import lpm_point
from memory.services.pages import SPEAKER_LABEL, page_point, page_row_text
from memory.services.segments import segment_point, segment_text
from memory.services.turn_input import validate_message
from memory.services.utterances import index_turns, turn_point_ids
from persona.models import AgentTrait, KnowledgeFact, UserTrait

KINDS = ("page", "segment", "fact", "agent_trait", "trait")
MODELS: dict[str, Any] = {"page": DialoguePage, "segment": Segment, "fact": KnowledgeFact,
                          "agent_trait": AgentTrait, "trait": UserTrait}
NODE_KINDS = {"page": MemoryNode.Kind.PAGE, "segment": MemoryNode.Kind.SEGMENT, "fact": MemoryNode.Kind.FACT,
              "agent_trait": MemoryNode.Kind.AGENT_TRAIT}
LABELS = {"page": "page", "segment": "segment", "fact": "KB fact", "agent_trait": "agent trait", "trait": "trait"}
MAX_TEXT = 4000
MAX_REASON = 500


@dataclass(frozen=True)
class Edit:
    """What an action did, for the caller to show."""

    kind: str
    ident: str
    action: str
    row: Any


def actor_name(actor) -> str:
    return actor.get_username() if actor is not None else "system"


def memory_get(*, user, kind: str, ident: str, for_update: bool = False):
    """One memory of the user's, or MemoryInputError (also for another user's: it is not theirs)."""
    if kind not in KINDS:
        raise MemoryInputError(f"Unknown kind of memory {kind!r}; choose one of {', '.join(KINDS)}.")
    model = MODELS[kind]
    rows = model.objects.select_for_update() if for_update else model.objects
    if kind == "trait":
        if ident not in TRAITS_BY_KEY:
            raise MemoryInputError(f"Unknown trait dimension {ident!r}.")
        row, _ = UserTrait.objects.get_or_create(user=user, key=ident)
        return rows.get(pk=row.pk) if for_update else row
    try:
        key = uuid.UUID(str(ident))
    except ValueError:
        raise MemoryNotFound(f"{ident!r} is not a {LABELS[kind]} id.") from None
    row = rows.filter(user=user, pk=key).first()
    if row is None:
        raise MemoryNotFound(f"No {LABELS[kind]} {ident} in this memory.")
    return row


def reason_clean(reason: str | None) -> str:
    """The reason an operator gave, checked."""
    reason = text_check(reason or "", field="reason").strip()
    if len(reason) > MAX_REASON:
        raise MemoryInputError(f"The reason is {len(reason)} characters long; the limit is {MAX_REASON}.")
    return reason


def _flag(*, user, kind: str, ident: str, actor, reason: str, field: str, value: bool,
          events: tuple[str, str], after_commit: Callable[[Any], None] | None = None) -> Edit:
    reason = reason_clean(reason)
    with transaction.atomic():
        lock_user_state(user.pk)
        row = memory_get(user=user, kind=kind, ident=ident, for_update=True)
        before = getattr(row, field)
        if before != value:
            setattr(row, field, value)
            row.save(update_fields=[field])
            if after_commit is not None:
                transaction.on_commit(lambda: after_commit(row))
        event_record(user_id=user.pk, kind=events[0] if value else events[1], subject_id=_subject(kind, row),
                     target=kind, actor=actor_name(actor), before=before, after=value, reason=reason)
    return Edit(kind=kind, ident=_subject(kind, row), action=events[0] if value else events[1], row=row)


def _subject(kind: str, row) -> str:
    return row.key if kind == "trait" else str(row.pk)


def memory_pin(*, user, kind: str, ident: str, actor=None, reason: str = "", pinned: bool = True) -> Edit:
    """Pin (or, with pinned=False, unpin: the undo) a memory."""
    return _flag(user=user, kind=kind, ident=ident, actor=actor, reason=reason, field="pinned", value=pinned,
                 events=(LifecycleEvent.Kind.PINNED, LifecycleEvent.Kind.UNPINNED))


def memory_repress(*, user, kind: str, ident: str, actor=None, reason: str = "", repressed: bool = True) -> Edit:
    """Repress (or, with repressed=False, unrepress: the undo) a memory: kept, never recalled."""
    sync = _points_remove if repressed else _points_restore
    return _flag(user=user, kind=kind, ident=ident, actor=actor, reason=reason, field="repressed",
                 value=repressed, events=(LifecycleEvent.Kind.REPRESSED, LifecycleEvent.Kind.UNREPRESSED),
                 after_commit=lambda row: sync(kind, row))


# ------------------------------------------------------------------ the vector index follows

def memory_point_ids(kind: str, row) -> list[str]:
    """Every point of a memory: a page's and its utterances', a segment's and its pages'."""
    if kind == "page":
        return [str(row.pk), *turn_point_ids(row)]
    if kind == "segment":
        pages = DialoguePage.objects.filter(segment=row).only("id", "user_id", "seq", "utterances")
        return [str(row.pk), *(pid for page in pages for pid in memory_point_ids("page", page))]
    if kind in ("fact", "agent_trait"):
        return [str(row.pk)]
    return []  # a trait has no vector


def _points_remove(kind: str, row) -> None:
    ids = memory_point_ids(kind, row)
    if ids:
        configured.vector_index().delete(user_id=str(row.user_id), ids=ids)


def _points_restore(kind: str, row) -> None:
    """The points a repressed memory had, back (what is still repressed by other means stays out)."""
    index = configured.vector_index()
    if kind in ("fact", "agent_trait"):
        vectors = embed_or_none([row.text])
        if vectors:
            index.upsert([lpm_point(row, vectors[0])])
        return
    if kind == "trait":
        return
    pages = [row] if kind == "page" else list(DialoguePage.objects.filter(segment=row, repressed=False))
    if kind == "segment" and row.status == Segment.Status.ACTIVE:
        index.upsert([segment_point(row)])
    live = [p for p in pages if p.embedding and p.tier != Tier.ARCHIVED
            and not (p.segment_id and Segment.objects.filter(id=p.segment_id, repressed=True).exists())]
    index.upsert([page_point(p, p.to_engine().embedding) for p in live])
    DialoguePage.objects.filter(id__in=[p.id for p in live]).update(turns_indexed=False)
    index_turns(user_id=row.user_id)


# ------------------------------------------------------------------ corrections

def memory_correct(*, user, kind: str, ident: str, version: int | None, actor=None, reason: str = "",
                   **values) -> Edit:
    """Correct a memory: a page's query/response, a segment's summary/keywords, a fact's or agent
    trait's text, a trait's score (0–1, the note required). `version` is the one the editor read;
    a different current version means someone changed it since, and the edit is refused."""
    reason = reason_clean(reason)
    correct = _CORRECTORS.get(kind)
    if correct is None:
        raise MemoryInputError(f"Unknown kind of memory {kind!r}; choose one of {', '.join(KINDS)}.")
    with transaction.atomic():
        lock_user_state(user.pk)
        row = memory_get(user=user, kind=kind, ident=ident, for_update=True)
        if version is not None and int(version) != row.version:
            raise MemoryInputError(f"This {LABELS[kind]} was changed since you read it (you edited version "
                                   f"{version}, it is at version {row.version}); reload it and try again.")
        old_cid = getattr(row, "cid", "")
        before, after, on_commit = correct(user, row, values, actor, reason)
        if after == before:
            raise MemoryInputError("Nothing to change: the correction equals what is stored.")
        row.version += 1
        row.save()
        if kind in NODE_KINDS:
            _version_node(user.pk, NODE_KINDS[kind], row)
        event_record(user_id=user.pk, kind=LifecycleEvent.Kind.CORRECTED, subject_id=_subject(kind, row),
                     target=kind, actor=actor_name(actor), before=before, after=after, reason=reason,
                     version=row.version, old_cid=old_cid, cid=getattr(row, "cid", ""))
        if on_commit is not None:
            transaction.on_commit(on_commit)
    return Edit(kind=kind, ident=_subject(kind, row), action=LifecycleEvent.Kind.CORRECTED, row=row)


def _version_node(user_id: int, node_kind: str, row) -> None:
    """The memory's node takes its new content id; the old version keeps a node of its own (its block
    as it was), which the new one `replaces` (object id "<id>@<old cid's tail>", within 64 characters)."""
    before = MemoryNode.objects.filter(user_id=user_id, kind=node_kind, object_id=str(row.pk)).first()
    current = graph.row_node_put(user_id=user_id, kind=node_kind, row=row)
    if before is not None and before.block and before.cid != current.cid:
        old = graph.node_version_keep(user_id=user_id, node=current, old_cid=before.cid, old_block=bytes(before.block))
        graph.edge_put(user_id=user_id, source=current, target=old, relation="replaces")
        row.cid = current.cid


def _text(values: dict, name: str, *, required: bool = True, limit: int = MAX_TEXT) -> str | None:
    value = values.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not text_check(value, field=name).strip():
        raise MemoryInputError(f"The {name.replace('_', ' ')} must be a non-empty text.")
    if len(value.strip()) > limit:
        raise MemoryInputError(f"The {name} is {len(value.strip())} characters long; the limit is {limit}.")
    return value.strip()


_page_corrected: list = []  # (*, user, page_id: str) -> None, called once a page's correction is committed


def page_corrected_listen(listener) -> None:
    """Call `listener(user=..., page_id=...)` after each page correction commits (memory/apps.py
    connects the facts read at the turn, which read the corrected words again)."""
    if listener not in _page_corrected:
        _page_corrected.append(listener)


def _correct_page(user, page: DialoguePage, values: dict, actor, reason: str):
    query = validate_message(values["query"]) if values.get("query") is not None else page.query
    response = _text(values, "response", required=False) if values.get("response") else page.response
    before = {"query": page.query, "response": page.response}
    old_points = memory_point_ids("page", page)
    speakers = [u.get("speaker") for u in page.utterances] or []
    page.query, page.response = query, response
    page.keywords = sorted(offline.extract_keywords(SPEAKER_LABEL.sub(" ", page_row_text(page))))
    if speakers:  # who said it stays; what was said is the correction
        page.utterances = [{"id": "", "speaker": speakers[0], "text": query},
                           *([{"id": "", "speaker": speakers[-1], "text": response}] if response else [])]
    vectors = embed_or_none([page_row_text(page)])
    if vectors:
        page.embedding = vector_to_bytes(vectors[0])
    page.turns_indexed = False
    if page.segment_id:
        Segment.objects.filter(id=page.segment_id).update(rederive=True)

    def sync() -> None:
        index = configured.vector_index()
        index.delete(user_id=str(page.user_id), ids=old_points)
        if not page.repressed and page.tier != Tier.ARCHIVED and vectors:
            index.upsert([page_point(page, vectors[0])])
            index_turns(user_id=page.user_id)
        for listener in list(_page_corrected):  # the facts the corrected words state (memory/services/facts.py)
            listener(user=user, page_id=str(page.pk))

    return before, {"query": query, "response": response}, sync


def _correct_segment(user, segment: Segment, values: dict, actor, reason: str):
    before = {"summary": segment.summary, "keywords": list(segment.keywords)}
    summary = _text(values, "summary", required=False) or segment.summary
    keywords = values.get("keywords")
    if keywords is not None:
        if isinstance(keywords, str):
            keywords = [k for k in keywords.replace(",", " ").split() if k]
        if not isinstance(keywords, list) or not all(isinstance(k, str) and k.strip() for k in keywords):
            raise MemoryInputError("Keywords must be a list of words.")
        texts_check(keywords, field="keywords")
        keywords = sorted(offline.extract_keywords(" ".join(keywords), limit=20) or {k.lower() for k in keywords})
    else:
        keywords = list(segment.keywords)
    segment.summary, segment.keywords = summary, keywords
    segment.summary_source, segment.summary_stale = "operator", False
    vectors = embed_or_none([segment_text(segment)])
    if vectors:
        segment.embedding = vector_to_bytes(vectors[0])

    def sync() -> None:
        if not segment.repressed and segment.status == Segment.Status.ACTIVE:
            configured.vector_index().upsert([segment_point(segment)])

    return before, {"summary": summary, "keywords": keywords}, sync


def _correct_entry(user, row, values: dict, actor, reason: str):
    text = _text(values, "text", limit=500)
    normalised = normalise_fact(text)[:500]
    model = type(row)
    if model.objects.filter(user=user, normalised=normalised).exclude(pk=row.pk).exists():
        raise MemoryInputError(f"Another {LABELS['fact' if model is KnowledgeFact else 'agent_trait']} already says "
                               f"this.")
    before = {"text": row.text}
    row.text, row.normalised = text, normalised
    vectors = embed_or_none([text])

    def sync() -> None:
        if vectors and not row.repressed:
            configured.vector_index().upsert([lpm_point(row, vectors[0])])

    return before, {"text": text}, sync


def _correct_trait(user, trait: UserTrait, values: dict, actor, reason: str):
    try:
        score = float(values.get("score"))
    except (TypeError, ValueError):
        raise MemoryInputError("A trait's score must be a number between 0 and 1.") from None
    if not 0.0 <= score <= 1.0:
        raise MemoryInputError(f"A trait's score must be between 0 and 1, not {score}.")
    note = (values.get("note") or reason or "").strip()
    if not note:
        raise MemoryInputError("Say why, in a note: it becomes the trait's evidence.")
    before = {"score": round(trait.score, 4)}
    trait.score = score
    trait.evidence = [{"operator": actor_name(actor), "note": note[:MAX_REASON], "weight": 1.0,
                       "score": round(score, 4)}, *trait.evidence][:5]
    return before, {"score": round(score, 4)}, None


_CORRECTORS = {"page": _correct_page, "segment": _correct_segment, "fact": _correct_entry,
               "agent_trait": _correct_entry, "trait": _correct_trait}
