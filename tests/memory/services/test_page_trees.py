"""A segment's pages as a page tree in the store: one page joining a segment of 2,000 re-addresses
a chunk a height and the segment; every chunk matches its CID and lists the segment's pages in
order after appends and after a removal; an archive of the format before the trees imports."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.engine.content_ids import content_block
from memory.engine.ipld import block_cid, node_decode
from memory.engine.page_list import PAGES, bound, tree_build, tree_entries
from memory.models import MemoryAlias, MemoryChunk, MemoryEdge, MemoryNode
from memory.services import graph
from memory.services.page_trees import pages_root
from memory.services.portable import memory_export, memory_import

pytestmark = [pytest.mark.usefixtures("memory_env")]
V1_ARCHIVE = Path(__file__).resolve().parents[2] / "data" / "archives" / "memory_v1.car"


def _pages(user, first: int, count: int) -> list[MemoryNode]:
    made = []
    for n in range(first, first + count):
        cid, block = content_block(kind="page", data={"query": f"page {n}", "response": "ok"},
                                   timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=n))
        made.append(MemoryNode(user=user, kind="page", object_id=str(uuid.UUID(int=n + 1)), cid=cid, block=block))
    return MemoryNode.objects.bulk_create(made)


def _segment(user, pages: int) -> MemoryNode:
    with graph.readdress_once():
        seg = graph.node_put(user_id=user.pk, kind="segment", object_id=str(uuid.UUID(int=0)),
                             data={"summary": "many", "keywords": ["pages"]})
        graph.edges_add(user_id=user.pk, edges=[(seg, page, "contains", 1.0) for page in _pages(user, 0, pages)])
    seg.refresh_from_db()
    return seg


def assert_tree_verifies(seg: MemoryNode) -> None:
    """Every chunk's CID is its block's, and the tree the segment's block links to lists its pages
    in the order they joined."""
    seg.refresh_from_db()
    chunks = dict(MemoryChunk.objects.filter(node=seg).values_list("cid", "block"))
    for cid, block in chunks.items():
        assert block_cid(bytes(block)) == cid
    assert block_cid(bytes(seg.block)) == seg.cid
    held = list(MemoryEdge.objects.filter(source=seg, relation="contains").order_by("pk")
                .values_list("weight", "target__cid"))
    root = node_decode(bytes(seg.block)).dependencies[PAGES].cid
    assert tree_entries(root, lambda cid: bytes(chunks[cid]) if cid in chunks else None) == held


def test_a_page_joining_a_segment_of_2000_readdresses_a_chunk_a_height(make_user):
    user = make_user()
    seg = _segment(user, 2000)
    chunks_before = dict(MemoryChunk.objects.filter(node=seg).values_list("cid", "block"))
    nodes_before = dict(MemoryNode.objects.filter(user=user).values_list("pk", "cid"))
    with graph.readdress_once():
        graph.edge_put(user_id=user.pk, source=seg, target=_pages(user, 2000, 1)[0], relation="contains")
    new_chunks = set(MemoryChunk.objects.filter(node=seg).values_list("cid", flat=True)) - set(chunks_before)
    moved = {pk for pk, cid in MemoryNode.objects.filter(user=user).values_list("pk", "cid")
             if nodes_before.get(pk, cid) != cid}
    assert 1 <= len(new_chunks) <= bound(2000) == 3  # the last leaf, its parent, the root
    assert moved == {seg.pk}
    assert_tree_verifies(seg)


def test_a_page_joining_costs_the_tree_four_statements_whatever_its_size(make_user):
    """The last leaf; its edges and the new one's; the chunks above it; one upsert. With nothing
    new, the stored root (three)."""
    user = make_user()
    seg = _segment(user, 2000)
    edge = MemoryEdge.objects.create(user=user, source=seg, target=_pages(user, 2000, 1)[0], relation="contains")
    with transaction.atomic():  # as graph calls it, inside re-addressing's transaction
        with CaptureQueriesContext(connection) as joined:
            root = pages_root(user_id=user.pk, node_pk=seg.pk)
        with CaptureQueriesContext(connection) as moved:  # the page that joined got its CID in the same pass
            assert pages_root(user_id=user.pk, node_pk=seg.pk, changed_edges=[edge.pk]) == root
        with CaptureQueriesContext(connection) as unchanged:
            assert pages_root(user_id=user.pk, node_pk=seg.pk) == root
    assert (len(joined), len(moved), len(unchanged)) == (4, 4, 3)
    held = MemoryEdge.objects.filter(source=seg, relation="contains").order_by("pk")
    assert root == tree_build(list(held.values_list("weight", "target__cid"))).root


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the plan asked of is SQLite's")
def test_readdressing_reads_a_segments_dependencies_without_its_pages(make_user):
    """`relation <> 'contains'` made SQLite walk every edge of the segment, one a page: the closure
    reads the two ranges around `contains` through the (source, relation, id) index instead."""
    user = make_user()
    seg = _segment(user, 200)
    with CaptureQueriesContext(connection) as done, graph.readdress_once():
        graph.edge_put(user_id=user.pk, source=seg, target=_pages(user, 200, 1)[0], relation="contains")
    [read] = [q["sql"] for q in done.captured_queries if "UNION ALL" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {read}")
        plan = [row[-1] for row in cursor.fetchall()]
    edges = sorted(step for step in plan if "memory_memoryedge" in step)
    assert edges == ["SEARCH memory_memoryedge USING INDEX edge_source_relation (source_id=? AND relation<?)",
                     "SEARCH memory_memoryedge USING INDEX edge_source_relation (source_id=? AND relation>?)"], plan


def test_the_tree_verifies_after_appends_either_way_and_after_a_removal(make_user):
    user = make_user()
    seg = _segment(user, 70)
    for page in _pages(user, 70, 3):  # re-addressed on every write
        graph.edge_put(user_id=user.pk, source=seg, target=page, relation="contains")
    assert_tree_verifies(seg)
    page = MemoryNode.objects.get(user=user, object_id=str(uuid.UUID(int=5)))
    graph.edge_put(user_id=user.pk, source=page, target=MemoryNode.objects.get(user=user, object_id=str(uuid.UUID(
        int=4))), relation="follows", weight=0.5)  # a page early in the tree gets a new CID
    assert_tree_verifies(seg)
    before = MemoryNode.objects.get(pk=seg.pk).cid
    holding = graph.pages_dropped(user_id=user.pk, page_node_pks=[page.pk])  # as forgetting a page does
    page.delete()
    graph.nodes_readdress(user_id=user.pk, node_pks=holding)
    assert_tree_verifies(seg)
    assert MemoryEdge.objects.filter(source=seg, relation="contains").count() == 72
    assert MemoryAlias.objects.filter(node=seg, cid=before).exists()


@pytest.mark.slow
def test_an_archive_of_the_format_before_page_trees_imports_and_verifies(make_user):
    old = make_user("old")
    summary = memory_import(user=old, source=io.BytesIO(V1_ARCHIVE.read_bytes()))
    assert summary.records["segment"] == 5
    segments = MemoryNode.objects.filter(user=old, kind="segment")
    assert max(MemoryEdge.objects.filter(source=s, relation="contains").count() for s in segments) == 3
    for segment in segments:
        assert_tree_verifies(segment)
        # its archived CID (the block that named every page) still resolves
        assert MemoryAlias.objects.filter(node=segment).exists()
    again = io.BytesIO()
    memory_export(user=old, out=again)
    new = make_user("new")
    memory_import(user=new, source=io.BytesIO(again.getvalue()))
    assert sorted(MemoryNode.objects.filter(user=new).values_list("kind", "cid")) == sorted(
        MemoryNode.objects.filter(user=old).values_list("kind", "cid"))
    assert sorted(MemoryChunk.objects.filter(user=new).values_list("cid", flat=True)) == sorted(
        MemoryChunk.objects.filter(user=old).values_list("cid", flat=True))
