"""Provenance: what a memory came from and what was derived from it, along the memory graph."""

from __future__ import annotations

from dataclasses import dataclass

from memory.engine.content_ids import trait_evidence_object_id
from memory.engine.traits import TRAITS_BY_KEY
from memory.models import (
    AttachedFile,
    DialoguePage,
    LifecycleEvent,
    MemoryEdge,
    MemoryNode,
    Recollection,
    Segment,
)
from memory.selectors.ids import uuids
from memory.selectors.log import event_log, log_derived
from memory.selectors.segment_names import segment_label_of, segment_names
from persona.models import AgentTrait, KnowledgeFact

NODE_KINDS = {"page": MemoryNode.Kind.PAGE, "segment": MemoryNode.Kind.SEGMENT, "fact": MemoryNode.Kind.FACT,
              "agent_trait": MemoryNode.Kind.AGENT_TRAIT, "trait": MemoryNode.Kind.USER_TRAIT,
              "recollection": MemoryNode.Kind.RECOLLECTION, "file": MemoryNode.Kind.FILE}


@dataclass
class ProvenanceLink:
    node: MemoryNode
    relation: str
    weight: float
    direction: str  # "from": it came from this; "to": this was derived from it
    depth: int


@dataclass
class Provenance:
    kind: str
    ident: str
    title: str
    centre: list[MemoryNode]
    links: list[ProvenanceLink]
    labels: dict[int, str]  # node pk -> a short text
    trait_keys: dict[str, str]  # a trait evidence node's object id -> its dimension's key


def provenance(*, user, kind: str, ident: str, depth: int = 2, limit: int = 60) -> Provenance | None:
    """What a memory came from and what was derived from it, `depth` edges each way."""
    centre = _centre_nodes(user, kind, ident)
    if not centre:
        return None
    links: list[ProvenanceLink] = []
    seen = {n.pk for n in centre}
    frontier = {"from": list(centre), "to": list(centre)}
    for level in range(1, depth + 1):
        for direction in ("from", "to"):
            nodes, frontier[direction] = frontier[direction], []
            if not nodes or len(links) >= limit:
                continue
            edges = (MemoryEdge.objects.filter(user=user, source__in=nodes).select_related("target")
                     if direction == "from" else
                     MemoryEdge.objects.filter(user=user, target__in=nodes).select_related("source"))
            for edge in edges[:limit]:
                other = edge.target if direction == "from" else edge.source
                if other.pk in seen:
                    continue
                seen.add(other.pk)
                links.append(ProvenanceLink(node=other, relation=edge.relation, weight=edge.weight,
                                            direction=direction, depth=level))
                frontier[direction].append(other)
    trait_keys = _trait_evidence_keys(user)
    labels = node_labels(user=user, nodes=[*centre, *(link.node for link in links)], trait_keys=trait_keys)
    return Provenance(kind=kind, ident=ident, title=_title(user, kind, ident, centre, labels), centre=centre,
                      links=links, labels=labels, trait_keys=trait_keys)


def _centre_nodes(user, kind: str, ident: str) -> list[MemoryNode]:
    if kind == "trait":  # a dimension: every piece of its evidence is a node
        page_ids = {e.payload.get("page_id") for e in event_log(user=user)
                    if e.kind == LifecycleEvent.Kind.TRAIT_UPDATED and e.subject == ident}
        object_ids = [trait_evidence_object_id(ident, str(pid)) for pid in page_ids if pid]
        return list(MemoryNode.objects.filter(user=user, kind=MemoryNode.Kind.USER_TRAIT, object_id__in=object_ids))
    node_kind = NODE_KINDS.get(kind)
    if node_kind is None:
        return []
    return list(MemoryNode.objects.filter(user=user, kind=node_kind, object_id=ident)
                or MemoryNode.objects.filter(user=user, kind=node_kind, cid=ident)
                or MemoryNode.objects.filter(user=user, kind=node_kind, aliases__cid=ident))


def node_labels(*, user, nodes: list[MemoryNode], trait_keys: dict[str, str] | None = None) -> dict[int, str]:
    """A short text per node: a page's words, a segment's keywords, a fact's text, a trait's name."""
    ids: dict[str, list[str]] = {}
    for node in nodes:  # an earlier version of a corrected memory ("<id>@<cid tail>") is labelled by its memory
        ids.setdefault(node.kind, []).append(node.object_id.partition("@")[0])
    text: dict[tuple[str, str], str] = {}
    for page in DialoguePage.objects.filter(user=user, id__in=uuids(ids.get(MemoryNode.Kind.PAGE, []))):
        text[(MemoryNode.Kind.PAGE, str(page.id))] = f"#{page.seq} {page.query[:60]}"
    names = segment_names(user=user) if ids.get(MemoryNode.Kind.SEGMENT) else {}
    for segment in Segment.objects.filter(user=user, id__in=uuids(ids.get(MemoryNode.Kind.SEGMENT, []))).only("id"):
        text[(MemoryNode.Kind.SEGMENT, str(segment.id))] = segment_label_of(names, segment.id)
    for model, kind in ((KnowledgeFact, MemoryNode.Kind.FACT), (AgentTrait, MemoryNode.Kind.AGENT_TRAIT),
                        (Recollection, MemoryNode.Kind.RECOLLECTION)):
        for row in model.objects.filter(user=user, id__in=uuids(ids.get(kind, []))):
            text[(kind, str(row.id))] = row.text[:80]
    for row in AttachedFile.objects.filter(user=user, id__in=uuids(ids.get(MemoryNode.Kind.FILE, []))):
        text[(MemoryNode.Kind.FILE, str(row.id))] = f"file {row.name} ({row.media_type})"
    trait_of = trait_keys if trait_keys is not None else _trait_evidence_keys(user)
    for object_id in ids.get(MemoryNode.Kind.USER_TRAIT, []):
        key = trait_of.get(object_id)
        text[(MemoryNode.Kind.USER_TRAIT, object_id)] = TRAITS_BY_KEY[key].name if key in TRAITS_BY_KEY else "trait"
    return {node.pk: _node_label(text, node) for node in nodes}


def _node_label(text: dict[tuple[str, str], str], node: MemoryNode) -> str:
    head, at, _ = node.object_id.partition("@")
    if at and node.kind != MemoryNode.Kind.USER_TRAIT:
        return f"earlier version of {text.get((node.kind, head), 'a memory no longer kept')}"
    return text.get((node.kind, node.object_id), "(no longer in memory)")


def _trait_evidence_keys(user) -> dict[str, str]:
    """Evidence node object id -> the trait dimension's key, from the log's trait updates."""
    return log_derived(user, "trait_keys", lambda log: {
        trait_evidence_object_id(e.subject, str(e.payload.get("page_id"))): e.subject
        for e in log if e.kind == LifecycleEvent.Kind.TRAIT_UPDATED and e.payload.get("page_id")})


def _title(user, kind: str, ident: str, centre: list[MemoryNode], labels: dict[int, str]) -> str:
    if kind == "trait":
        return TRAITS_BY_KEY[ident].name if ident in TRAITS_BY_KEY else ident
    return labels.get(centre[0].pk, ident)
