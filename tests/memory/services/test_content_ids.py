"""The memory graph's ids are CIDv1 of DAG-CBOR blocks stored beside the nodes (issue 19): equal to
what an independent IPLD implementation computes, dependencies part of the content, old ids kept."""

from __future__ import annotations

import contextlib
import uuid
from datetime import UTC, datetime, timedelta

import dag_cbor
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from multiformats import CID, multihash

from memory.engine.content_ids import content_block, content_id, dependency_map
from memory.engine.ipld import node_decode, node_verify
from memory.engine.page_list import with_page_tree
from memory.models import MemoryAlias, MemoryEdge, MemoryNode
from memory.selectors.memories import memory_by_cid
from memory.services import graph
from memory.services.common import MemoryInputError
from memory.services.pages import page_start
from memory.services.remember import memory_add
from memory.services.turns import page_complete
from persona.models import KnowledgeFact, UserProfile

pytestmark = pytest.mark.usefixtures("memory_env")


def independent_cid(node: dict) -> str:
    """dag-cbor + multiformats (pure Python, written apart from libipld): dag-cbor codec, sha2-256."""
    return str(CID("base32", 1, "dag-cbor", multihash.digest(dag_cbor.encode(node), "sha2-256")))


def say(user, text: str, response: str = "Noted."):
    return page_complete(page=page_start(user=user, query=text), response=response, reply_model="test")


def node_of(user, kind, row) -> MemoryNode:
    return MemoryNode.objects.get(user=user, kind=kind, object_id=str(row.pk))


def test_a_stored_page_is_addressed_by_the_cid_an_independent_library_computes(make_user):
    user = make_user()
    page = say(user, "I adopted a puppy named Biscuit.", "Congratulations!")
    page.refresh_from_db()
    node = node_of(user, MemoryNode.Kind.PAGE, page)
    expected = independent_cid({"kind": "page", "timestamp": page.timestamp.timestamp(), "dependencies": {},
                                "data": {"query": "I adopted a puppy named Biscuit.", "response": "Congratulations!"}})
    assert node.cid == page.cid == expected
    assert len(expected) == 59 and expected.startswith("bafyrei")
    assert dag_cbor.decode(bytes(node.block))["data"]["query"] == "I adopted a puppy named Biscuit."
    node_verify(cid=node.cid, block=bytes(node.block))


def test_a_new_edge_readdresses_the_node_and_its_dependents_and_old_ids_still_resolve(make_user):
    user = make_user()
    first, second = say(user, "My sister Lena lives in Berlin."), say(user, "She is a violinist.")
    fact = KnowledgeFact.objects.create(user=user, text="Lena is a violinist", normalised="lena is a violinist")
    fact_node = graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.FACT, row=fact)
    graph.edge_link(user_id=user.pk, source=fact, source_kind=MemoryNode.Kind.FACT, target=second,
                    target_kind=MemoryNode.Kind.PAGE, relation="stated_in", weight=0.5)
    second.refresh_from_db()
    before = second.cid

    graph.edge_link(user_id=user.pk, source=second, source_kind=MemoryNode.Kind.PAGE, target=first,
                    target_kind=MemoryNode.Kind.PAGE, relation="recalls", weight=0.75)

    first.refresh_from_db()
    second.refresh_from_db()
    fact.refresh_from_db()
    fact_node.refresh_from_db()
    assert second.cid != before
    page_node = node_of(user, MemoryNode.Kind.PAGE, second)
    decoded = node_verify(cid=page_node.cid, block=bytes(page_node.block))
    assert decoded.dependencies["recalls"] == (0.75, first.cid)
    # The fact's block names the page's new CID, so its own id changed too (a Merkle DAG).
    assert node_decode(bytes(fact_node.block)).dependencies["stated_in"] == (0.5, second.cid)
    assert fact.cid == fact_node.cid == content_id("fact", {"text": "Lena is a violinist"},
                                                    dependencies={"stated_in": (0.5, second.cid)})
    assert memory_by_cid(user=user, cid=before)[1].pk == second.pk  # the id shown before resolves
    assert memory_by_cid(user=make_user(), cid=before) is None


def _fact_on_pages(user, pages, text: str) -> KnowledgeFact:
    """A fact stated in the second page, the second page recalling the first (a chain of three)."""
    fact = KnowledgeFact.objects.create(user=user, text=text, normalised=text.lower())
    graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.FACT, row=fact)
    graph.edge_link(user_id=user.pk, source=fact, source_kind=MemoryNode.Kind.FACT, target=pages[1],
                    target_kind=MemoryNode.Kind.PAGE, relation="stated_in", weight=0.5)
    graph.edge_link(user_id=user.pk, source=pages[1], source_kind=MemoryNode.Kind.PAGE, target=pages[0],
                    target_kind=MemoryNode.Kind.PAGE, relation="recalls", weight=0.75)
    graph.node_put(user_id=user.pk, kind=MemoryNode.Kind.PAGE, object_id=str(pages[0].pk),
                   data={"query": "edited", "response": "ok"}, timestamp=pages[0].timestamp)
    return fact


def test_readdressing_once_gives_the_cids_of_readdressing_every_write(make_user, memory_env):
    # the facts are the test's own: none read at the turns (their times differ between the users)
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "FACTS_AT_TURN": False}
    eager, once = make_user(), make_user()
    for user in (eager, once):  # one name: a page's vector is its utterances', which name their speaker
        UserProfile.objects.create(user=user, name="Sam")
    same_time = [say(eager, "My sister Lena lives in Berlin."), say(eager, "She is a violinist.")]
    pages = [say(once, p.query, p.response) for p in same_time]
    for page, twin in zip(pages, same_time, strict=True):  # the same content, so the same CIDs
        type(page).objects.filter(pk=page.pk).update(timestamp=twin.timestamp)
        page.refresh_from_db()
        graph.row_node_put(user_id=once.pk, kind=MemoryNode.Kind.PAGE, row=page)
        page.save(update_fields=["cid"])
    eager_fact = _fact_on_pages(eager, same_time, "Lena is a violinist")
    shown = [p.cid for p in pages]
    with graph.readdress_once():
        fact = _fact_on_pages(once, pages, "Lena is a violinist")
        marked_cid = KnowledgeFact.objects.get(pk=fact.pk).cid

    def state(user):
        return sorted((n.kind, n.cid, bytes(n.block)) for n in MemoryNode.objects.filter(user=user))

    assert state(once) == state(eager)
    assert KnowledgeFact.objects.get(pk=fact.pk).cid == KnowledgeFact.objects.get(pk=eager_fact.pk).cid != marked_cid
    for page in pages:
        page.refresh_from_db()
        assert page.cid == node_of(once, MemoryNode.Kind.PAGE, page).cid
    # the ids the nodes had before the batch still resolve; the ones between were never made
    assert memory_by_cid(user=once, cid=marked_cid) is None
    assert [memory_by_cid(user=once, cid=cid)[1].pk for cid in shown] == [p.pk for p in pages]
    assert MemoryAlias.objects.filter(user=once).count() < MemoryAlias.objects.filter(user=eager).count()


def _segment_grows(user, pages: int, *, once: bool) -> tuple[MemoryNode, str]:
    """A segment node of `pages` page nodes, then one page more and the segment's data changed (a
    page moving in) while one of its pages gets an edge (its CID changes under the segment)."""
    def page(n):
        return graph.node_put(user_id=user.pk, kind=MemoryNode.Kind.PAGE, object_id=str(uuid.UUID(int=n + 1)),
                              data={"query": f"page {n}", "response": "ok"},
                              timestamp=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=n))

    def segment(summary):
        return graph.node_put(user_id=user.pk, kind=MemoryNode.Kind.SEGMENT, object_id=str(uuid.UUID(int=0)),
                              data={"summary": summary, "keywords": ["pages"]})

    batch = graph.readdress_once if once else contextlib.nullcontext
    with batch():
        seg, members = segment("first"), [page(n) for n in range(pages)]
        for member in members:
            graph.edge_put(user_id=user.pk, source=seg, target=member, relation="contains")
    grown_from = MemoryNode.objects.get(pk=seg.pk).cid
    with batch():
        seg = segment("grown")
        graph.edge_put(user_id=user.pk, source=seg, target=page(pages), relation="contains")
        graph.edge_put(user_id=user.pk, source=members[3], target=members[4], relation="follows", weight=0.5)
    seg.refresh_from_db()
    return seg, grown_from


def test_a_grown_segment_readdressed_once_has_the_cid_built_from_scratch(make_user):
    once, eager = make_user(), make_user()
    seg, grown_from = _segment_grows(once, 40, once=True)
    edges = list(MemoryEdge.objects.filter(source=seg).order_by("pk").values_list("relation", "weight", "target__cid"))
    assert len(edges) == 41
    scratch = content_block(kind="segment", data={"summary": "grown", "keywords": ["pages"]},
                            dependencies=dependency_map(with_page_tree(edges)))
    assert (seg.cid, bytes(seg.block)) == scratch
    assert _segment_grows(eager, 40, once=False)[0].cid == seg.cid  # re-addressed on every write

    def state(user):
        return sorted((n.kind, n.cid, bytes(n.block)) for n in MemoryNode.objects.filter(user=user))

    assert state(once) == state(eager)
    # the id it had before the page joined resolves; the ones between were never made
    assert list(MemoryAlias.objects.filter(node=seg).values_list("cid", flat=True)) == [grown_from]


def test_readdressing_once_rolls_back_with_the_writes_it_follows(make_user):
    user = make_user()
    pages = [say(user, "I collect maps."), say(user, "Mostly of Lisbon.")]
    before = sorted(MemoryNode.objects.filter(user=user).values_list("cid", flat=True))
    edges = sorted(MemoryEdge.objects.filter(user=user).values_list("source", "relation", "target"))
    with pytest.raises(RuntimeError), graph.readdress_once():
        graph.edge_link(user_id=user.pk, source=pages[1], source_kind=MemoryNode.Kind.PAGE, target=pages[0],
                        target_kind=MemoryNode.Kind.PAGE, relation="recalls", weight=0.9)
        raise RuntimeError("a crash before the end of the batch")
    assert sorted(MemoryNode.objects.filter(user=user).values_list("cid", flat=True)) == before
    # what was there stays (maintenance may have chained the two pages), the edge made is gone
    assert sorted(MemoryEdge.objects.filter(user=user).values_list("source", "relation", "target")) == edges


def test_repeated_relations_get_names_from_content_alone(make_user):
    user = make_user()
    pages = [say(user, f"Page number {n} about gardening.") for n in range(3)]
    fact = KnowledgeFact.objects.create(user=user, text="gardens", normalised="gardens")
    for page in pages:
        graph.edge_link(user_id=user.pk, source=fact, source_kind=MemoryNode.Kind.FACT, target=page,
                        target_kind=MemoryNode.Kind.PAGE, relation="stated_in")
    node = node_decode(bytes(node_of(user, MemoryNode.Kind.FACT, fact).block))
    cids = sorted(MemoryNode.objects.filter(user=user, kind="page").values_list("cid", flat=True))
    assert dict(node.dependencies) == {f"stated_in/{i}": (1.0, cid) for i, cid in enumerate(cids, start=1)}


def test_the_migration_gives_existing_nodes_cids_and_keeps_their_old_ids(make_user):
    executor = MigrationExecutor(connection)
    before = [("memory", "0010_api_tokens"), ("persona", "0002_steering")]
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    user = apps.get_model("auth", "User").objects.create(username="legacy")
    page_model, node_model = apps.get_model("memory", "DialoguePage"), apps.get_model("memory", "MemoryNode")
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    page = page_model.objects.create(user=user, seq=1, query="Lena plays the violin.", response="Lovely.",
                                     status="complete", timestamp=when, cid="a" * 64)
    fact = apps.get_model("persona", "KnowledgeFact").objects.create(user=user, text="Lena plays violin",
                                                                     normalised="lena plays violin", cid="b" * 64)
    page_node = node_model.objects.create(user=user, kind="page", object_id=str(page.pk), cid="a" * 64)
    fact_node = node_model.objects.create(user=user, kind="fact", object_id=str(fact.pk), cid="b" * 64)
    apps.get_model("memory", "MemoryEdge").objects.create(user=user, source=fact_node, target=page_node,
                                                           relation="stated_in", weight=1.0)
    try:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate([("memory", "0011_memoria_cids")])
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    page_cid = independent_cid({"kind": "page", "timestamp": when.timestamp(), "dependencies": {},
                                "data": {"query": "Lena plays the violin.", "response": "Lovely."}})
    fact_cid = independent_cid({"kind": "fact", "data": {"text": "Lena plays violin"},
                                "dependencies": {"stated_in": [1.0, CID.decode(page_cid)]}})
    nodes = {n.kind: n for n in MemoryNode.objects.filter(user_id=user.pk)}
    assert nodes["page"].cid == page_cid and nodes["fact"].cid == fact_cid  # dependencies first
    assert set(MemoryAlias.objects.filter(user_id=user.pk).values_list("cid", flat=True)) == {"a" * 64, "b" * 64}
    assert KnowledgeFact.objects.get(pk=fact.pk).cid == nodes["fact"].cid
    assert memory_by_cid(user=nodes["page"].user, cid="a" * 64)[0] == "page"


@pytest.mark.parametrize("dependencies, message", [
    ({"a/b": [1.0, "{cid}"]}, "without '/'"),
    ({"about": [1.5, "{cid}"]}, "weight must be a number in \\[0, 1\\]"),
    ({"about": [0.5, "bafyreigdmqpykrgxyaxtlafqpqhzrb7qy2rh75nldvfd4tucqmdtuo7kxq"]}, "no memory with content id"),
    ({"about": "{cid}"}, "expected \\[weight, content id\\]"),
])
def test_add_memory_refuses_bad_dependencies_and_writes_nothing(make_user, dependencies, message):
    user = make_user()
    first = say(user, "The old maps of Lisbon show the city before 1755.")  # no fact of the person
    first.refresh_from_db()
    filled = {name: [v.replace("{cid}", first.cid) if isinstance(v, str) else v for v in value]
              if isinstance(value, list) else value.replace("{cid}", first.cid) for name, value in dependencies.items()}
    with pytest.raises(MemoryInputError, match=message):
        memory_add(user=user, text="Depends on something.", dependencies=filled)
    assert user.pages.count() == 1 and MemoryNode.objects.filter(user=user).count() == 1
