"""Provenance pages of corrected memories: an earlier version keeps a node of its own ("<id>@<cid
tail>"), which the segment's page and those of what was derived from it link to, before and after
an export and import."""

from __future__ import annotations

import io
import json

import pytest

from memory.models import MemoryNode, Segment
from memory.services import graph
from memory.services.portable import memory_export, memory_import
from memory.services.tokens import token_create
from memory.services.turns import turn_run
from persona.models import AgentTrait, KnowledgeFact

pytestmark = pytest.mark.usefixtures("memory_env")


def derived(user, segment: Segment, model, text: str, relation: str):
    row = model.objects.create(user=user, text=text, normalised=text.lower(), segment=segment)
    node = graph.row_node_put(user_id=user.pk, kind=model.__name__ == "KnowledgeFact" and "fact" or "agent_trait",
                              row=row)
    graph.edge_put(user_id=user.pk, source=node, target=graph.node_of(user_id=user.pk, obj=segment, kind="segment"),
                   relation=relation)
    return row


@pytest.fixture
def corrected(make_user, client):
    """A segment, a fact and an agent trait derived from it, then the segment corrected over the API."""
    user = make_user("owner")
    for n in range(9):
        turn_run(user=user, message=f"Juggling flaming torches is an old circus art, trick {n}.")  # no fact
    segment = Segment.objects.filter(user=user).first()
    fact = derived(user, segment, KnowledgeFact, "User juggles torches", "extracted_from")
    trait = derived(user, segment, AgentTrait, "Assistant suggests a fire blanket", "evidence_from")
    _, token = token_create(user=user, name="t")
    segment.refresh_from_db()
    response = client.post(f"/api/memory/memories/segment/{segment.id}/correct",
                           json.dumps({"version": segment.version, "summary": "Juggling, corrected."}),
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    assert MemoryNode.objects.filter(user=user, kind="segment", object_id__startswith=f"{segment.id}@").exists()
    return user, segment, fact, trait


def pages(username: str, segment_id, fact_id, trait_id) -> list[str]:
    return [f"/inspector/{username}/provenance/segment/{segment_id}/",
            f"/inspector/{username}/provenance/fact/{fact_id}/",
            f"/inspector/{username}/provenance/agent_trait/{trait_id}/",
            f"/inspector/{username}/mtm/{segment_id}/"]


def test_provenance_of_a_corrected_segment_and_what_came_of_it_shows_the_earlier_version(client, corrected):
    user, segment, fact, trait = corrected
    client.force_login(user)
    for url in pages("owner", segment.id, fact.id, trait.id)[:3]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"earlier version of" in response.content, url
    old = MemoryNode.objects.get(user=user, kind="segment", object_id__startswith=f"{segment.id}@")
    shown = client.get(f"/inspector/owner/provenance/segment/{old.object_id}/")
    assert shown.status_code == 200 and b"replaces" in shown.content


def test_the_earlier_version_survives_export_and_import(client, corrected, make_user):
    user, segment, *_ = corrected
    archive = io.BytesIO()
    memory_export(user=user, out=archive)
    twin = make_user("twin")
    memory_import(user=twin, source=io.BytesIO(archive.getvalue()))
    client.force_login(twin)
    new_segment = Segment.objects.get(user=twin)
    new_fact, new_trait = KnowledgeFact.objects.get(user=twin), AgentTrait.objects.get(user=twin)
    assert MemoryNode.objects.filter(user=twin, kind="segment", object_id__startswith=f"{new_segment.id}@").exists()
    for url in pages("twin", new_segment.id, new_fact.id, new_trait.id):
        assert client.get(url).status_code == 200, url


def test_a_node_of_a_kind_no_page_shows_is_listed_without_a_link(client, make_user):
    """A node of an unknown kind (one an older import let in) is shown by its label, not a 500."""
    from memory.services.remember import memory_add

    user = make_user("owner")
    page = memory_add(user=user, text="I collect antique maps of Lisbon.")
    node = MemoryNode.objects.get(user=user, kind="page", object_id=str(page.id))
    odd = MemoryNode.objects.create(user=user, kind="<script>", object_id="<b>x</b>", cid=node.cid, block=node.block)
    graph.edge_put(user_id=user.pk, source=odd, target=node, relation="about")
    client.force_login(user)
    response = client.get(f"/inspector/owner/provenance/page/{page.id}/")
    assert response.status_code == 200 and b"<b>x</b>" not in response.content
