"""Writes to the memory graph. Called only from services, inside their transactions."""

from __future__ import annotations

from memory.models import LifecycleEvent, MemoryEdge, MemoryNode


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


def event_record(*, user_id: int, kind: str, subject_id: str = "", **payload) -> LifecycleEvent:
    return LifecycleEvent.objects.create(user_id=user_id, kind=kind, subject_id=str(subject_id),
                                         payload=payload)
