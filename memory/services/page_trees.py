"""The stored page trees of segments (engine/page_list.py): the chunks a segment's block links to
through "pages", kept in MemoryChunk, grown as pages join. Called only from services/graph.py.

The tree's entries are the segment's "contains" edges in the order of their ids. When the
segment is re-addressed, what changed is found without reading every edge: edges after the last
leaf's last one (pages that joined), and the edges whose pages have new CIDs (named by the
caller); the tree is built again from the first leaf either touches, keeping the chunks before
it. With no stored chunks (a new segment, a removal, a migrated or imported one) it is built whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memory.engine.page_list import CONTAINS, FANOUT, PageTree, TreeError, chunk_entries, tree_build, tree_grow
from memory.models import MemoryChunk, MemoryEdge


def pages_root(*, user_id: int, node_pk: int, moved: Mapping[int, str] | None = None,
               changed_edges: Iterable[int] = ()) -> str:
    """The CID of the node's page tree as its "contains" edges are now ("" when it has none),
    its chunks saved. `moved`: new CIDs of pages not saved yet; `changed_edges`: edges whose
    pages' CIDs changed."""
    moved = moved or {}
    last = (MemoryChunk.objects.filter(node_id=node_pk, height=0).order_by("-index")
            .values_list("index", "first_edge", "last_edge").first())
    if last is None:
        return _rebuild(user_id, node_pk, moved)
    first_leaf, first_edge, last_edge = last
    dirty_edge = min(changed_edges, default=None)
    if dirty_edge is not None and dirty_edge < first_edge:  # a page of an earlier leaf moved
        earlier = (MemoryChunk.objects.filter(node_id=node_pk, height=0, first_edge__lte=dirty_edge)
                   .order_by("-first_edge").values_list("index", "first_edge").first())
        if earlier is None:
            return _rebuild(user_id, node_pk, moved)
        first_leaf, first_edge = earlier
    # The last leaf's edges and any after it in one read: what joined is what follows its last edge.
    ids, entries = _tail(user_id, node_pk, first_edge, moved)
    if not ids or ids[0] != first_edge:  # the leaf's first edge is gone
        return _rebuild(user_id, node_pk, moved)
    if dirty_edge is None and ids[-1] <= last_edge:  # no page joined, none moved
        return MemoryChunk.objects.filter(node_id=node_pk).order_by("-height").values_list("cid", flat=True)[0]
    try:
        return _grow(user_id, node_pk, first_leaf, ids, entries)
    except TreeError:  # stored chunks that do not fit what the edges say: built whole
        return _rebuild(user_id, node_pk, moved)


def pages_reset(*, node_pks: Iterable[int]) -> None:
    """Forget the stored trees (their segments lost a page): the next re-addressing builds them whole."""
    MemoryChunk.objects.filter(node_id__in=list(node_pks)).delete()


def _tail(user_id: int, node_pk: int, from_edge: int, moved: Mapping[int, str]) -> tuple[list[int], list]:
    rows = (MemoryEdge.objects.filter(user_id=user_id, source_id=node_pk, relation=CONTAINS, id__gte=from_edge)
            .order_by("id").values_list("id", "weight", "target_id", "target__cid"))
    ids, entries = [], []
    for edge, weight, target, cid in rows:
        ids.append(edge)
        entries.append((min(max(float(weight), 0.0), 1.0), moved.get(target, cid)))
    return ids, entries


def _grow(user_id: int, node_pk: int, first_leaf: int, ids: list[int], entries: list) -> str:
    """The tree again from `first_leaf`, whose edges and those after it are `ids` and `entries`."""
    wanted = {(height, first_leaf // FANOUT ** height) for height in range(1, 8)}
    stored = MemoryChunk.objects.filter(node_id=node_pk, height__gte=1).filter(
        index__in={index for _height, index in wanted}).values_list("height", "index", "block")
    prefixes = {height: chunk_entries(bytes(block))[1] for height, index, block in stored if (height, index) in wanted}
    tree = tree_grow(first_leaf=first_leaf, tail=entries, prefixes=prefixes)
    _save(user_id, node_pk, tree, first_leaf, ids)
    return tree.root


def _rebuild(user_id: int, node_pk: int, moved: Mapping[int, str]) -> str:
    ids, entries = _tail(user_id, node_pk, 0, moved)
    MemoryChunk.objects.filter(node_id=node_pk).delete()
    tree = tree_build(entries)
    _save(user_id, node_pk, tree, 0, ids)
    return tree.root


def _save(user_id: int, node_pk: int, tree: PageTree, first_leaf: int, ids: list[int]) -> None:
    rows = []
    for (height, index), (cid, block) in tree.chunks.items():
        first = last = 0
        if height == 0:
            held = ids[(index - first_leaf) * FANOUT:(index - first_leaf + 1) * FANOUT]
            first, last = held[0], held[-1]
        rows.append(MemoryChunk(user_id=user_id, node_id=node_pk, height=height, index=index, cid=cid, block=block,
                                first_edge=first, last_edge=last))
    MemoryChunk.objects.bulk_create(rows, update_conflicts=True, unique_fields=["node", "height", "index"],
                                    update_fields=["cid", "block", "first_edge", "last_edge"])
    # A tree that grew a height leaves none behind; one built whole had its rows deleted first.
