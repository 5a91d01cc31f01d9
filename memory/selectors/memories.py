"""One user's memories by kind (pages, segments, facts, agent traits, traits): lists, one by id or
content id, and one as its action bar shows it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from memory.engine.traits import TRAITS_BY_KEY
from memory.models import DialoguePage, MemoryNode, Segment
from memory.selectors.ids import uuids
from persona.models import AgentTrait, KnowledgeFact, UserTrait

MEMORY_MODELS: dict[str, Any] = {"page": DialoguePage, "segment": Segment, "fact": KnowledgeFact,
                                 "agent_trait": AgentTrait, "trait": UserTrait}


NODE_KIND_TO_KIND = {"page": "page", "segment": "segment", "fact": "fact", "agent_trait": "agent_trait"}


def memories(*, user, kind: str, tier: str = "", query: str = "", pinned: bool | None = None,
             repressed: bool | None = None) -> QuerySet:
    """One kind of the user's memories, newest first, filtered; pages by tier and words."""
    model = MEMORY_MODELS[kind]
    rows = model.objects.filter(user=user)
    if kind == "page":
        rows = rows.defer("embedding").order_by("-seq")
        if tier:
            rows = rows.filter(tier=tier)
        if query:
            rows = rows.filter(Q(query__icontains=query) | Q(response__icontains=query))
    elif kind == "segment":
        rows = rows.defer("embedding").order_by("-created_at")
        if query:
            rows = rows.filter(Q(summary__icontains=query) | Q(keywords__icontains=query))
    elif kind == "trait":
        rows = rows.order_by("-score", "key")
        if query:
            rows = rows.filter(key__icontains=query)
    else:
        rows = rows.order_by("-created_at")
        if query:
            rows = rows.filter(text__icontains=query)
    if pinned is not None:
        rows = rows.filter(pinned=pinned)
    if repressed is not None:
        rows = rows.filter(repressed=repressed)
    return rows


def memory_one(*, user, kind: str, ident: str):
    """One memory of the user's by kind and id (a trait by its dimension's key), or None."""
    model = MEMORY_MODELS.get(kind)
    if model is None:
        return None
    if kind == "trait":
        return UserTrait.objects.filter(user=user, key=ident).first()
    try:
        key = uuid.UUID(str(ident))
    except ValueError:
        return None
    return model.objects.filter(user=user, pk=key).first()


def memory_by_cid(*, user, cid: str) -> tuple[str, Any] | None:
    """The memory with this content id (or whose earlier version had it): (kind, row)."""
    node = MemoryNode.objects.filter(user=user, cid=cid).exclude(kind="user_trait").first()
    if node is None:  # an id it had before: from before CIDv1, or before its dependencies grew
        node = MemoryNode.objects.filter(user=user, aliases__cid=cid).exclude(kind="user_trait").first()
    if node is None:
        return None
    kind = NODE_KIND_TO_KIND[node.kind]
    row = memory_one(user=user, kind=kind, ident=node.object_id.split("@", 1)[0])
    return (kind, row) if row is not None else None


def memory_node_by_cid(*, user, cid: str) -> MemoryNode | None:
    """The graph node with this content id (or one it had before), with its block."""
    return (MemoryNode.objects.filter(user=user, cid=cid).first()
            or MemoryNode.objects.filter(user=user, aliases__cid=cid).first())


@dataclass(frozen=True)
class MemoryHandle:
    """One memory as its action bar and correction form show it."""

    kind: str
    ident: str
    label: str
    pinned: bool
    repressed: bool
    version: int
    values: dict[str, Any]  # what a correction starts from


def memory_for_actions(*, user, kind: str, ident: str) -> MemoryHandle | None:
    model = {"page": DialoguePage, "segment": Segment, "fact": KnowledgeFact, "agent_trait": AgentTrait,
             "trait": UserTrait}.get(kind)
    if model is None:
        return None
    if kind == "trait":
        if ident not in TRAITS_BY_KEY:
            return None
        row = UserTrait.objects.filter(user=user, key=ident).first() or UserTrait(user=user, key=ident)
    else:
        found = uuids([ident])
        row = model.objects.filter(user=user, pk=found[0]).first() if found else None
    return None if row is None else handle_of(kind, row)


def handle_of(kind: str, row) -> MemoryHandle:
    """The action bar's view of a row already read (a list shows many without a query each)."""
    values = {"page": lambda r: {"query": r.query, "response": r.response},
              "segment": lambda r: {"summary": r.summary, "keywords": " ".join(r.keywords)},
              "fact": lambda r: {"text": r.text}, "agent_trait": lambda r: {"text": r.text},
              "trait": lambda r: {"score": round(r.score, 4), "note": ""}}[kind](row)
    label = {"page": lambda r: r.query[:80], "segment": lambda r: r.label, "fact": lambda r: r.text[:80],
             "agent_trait": lambda r: r.text[:80], "trait": lambda r: TRAITS_BY_KEY[r.key].name}[kind](row)
    return MemoryHandle(kind=kind, ident=row.key if kind == "trait" else str(row.pk), label=label,
                        pinned=row.pinned, repressed=row.repressed, version=row.version, values=values)
