"""Writes to the memory graph: nodes addressed by CIDv1 with their DAG-CBOR blocks, weighted
dependency edges. Called only from services, inside their transactions.

A node's block holds its dependencies (its outgoing edges), so adding an edge gives the node a new
CID, and every node that depends on it a new block too (a Merkle DAG): `_refresh` walks up the
dependents. A CID a node had before is kept as an alias, so links already shown still resolve, and
the row the node stands for (a page's, a segment's, a fact's `cid`) follows its node.

A segment's "contains" edges (the pages it holds) are not its dependencies one by one: its block
depends on the root of a tree of fixed-size chunks that lists them (engine/page_list.py, kept by
services/page_trees.py), so a page joining re-addresses a leaf, the right spine and the segment.

Inside `readdress_once()` (maintenance, a batched import, the benchmark's bulk builder) nodes
whose content or edges change are only marked, and on the way out every marked node and what
depends on it gets its block and CID once, dependencies before dependents. The end state is
the same (a CID is a function of the node's data and its edges' targets); only the CIDs the
nodes passed through on the way are never made, so they are not kept as aliases.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection, transaction

from memory.engine.content_ids import block_with_edges, content_block, dependency_map, row_content
from memory.engine.page_list import CONTAINS, PAGES
from memory.models import AttachedFile, DialoguePage, MemoryAlias, MemoryEdge, MemoryNode, Recollection, Segment
from memory.services.page_trees import pages_reset, pages_root
from persona.models import AgentTrait, KnowledgeFact

ROW_MODELS = {MemoryNode.Kind.PAGE: DialoguePage, MemoryNode.Kind.SEGMENT: Segment,
              MemoryNode.Kind.FACT: KnowledgeFact, MemoryNode.Kind.AGENT_TRAIT: AgentTrait,
              MemoryNode.Kind.RECOLLECTION: Recollection, MemoryNode.Kind.FILE: AttachedFile}


# Inside readdress_once: the nodes marked for re-addressing, by pk, with the CID each had before.
_marked: ContextVar[dict[int, str] | None] = ContextVar("graph_marked", default=None)
CHUNK = 900  # ids per IN (...): under SQLite's oldest limit on bound variables


@contextmanager
def readdress_once() -> Iterator[None]:
    """One transaction in which graph writes only mark nodes; on the way out the marked nodes and
    their dependents get their blocks and CIDs once. Nested uses join the outermost one."""
    if _marked.get() is not None:
        yield
        return
    token = _marked.set({})
    try:
        with transaction.atomic():
            yield
            marked = _marked.get()
            if marked:  # re-addressing marks nothing new: one pass
                _readdress(marked)
    finally:
        _marked.reset(token)


def _mark(node: MemoryNode, old_cid: str) -> bool:
    marked = _marked.get()
    if marked is None:
        return False
    marked.setdefault(node.pk, old_cid)
    return True


def _chunks(ids: Iterable, size: int = CHUNK) -> Iterator[list]:
    ids = list(ids)
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


class _Row(NamedTuple):
    """What re-addressing reads and writes of a node (no model instances: a batch can hold many)."""

    pk: int
    user_id: int
    kind: str
    object_id: str
    cid: str
    block: bytes


def _readdress(marked: dict[int, str]) -> None:
    """The marked nodes and everything that depends on them, re-addressed in dependency order."""
    closure = _dependents_closure(set(marked))
    nodes, edges, held = _closure_read(closure)
    new_cid: dict[int, str] = {}
    changed: list[tuple[_Row, str, bytes, str]] = []  # (node, its new cid and block, the cid it had)
    order = {pk: edges[pk] + [("", 1.0, target, "") for _edge, target in held.get(pk, ())] for pk in closure}
    for pk in _dependency_order(closure, order):
        node = nodes[pk]
        if not node.block:  # a blockless node has no data to keep (as in _refresh)
            continue
        named = [(relation, weight, new_cid.get(target, cid)) for relation, weight, target, cid in edges[pk]]
        if node.kind == MemoryNode.Kind.SEGMENT:
            moved = [edge for edge, page in held.get(pk, ()) if new_cid.get(page, nodes[page].cid) != nodes[page].cid]
            root = pages_root(user_id=node.user_id, node_pk=pk, moved=new_cid, changed_edges=moved)
            named += [(PAGES, 1.0, root)] if root else []
        cid, block = block_with_edges(node.block, named)
        new_cid[pk] = cid
        old = marked.get(pk, node.cid)
        if cid != node.cid or block != node.block or old != node.cid:
            changed.append((node, cid, block, old))
    _readdress_write(changed)


def _dependents_closure(closure: set[int]) -> set[int]:
    """The nodes and what depends on them, transitively (plain SQL: one short query a level)."""
    edge_table = connection.ops.quote_name(MemoryEdge._meta.db_table)
    frontier = set(closure)
    with connection.cursor() as cursor:
        while frontier:
            found: set[int] = set()
            for chunk in _chunks(frontier):
                cursor.execute(f"SELECT DISTINCT source_id FROM {edge_table} "
                               f"WHERE target_id IN ({', '.join(['%s'] * len(chunk))})", chunk)
                found.update(source for (source,) in cursor.fetchall())
            frontier = found - closure
            closure |= frontier
    return closure


def _closure_read(closure: set[int]) -> tuple[dict[int, _Row], dict[int, list[tuple[str, float, int, str]]],
                                              dict[int, list[tuple[int, int]]]]:
    """The nodes, their edges with the targets' CIDs, in plain SQL (the ORM's rows cost more than
    the block they make), and the "contains" edges into the closure by source: (edge, target). A
    segment's other "contains" edges are not read: its page tree holds them."""
    node_table, edge_table = (connection.ops.quote_name(m._meta.db_table) for m in (MemoryNode, MemoryEdge))
    nodes: dict[int, _Row] = {}
    edges: dict[int, list[tuple[str, float, int, str]]] = {pk: [] for pk in closure}
    held: dict[int, list[tuple[int, int]]] = {}
    with connection.cursor() as cursor:
        for chunk in _chunks(closure, CHUNK // 2):  # the edges' read binds each id twice
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(f"SELECT id, user_id, kind, object_id, cid, block FROM {node_table} "
                           f"WHERE id IN ({marks})", chunk)
            nodes.update((row[0], _Row(*row[:5], bytes(row[5]))) for row in cursor.fetchall())
            # Two ranges around `contains` on (source, relation): `<>` would walk a segment's every entry.
            around = " UNION ALL ".join(
                f"SELECT source_id, relation, weight, target_id FROM {edge_table} "
                f"WHERE source_id IN ({marks}) AND relation {op} %s" for op in "<>")
            cursor.execute(f"SELECT e.source_id, e.relation, e.weight, e.target_id, n.cid FROM ({around}) e "
                           f"JOIN {node_table} n ON n.id = e.target_id ORDER BY n.cid",  # names follow the CIDs' order
                           [*chunk, CONTAINS, *chunk, CONTAINS])
            for source, relation, weight, target, target_cid in cursor.fetchall():
                edges[source].append((relation, weight, target, target_cid))
            cursor.execute(f"SELECT source_id, id, target_id FROM {edge_table} WHERE target_id IN ({marks}) "
                           "AND relation = %s", [*chunk, CONTAINS])
            for source, edge, target in cursor.fetchall():
                held.setdefault(source, []).append((edge, target))
    return nodes, edges, held


def _dependency_order(closure: set[int], edges: dict[int, list[tuple[str, float, int, str]]]) -> list[int]:
    """Targets before their sources (a cycle would be a bug: its nodes come in any order)."""
    order: list[int] = []
    state: dict[int, int] = {}  # 1: being visited, 2: done
    for root in sorted(closure):
        if root in state:
            continue
        stack = [(root, iter(edges[root]))]
        state[root] = 1
        while stack:
            pk, targets = stack[-1]
            for _relation, _weight, target, _cid in targets:
                if target in closure and target not in state:
                    state[target] = 1
                    stack.append((target, iter(edges[target])))
                    break
            else:
                stack.pop()
                state[pk] = 2
                order.append(pk)
    return order


def _readdress_write(changed: list[tuple[_Row, str, bytes, str]]) -> None:
    """Blocks and CIDs saved; the old CIDs kept as aliases; the rows follow their nodes (plain
    UPDATEs by id: the ORM's bulk_update builds a CASE per node and field)."""
    if not changed:
        return
    node_table = connection.ops.quote_name(MemoryNode._meta.db_table)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {node_table} SET cid = %s, block = %s WHERE id = %s",
                           [(cid, block, node.pk) for node, cid, block, _old in changed])
    moved = [(node, cid, old) for node, cid, _block, old in changed if old != cid]
    MemoryAlias.objects.bulk_create([MemoryAlias(user_id=node.user_id, node_id=node.pk, cid=old)
                                     for node, _cid, old in moved if old], ignore_conflicts=True)
    back = [(node.pk, cid) for node, cid, old in moved if old]  # a node back at a CID it had
    if back:
        alias_table = connection.ops.quote_name(MemoryAlias._meta.db_table)
        with connection.cursor() as cursor:
            cursor.executemany(f"DELETE FROM {alias_table} WHERE node_id = %s AND cid = %s", back)
    by_model: dict[type, list[tuple[str, Any]]] = {}
    for node, cid, _old in moved:
        model = ROW_MODELS.get(node.kind)
        if model is not None and "@" not in node.object_id:
            key = model._meta.pk
            by_model.setdefault(model, []).append(
                (cid, key.get_db_prep_value(key.to_python(node.object_id), connection)))
    for model, rows in by_model.items():
        table, key = connection.ops.quote_name(model._meta.db_table), model._meta.pk.column
        with connection.cursor() as cursor:
            cursor.executemany(f"UPDATE {table} SET cid = %s WHERE {connection.ops.quote_name(key)} = %s", rows)


def _edges(node: MemoryNode, moved: int | None = None) -> list[tuple[str, float, str]]:
    """The node's outgoing edges as (relation, weight, target CID): what its dependencies are named
    from; a segment's pages as its tree's root (`moved`: a node that just got a new CID)."""
    out = MemoryEdge.objects.filter(source=node).values_list("relation", "weight", "target__cid")
    edges = list(out.filter(relation__lt=CONTAINS).union(out.filter(relation__gt=CONTAINS), all=True))
    if node.kind == MemoryNode.Kind.SEGMENT:
        changed = MemoryEdge.objects.filter(source=node, relation=CONTAINS, target_id=moved).values_list(
            "id", flat=True) if moved is not None else []
        root = pages_root(user_id=node.user_id, node_pk=node.pk, changed_edges=list(changed))
        edges += [(PAGES, 1.0, root)] if root else []
    return edges


def _dependencies(node: MemoryNode) -> dict:
    return dependency_map(_edges(node))


def _set_cid(node: MemoryNode, cid: str, block: bytes, seen: set[int], *, row_follows: bool = True) -> None:
    """Give the node its new block; keep the old id as an alias; the row (unless its caller saves
    it: `row_follows` False) and the dependents follow."""
    old = node.cid
    if old == cid and bytes(node.block) == block:
        return
    node.cid, node.block = cid, block
    node.save(update_fields=["cid", "block"])
    if old == cid:
        return
    if row_follows:
        _row_cid_set(node, cid)
    if not old:
        return
    MemoryAlias.objects.get_or_create(user_id=node.user_id, node=node, cid=old)
    MemoryAlias.objects.filter(node=node, cid=cid).delete()
    for dependent in MemoryNode.objects.filter(dependencies__target=node).distinct():
        _refresh(dependent, seen, moved=node.pk)


def _row_cid_set(node: MemoryNode, cid: str) -> None:
    model = ROW_MODELS.get(node.kind)
    if model is not None and "@" not in node.object_id:
        model.objects.filter(user_id=node.user_id, pk=node.object_id).update(cid=cid)


def _refresh(node: MemoryNode, seen: set[int], *, moved: int | None = None) -> None:
    """The node's block again from its data and its edges now (`moved`: the dependency that moved)."""
    if node.pk in seen or not node.block:  # a cycle would be a bug; a blockless node has no data to keep
        return
    seen.add(node.pk)
    cid, block = block_with_edges(bytes(node.block), _edges(node, moved))
    _set_cid(node, cid, block, seen)


def node_put(*, user_id: int, kind: str, object_id: str, data: Any, timestamp: datetime | None = None,
             row_follows: bool = True) -> MemoryNode:
    """The node of a memory with this content (its dependencies: its edges), made or updated.

    The memory's row takes the node's CID, unless `row_follows` is False: its caller saves the row
    with it (row_node_put sets the row's `cid`)."""
    if _marked.get() is not None:  # the data now, the dependencies when re-addressed
        node, created = MemoryNode.objects.get_or_create(user_id=user_id, kind=kind, object_id=str(object_id))
        _mark(node, "" if created else node.cid)
        cid, block = content_block(kind=kind, data=data, timestamp=timestamp, dependencies={})
        node.block = block
        node.cid = cid if created else node.cid
        node.save(update_fields=["cid", "block"])
        return node
    # A new node has no edges yet: it is inserted with its block, not inserted and then updated.
    cid, block = content_block(kind=kind, data=data, timestamp=timestamp, dependencies={})
    node, created = MemoryNode.objects.get_or_create(user_id=user_id, kind=kind, object_id=str(object_id),
                                                     defaults={"cid": cid, "block": block})
    if created:
        if row_follows:
            _row_cid_set(node, cid)
        return node
    cid, block = content_block(kind=kind, data=data, timestamp=timestamp, dependencies=_dependencies(node))
    _set_cid(node, cid, block, {node.pk}, row_follows=row_follows)
    return node


def row_node_put(*, user_id: int, kind: str, row, row_saved: bool = False) -> MemoryNode:
    """The node of a stored row (a page, segment, fact, agent trait) from what the row says now;
    the row's `cid` takes the node's. `row_saved`: the caller saves the row (its `cid` with it)
    after this, so the row is not updated here."""
    data, timestamp = row_content(kind, row)
    node = node_put(user_id=user_id, kind=kind, object_id=str(row.pk), data=data, timestamp=timestamp,
                    row_follows=not row_saved)
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
    """A dependency of `source` on `target`; the source (and what depends on it) gets its new CID.

    Inside readdress_once: one INSERT that leaves an edge already there as it is (its weight too, as
    get_or_create does), the source marked either way: re-addressing a node whose edges did not
    change writes nothing (no CID changes in the database before then, so `source.cid` is current).
    The edge returned then has no pk."""
    if _marked.get() is not None:
        edge = MemoryEdge(user_id=user_id, source=source, target=target, relation=relation, weight=weight)
        MemoryEdge.objects.bulk_create([edge], ignore_conflicts=True)
        _mark(source, source.cid)
        return edge
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


def row_nodes_add(*, user_id: int, kind: str, rows: list) -> list[MemoryNode]:
    """Nodes for rows that have none yet, in one statement (a bulk build), inside readdress_once:
    the same blocks and CIDs row_node_put gives them once re-addressed."""
    if _marked.get() is None:
        raise RuntimeError("row_nodes_add marks its nodes for readdress_once: call it inside one")
    made = []
    for row in rows:
        data, timestamp = row_content(kind, row)
        cid, block = content_block(kind=kind, data=data, timestamp=timestamp, dependencies={})
        made.append(MemoryNode(user_id=user_id, kind=kind, object_id=str(row.pk), cid=cid, block=block))
    nodes = MemoryNode.objects.bulk_create(made)  # SQLite and PostgreSQL return the new ids
    for node in nodes:
        _mark(node, "")
    return nodes


def edges_add(*, user_id: int, edges: list[tuple[MemoryNode, MemoryNode, str, float]]) -> None:
    """New (source, target, relation, weight) edges in one statement, inside readdress_once."""
    if _marked.get() is None:
        raise RuntimeError("edges_add marks its sources for readdress_once: call it inside one")
    MemoryEdge.objects.bulk_create([MemoryEdge(user_id=user_id, source=source, target=target, relation=relation,
                                               weight=weight) for source, target, relation, weight in edges])
    for source, _target, _relation, _weight in edges:
        _mark(source, source.cid)


def edge_drop(*, user_id: int, source: MemoryNode, target: MemoryNode, relation: str) -> bool:
    """Remove a dependency of `source` on `target` (an operator undoing a decision); the source
    (and what depends on it) gets its new CID, the one it had before keeps resolving as an alias."""
    deleted, _ = MemoryEdge.objects.filter(user_id=user_id, source=source, target=target, relation=relation).delete()
    if not deleted:
        return False
    if relation == CONTAINS:
        pages_reset(node_pks=[source.pk])
    if not _mark(source, source.cid):
        source.refresh_from_db(fields=["cid", "block"])
        _refresh(source, set())
    return True


def pages_dropped(*, user_id: int, page_node_pks: Iterable[int]) -> list[int]:
    """Before pages' nodes are deleted: the segments holding them lose their stored trees (built
    whole when re-addressed); the segments' node ids, for segments_readdress after the delete."""
    segments = list(MemoryEdge.objects.filter(user_id=user_id, relation=CONTAINS, target_id__in=list(page_node_pks))
                    .values_list("source_id", flat=True).distinct())
    pages_reset(node_pks=segments)
    return segments


def nodes_readdress(*, user_id: int, node_pks: Iterable[int]) -> None:
    """Re-address these nodes (and what depends on them) from their edges now: segments whose
    trees were reset, an import's or a migration's segments put into the current block format."""
    with readdress_once():
        for node in MemoryNode.objects.filter(user_id=user_id, pk__in=list(node_pks)).only("id", "cid"):
            _mark(node, node.cid)
