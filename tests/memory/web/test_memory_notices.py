"""The chat's "remembered" notice and its undo over HTTP, and the knowledge base listing marking a
superseded fact with its period; another user reaches none of it."""

from __future__ import annotations

import pytest

from memory.services.facts import fact_changes_of_page
from memory.services.tokens import token_create
from memory.services.turns import turn_run
from memory.web.notices import memory_changed_frame
from persona.models import KnowledgeFact

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def moved(make_user):
    ana = make_user("ana")
    turn_run(user=ana, message="I live in Lyon.")
    page = turn_run(user=ana, message="Big news: I moved from Lyon to Porto!").page
    [change] = fact_changes_of_page(user=ana, page_id=str(page.id))
    return ana, page, change


def test_the_frame_names_the_change_in_the_second_person_with_its_undo(moved):
    _ana, page, change = moved
    frame = memory_changed_frame(page_id=str(page.id), changes=[change])
    assert frame == {"type": "memory.changed", "page_id": str(page.id), "changes": [
        {"action": "changed", "fact_id": change.fact_id, "text": "You live in Porto",
         "previous": "You live in Lyon", "undo_url": f"/chat/memory/undo/{change.fact_id}/"}]}


def test_undo_is_a_post_of_the_owner_only(client, make_user, moved):
    ana, _page, change = moved
    url = f"/chat/memory/undo/{change.fact_id}/"
    client.force_login(make_user("bob"))
    assert client.post(url).status_code == 404  # another person's fact does not exist for them
    client.force_login(ana)
    assert client.get(url).status_code == 405
    response = client.post(url)
    assert response.status_code == 200 and response.json()["current_again"] == ["You live in Lyon"]
    assert not KnowledgeFact.objects.filter(pk=change.fact_id).exists()
    assert client.post(url).status_code == 404  # undone once


def test_the_knowledge_base_lists_a_superseded_fact_with_its_period(client, moved):
    ana, _page, change = moved
    _, token = token_create(user=ana, name="app")
    items = client.get("/api/long-term/kb", HTTP_AUTHORIZATION=f"Bearer {token}").json()["items"]
    by_text = {item["text"]: item for item in items}
    lyon, porto = by_text["User lives in Lyon"], by_text["User lives in Porto"]
    assert porto["period"] == "" and porto["valid_until"] is None
    assert lyon["superseded_by"] == change.fact_id and lyon["period"].startswith("until ")
