"""The review queue over REST: the person's own queue, operators acting for them (permission and
audit), another user's supersessions out of reach, accept / edit / reject and bad input."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission

from memory.models import LifecycleEvent
from memory.services.supersession import supersession_detect
from memory.services.tokens import token_create
from persona.models import KnowledgeFact, Supersession
from tests.memory.services.test_supersession import JUNE, MARCH, stated

pytestmark = pytest.mark.usefixtures("memory_env")


def bearer(text: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {text}"}


def post(client, url: str, body: dict, token: str):
    return client.post(url, json.dumps(body), content_type="application/json", **bearer(token))


@pytest.fixture
def review(make_user):
    """Ana said she lives in Leeds, then in York: an open review, and her token."""
    ana = make_user("ana")
    stated(ana, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(ana, "I live in York.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=ana.pk, fact_ids=[str(york.pk)])
    _, token = token_create(user=ana, name="app")
    return ana, row, token


def test_the_queue_lists_open_reviews_with_both_facts_their_turns_and_dates(client, review):
    ana, row, token = review
    [item] = client.get("/api/memory/supersessions", **bearer(token)).json()["items"]
    assert (item["id"], item["status"], item["slot"], item["confidence"]) == (str(row.pk), "open", "residence", 0.55)
    assert item["old"]["text"] == "User lives in Leeds" and item["new"]["text"] == "User lives in York"
    assert item["old"]["sources"][0]["text"] == "I live in Leeds."
    assert item["old"]["stated_at"].startswith("2025-03-14") and item["new"]["stated_at"].startswith("2025-06-02")
    assert "'leeds' became 'york'" in item["reason"]
    assert client.get("/api/memory/supersessions?status=accepted", **bearer(token)).json()["items"] == []


def test_accepting_supersedes_and_the_next_list_shows_it_decided(client, review):
    ana, row, token = review
    done = post(client, f"/api/memory/supersessions/{row.pk}/accept", {"reason": "moved"}, token)
    assert done.status_code == 200 and done.json()["status"] == "accepted"
    assert done.json()["old"]["valid_until"].startswith("2025-06-02")
    assert client.get("/api/memory/supersessions", **bearer(token)).json()["items"] == []
    again = post(client, f"/api/memory/supersessions/{row.pk}/accept", {}, token)
    assert again.status_code == 400 and again.json()["code"] == "invalid"


def test_an_edit_corrects_the_newer_fact_and_an_empty_one_is_refused(client, review):
    ana, row, token = review
    refused = post(client, f"/api/memory/supersessions/{row.pk}/accept", {"text": "   "}, token)
    assert refused.status_code == 400
    assert Supersession.objects.get(pk=row.pk).status == "open"  # nothing changed
    done = post(client, f"/api/memory/supersessions/{row.pk}/accept", {"text": "User lives in York city"}, token)
    assert done.json()["new"]["text"] == "User lives in York city"


def test_rejecting_keeps_both_current(client, review):
    ana, row, token = review
    done = post(client, f"/api/memory/supersessions/{row.pk}/reject", {"reason": "two homes"}, token)
    assert done.json()["status"] == "rejected"
    assert KnowledgeFact.objects.filter(user=ana, valid_until__isnull=True).count() == 2
    event = LifecycleEvent.objects.get(user=ana, kind=LifecycleEvent.Kind.SUPERSESSION_REJECTED)
    assert (event.payload["actor"], event.payload["reason"]) == ("ana", "two homes")


def test_another_user_sees_nothing_and_changes_nothing(client, make_user, review):
    ana, row, _ = review
    _, eve = token_create(user=make_user("eve"), name="eve's")
    assert client.get("/api/memory/supersessions", **bearer(eve)).json()["items"] == []
    assert client.get(f"/api/memory/supersessions/{row.pk}", **bearer(eve)).status_code == 404
    for action in ("accept", "reject"):
        response = post(client, f"/api/memory/supersessions/{row.pk}/{action}", {}, eve)
        assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert client.get("/api/memory/supersessions?user=ana", **bearer(eve)).status_code == 404
    assert Supersession.objects.get(pk=row.pk).status == "open"


def test_an_operator_acts_for_the_user_with_the_permission_and_is_audited(client, make_user, review):
    ana, row, _ = review
    operator = make_user("op")
    _, reader = token_create(user=operator, name="ops")
    operator.user_permissions.add(Permission.objects.get(codename="inspect_any_user"))
    assert len(client.get("/api/memory/supersessions?user=ana", **bearer(reader)).json()["items"]) == 1
    # reading is not changing: accepting needs edit_any_user
    assert post(client, f"/api/memory/supersessions/{row.pk}/accept?user=ana", {}, reader).status_code == 404
    operator.user_permissions.add(Permission.objects.get(codename="edit_any_user"))
    operator = type(operator).objects.get(pk=operator.pk)  # permissions are cached per instance
    done = post(client, f"/api/memory/supersessions/{row.pk}/accept?user=ana", {"reason": "checked"}, reader)
    assert done.status_code == 200 and done.json()["decided_by"] == "op"
    assert LifecycleEvent.objects.filter(user=ana, kind="operator_access").exists()
    event = LifecycleEvent.objects.get(user=ana, kind=LifecycleEvent.Kind.FACT_SUPERSEDED)
    assert event.payload["actor"] == "op"


def test_a_malformed_id_is_a_404(client, review):
    _, _, token = review
    assert client.get("/api/memory/supersessions/not-a-uuid", **bearer(token)).status_code == 404
    assert post(client, "/api/memory/supersessions/not-a-uuid/reject", {}, token).status_code == 404
    assert client.get("/api/memory/supersessions?status=bogus", **bearer(token)).status_code == 422
