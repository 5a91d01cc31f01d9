"""`bench scale`'s bulk-built store is the store the product would have built: its graph is the
product's (CIDv1 nodes whose blocks name their edges), a page written on top of it goes through
the real write path without an error, and a write that fails stops the benchmark."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from memory.adapters import configured
from memory.benchmarks import common, scale
from memory.engine.content_ids import dependency_map
from memory.engine.ipld import block_cid, node_decode
from memory.engine.page_list import with_page_tree
from memory.models import DialoguePage, MemoryEdge, MemoryNode, PageStatus, Segment, Tier
from memory.services.graph import ROW_MODELS


def _built(env, pages: int = 200) -> scale.StoreBuilder:
    return scale.store_built(env, pages, pool=48, segment_pages=20)


def assert_graph_is_the_products(user) -> None:
    """Every node's CID is its block's; its block's dependencies are its edges (a segment's pages
    through their tree); rows carry it."""
    nodes = list(MemoryNode.objects.filter(user=user))
    assert nodes
    cids = {node.pk: node.cid for node in nodes}
    edges: dict[int, list] = {}
    for source, relation, weight, target in MemoryEdge.objects.filter(user=user).order_by("pk").values_list(
            "source_id", "relation", "weight", "target_id"):
        edges.setdefault(source, []).append((relation, weight, cids[target]))
    for node in nodes:
        assert node.cid == block_cid(bytes(node.block))
        assert node_decode(bytes(node.block)).dependencies == dependency_map(with_page_tree(edges.get(node.pk, [])))
        model = ROW_MODELS.get(node.kind)
        if model is not None:
            assert model.objects.get(pk=node.object_id).cid == node.cid


@pytest.mark.slow
def test_a_page_written_on_a_bulk_built_store_goes_through_the_real_write_path(memory_env):
    with common.bench_env(isolate_db=False) as env:
        builder = _built(env)
        user = builder.user
        assert_graph_is_the_products(user)
        assert MemoryEdge.objects.filter(user=user, relation="contains").count() == builder.mtm
        before = set(Segment.objects.filter(user=user).values_list("cid", flat=True))

        result = scale.measure_writes(user, builder.sona, 1, seed=7, show=False)

        assert set(result["variants"]) == {scale.BEFORE_WRITE, scale.WRITE}
        assert all(v["n"] == 1 and v["pages_per_s"] > 0 for v in result["variants"].values())
        assert result["speedup"] > 0
        # a page embeds its text, its utterances and the segment it joins: the ceiling is above the rate
        for measured in (*result["variants"].values(), result["burst"]):
            assert measured["embeddings"]["texts"] >= 2
            assert measured["embeddings"]["ceiling_per_s"] >= measured["pages_per_s"]
        # and one page more as a burst: stored, then one maintenance run that indexed and moved it
        assert result["burst"]["pages"] == 1 and result["burst"]["pages_per_s"] > 0
        written = DialoguePage.objects.filter(user=user, reply_model="bench")
        assert written.count() == 3 and all(p.status == PageStatus.COMPLETE and p.turns_indexed for p in written)
        # each write pushed the oldest STM page into a segment, which got a new CID
        assert DialoguePage.objects.filter(user=user, tier=Tier.MTM).count() == builder.mtm + 3
        assert set(Segment.objects.filter(user=user).values_list("cid", flat=True)) != before
        assert_graph_is_the_products(user)
        assert configured.vector_index().count(user_id=str(user.pk)) > 0


def test_a_failed_write_stops_the_benchmark_with_no_rate(memory_env, make_user, monkeypatch):
    def broken(**kwargs):
        raise ValueError("not a CID: 'deadbeef'")

    monkeypatch.setattr(scale, "maintenance_run", broken)
    user = make_user()
    from memory.models import Sona

    sona = Sona.objects.create(user=user, name="assistant", profile="", is_default=True)
    with pytest.raises(CommandError, match=r"write path failed on page 1 of 4 .*not a CID.*no write rate"):
        scale.measure_writes(user, sona, 2, seed=7, show=False)


def test_a_benchmark_write_stores_a_page_as_a_chat_turn_does(memory_env, make_user):
    """The page's text embedded alone and stored with the reply; its utterances are left to
    maintenance, which embeds and indexes them, as after a chat turn (memory/services/turns.py)."""
    from memory.models import Sona
    from memory.services.maintenance import maintenance_run
    from memory.services.pages import page_text

    user = make_user()
    sona = Sona.objects.create(user=user, name="assistant", profile="", is_default=True)
    message = ("I adopted a grey cat called Miso last week.", "Miso is a lovely name for a cat.")
    with common.embeddings_metered() as meter:
        page = scale.page_write(user, sona, message)
    assert (meter.calls, meter.texts) == (1, 1)  # the page's own text, alone
    page.refresh_from_db()
    assert page.status == PageStatus.COMPLETE and page.reply_model == "bench" and page.response == message[1]
    assert page.embedding and not page.turns_indexed
    expected = configured.embedder().embed([page_text(*message, "bench")])[0]
    assert list(page.to_engine().embedding) == pytest.approx(expected, abs=1e-6)

    maintenance_run(user_id=user.pk)

    page.refresh_from_db()
    assert page.turns_indexed
    found = configured.vector_index().search(user_id=str(user.pk), vector=expected, limit=10, kind="turn")
    assert {hit.payload["page_id"] for hit in found} == {str(page.id)}
