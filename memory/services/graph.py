"""Writes to the memory graph: nodes addressed by CIDv1 with their DAG-CBOR blocks, weighted
dependency edges. Called only from services, inside their transactions.

A node's block holds its dependencies (its outgoing edges), so adding an edge gives the node a new
CID, and every node that depends on it a new block too (a Merkle DAG): `_refresh` walks up the
dependents. A CID a node had before is kept as an alias, so links already shown still resolve, and
the row the node stands for (a page's, a segment's, a fact's `cid`) follows its node.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.engine.content_ids import block_with_dependencies, content_block, dependency_map, row_content
from memory.models import AttachedFile, DialoguePage, MemoryAlias, MemoryEdge, MemoryNode, Recollection, Segment
from persona.models import AgentTrait, KnowledgeFact

ROW_MODELS = {MemoryNode.Kind.PAGE: DialoguePage, MemoryNode.Kind.SEGMENT: Segment,
              MemoryNode.Kind.FACT: KnowledgeFact, MemoryNode.Kind.AGENT_TRAIT: AgentTrait,
              MemoryNode.Kind.RECOLLECTION: Recollection, MemoryNode.Kind.FILE: AttachedFile}


def _dependencies(node: MemoryNode) -> dict:
    edges = MemoryEdge.objects.filter(source=node).values_list("relation", "weight", "target__cid")
    return dependency_map(edges)


def _set_cid(node: MemoryNode, cid: str, block: bytes, seen: set[int]) -> None:
    """Give the node its new block; keep the old id as an alias; the row and the dependents follow."""
    old = node.cid
    if old == cid and bytes(node.block) == block:
        return
    node.cid, node.block = cid, block
    node.save(update_fields=["cid", "block"])
    if old == cid:
        return
    model = ROW_MODELS.get(node.kind)
    if model is not None and "@" not in node.object_id:
        model.objects.filter(user_id=node.user_id, pk=node.object_id).update(cid=cid)
    if not old:
        return
    MemoryAlias.objects.get_or_create(user_id=node.user_id, node=node, cid=old)
    MemoryAlias.objects.filter(node=node, cid=cid).delete()
    for dependent in MemoryNode.objects.filter(dependencies__target=node).distinct():
        _refresh(dependent, seen)


def _refresh(node: MemoryNode, seen: set[int]) -> None:
    """The node's block again from its data and its edges now."""
    if node.pk in seen or not node.block:  # a cycle would be a bug; a blockless node has no data to keep
        return
    seen.add(node.pk)
    cid, block = block_with_dependencies(bytes(node.block), _dependencies(node))
    _set_cid(node, cid, block, seen)


def node_put(*, user_id: int, kind: str, object_id: str, data: Any, timestamp: datetime | None = None) -> MemoryNode:
    """The node of a memory with this content (its dependencies: its edges), made or updated."""
    node, created = MemoryNode.objects.get_or_create(user_id=user_id, kind=kind, object_id=str(object_id))
    cid, block = content_block(kind=kind, data=data, timestamp=timestamp,
                               dependencies={} if created else _dependencies(node))
    _set_cid(node, cid, block, {node.pk})
    return node


def row_node_put(*, user_id: int, kind: str, row) -> MemoryNode:
    """The node of a stored row (a page, segment, fact, agent trait) from what the row says now;
    the row's `cid` takes the node's."""
    data, timestamp = row_content(kind, row)
    node = node_put(user_id=user_id, kind=kind, object_id=str(row.pk), data=data, timestamp=timestamp)
    row.cid = node.cid
    return node


def node_version_keep(*, user_id: int, node: MemoryNode, old_cid: str, old_block: bytes) -> MemoryNode:
    """A node for an earlier version of a memory (object id "<id>@<old cid's tail>"): its block as it
    was, so links to it still resolve and the new version can `replace` it."""
    old, _ = MemoryNode.objects.get_or_create(user_id=user_id, kind=node.kind,
                                              object_id=f"{node.object_id}@{old_cid[-16:]}",
                                              defaults={"cid": old_cid, "block": old_block})
    return old


def node_of(*, user_id: int, obj, kind: str) -> MemoryNode:
    """The node of a stored memory row (a page, segment, fact...), made from the row when missing."""
    node = MemoryNode.objects.filter(user_id=user_id, kind=kind, object_id=str(obj.pk)).first()
    return node if node is not None and node.block else row_node_put(user_id=user_id, kind=kind, row=obj)


def edge_put(*, user_id: int, source: MemoryNode, target: MemoryNode, relation: str,
             weight: float = 1.0) -> MemoryEdge:
    """A dependency of `source` on `target`; the source (and what depends on it) gets its new CID."""
    edge, created = MemoryEdge.objects.get_or_create(
        user_id=user_id, source=source, target=target, relation=relation, defaults={"weight": weight}
    )
    if created:
        source.refresh_from_db(fields=["cid", "block"])
        _refresh(source, set())
        source.refresh_from_db(fields=["cid", "block"])
    return edge


def edge_link(*, user_id: int, source, source_kind: str, target, target_kind: str, relation: str,
              weight: float = 1.0) -> MemoryEdge:
    """An edge between the nodes of two stored rows, the nodes made when missing."""
    edge = edge_put(user_id=user_id, source=node_of(user_id=user_id, obj=source, kind=source_kind),
                    target=node_of(user_id=user_id, obj=target, kind=target_kind), relation=relation,
                    weight=weight)
    source.cid = edge.source.cid
    return edge
