"""Writes to the memory graph: nodes by content id, weighted dependency edges. Called only from
services, inside their transactions."""

from __future__ import annotations

from memory.models import MemoryEdge, MemoryNode


def node_put(*, user_id: int, kind: str, object_id: str, cid: str) -> MemoryNode:
    node, created = MemoryNode.objects.get_or_create(
        user_id=user_id, kind=kind, object_id=str(object_id), defaults={"cid": cid}
    )
    if not created and node.cid != cid:
        node.cid = cid
        node.save(update_fields=["cid"])
    return node


def edge_put(*, user_id: int, source: MemoryNode, target: MemoryNode, relation: str,
             weight: float = 1.0) -> MemoryEdge:
    edge, _ = MemoryEdge.objects.get_or_create(
        user_id=user_id, source=source, target=target, relation=relation, defaults={"weight": weight}
    )
    return edge


def node_of(*, user_id: int, obj, kind: str) -> MemoryNode:
    """The node of a stored memory row (a page, segment, fact...), by its content id."""
    return node_put(user_id=user_id, kind=kind, object_id=str(obj.pk), cid=obj.cid or str(obj.pk))


def edge_link(*, user_id: int, source, source_kind: str, target, target_kind: str, relation: str,
              weight: float = 1.0) -> MemoryEdge:
    """An edge between the nodes of two stored rows, the nodes made when missing."""
    return edge_put(user_id=user_id, source=node_of(user_id=user_id, obj=source, kind=source_kind),
                    target=node_of(user_id=user_id, obj=target, kind=target_kind), relation=relation,
                    weight=weight)
