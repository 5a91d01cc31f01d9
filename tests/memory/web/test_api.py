"""The REST API: personal tokens (hashed, shown once, revocable), session auth with CSRF, acting for
another user (staff only, audited), the memory and persona routes, errors as {code, message, detail},
body size limits and rate limits per token."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from memory.models import ApiToken, DialoguePage, LifecycleEvent
from memory.services.pages import page_start
from memory.services.tokens import token_create, token_revoke
from memory.services.turns import page_complete

pytestmark = pytest.mark.usefixtures("memory_env")


def bearer(text: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {text}"}


def say(user, text: str) -> DialoguePage:
    return page_complete(page=page_start(user=user, query=text), response="Noted.", reply_model="test")


@pytest.fixture
def ana(make_user):
    user = make_user("ana")
    say(user, "My favourite mountain is Mont Blanc.")
    _, text = token_create(user=user, name="notes app")
    return user, text


def test_a_token_is_stored_hashed_shown_once_and_revocable(client, ana):
    user, text = ana
    token = ApiToken.objects.get(user=user)
    assert text.startswith(f"mos_{token.prefix}_") and text not in (token.key_hash, token.prefix)
    assert len(token.key_hash) == 64
    response = client.get("/api/memory/stats", **bearer(text))
    assert response.status_code == 200 and response.json()["user"] == "ana"
    assert client.get("/api/memory/stats", **bearer(text + "x")).json()["code"] == "unauthorized"
    token_revoke(user=user, token_id=token.id)
    revoked = client.get("/api/memory/stats", **bearer(text))
    assert revoked.status_code == 401 and set(revoked.json()) == {"code", "message", "detail"}


def test_the_settings_page_makes_and_revokes_tokens(client, make_user):
    user = make_user("ben")
    client.force_login(user)
    made = client.post("/settings/tokens/", {"name": "cli"})
    token = ApiToken.objects.get(user=user)
    text = made.content.decode().split('<pre id="new-token">')[1].split("</pre>")[0]
    assert text.startswith(f"mos_{token.prefix}_")
    assert text not in client.get("/settings/tokens/").content.decode()  # shown once
    client.post("/settings/tokens/", {"revoke": token.id})
    assert ApiToken.objects.get(id=token.id).revoked_at is not None
    assert client.post("/settings/tokens/", {"name": ""}).status_code == 400


def test_the_settings_page_names_the_openai_base_url_with_copy_buttons(client, make_user):
    """Issue 50, finding 8: the API page never mentioned /v1 or its base URL."""
    client.force_login(make_user("ben"))
    page = client.post("/settings/tokens/", {"name": "chat app"}).content.decode()
    assert '<code id="v1-base">http://testserver/v1</code>' in page
    assert 'data-copy="v1-base"' in page and 'data-copy="new-token"' in page and "js/copy.js" in page


@pytest.mark.parametrize("ident", ["abc", "-1", "1e3", "", "²", "١٢"])
def test_revoking_a_token_by_a_malformed_id_is_refused_plainly(client, make_user, ident):
    client.force_login(make_user("ben"))
    response = client.post("/settings/tokens/", {"revoke": ident})
    assert response.status_code == 400 and b"No such token." in response.content
    assert b"int()" not in response.content and b"invalid literal" not in response.content


def test_session_auth_needs_the_csrf_token(make_user):
    user = make_user("cara")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get("/api/memory/memories").status_code == 200
    refused = client.post("/api/memory/recall", json.dumps({"query": "mountains"}), content_type="application/json")
    assert refused.status_code == 403
    client.get("/")  # sets the CSRF cookie
    allowed = client.post("/api/memory/recall", json.dumps({"query": "mountains"}), content_type="application/json",
                          HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)
    assert allowed.status_code == 200


def test_recall_of_an_unknown_persona_is_refused_and_creates_nothing(client, ana):
    from memory.models import Sona

    user, text = ana
    before = Sona.objects.filter(user=user).count()
    refused = client.post("/api/memory/recall", json.dumps({"query": "x", "sona": "stranger"}),
                          content_type="application/json", **bearer(text))
    assert refused.status_code == 404 and refused.json()["message"] == "Unknown sona 'stranger'."
    assert Sona.objects.filter(user=user).count() == before


@pytest.mark.parametrize(("headers", "message"), [
    ({}, "Authenticate with a valid API token"),
    (bearer("mos_nope_bad"), "The API token is unknown, revoked or malformed"),
    ({"HTTP_AUTHORIZATION": "Basic abc"}, "The API token is unknown, revoked or malformed"),
])
def test_a_write_without_valid_credentials_is_a_401_not_a_csrf_failure(headers, message):
    """A program calling without a token (or with a bad one) has no session to forge: it is told to
    authenticate, not that a CSRF check failed."""
    client = Client(enforce_csrf_checks=True)
    refused = client.post("/api/memory/recall", json.dumps({"query": "mountains"}), content_type="application/json",
                          **headers)
    assert refused.status_code == 401
    assert refused.json()["code"] == "unauthorized" and message in refused.json()["message"]


@pytest.mark.slow
def test_memories_list_get_correct_pin_repress_and_delete(client, ana):
    user, text = ana
    auth = bearer(text)
    listed = client.get("/api/memory/memories?kind=page&limit=5", **auth).json()
    assert listed["count"] == 1 and listed["items"][0]["text"].startswith("My favourite mountain")
    page = listed["items"][0]
    by_id = client.get(f"/api/memory/memories/page/{page['id']}", **auth).json()
    assert by_id["version"] == 1 and by_id["detail"]["response"] == "Noted."
    by_cid = client.get(f"/api/memory/memories/by-cid/{page['cid']}", **auth).json()
    assert by_cid["id"] == page["id"]
    corrected = client.post(f"/api/memory/memories/page/{page['id']}/correct",
                            json.dumps({"version": 1, "query": "My favourite mountain is the Matterhorn."}),
                            content_type="application/json", **auth).json()
    assert corrected["version"] == 2 and "Matterhorn" in corrected["text"]
    stale = client.post(f"/api/memory/memories/page/{page['id']}/correct", json.dumps({"version": 1, "query": "x"}),
                        content_type="application/json", **auth)
    assert stale.status_code == 400 and stale.json()["code"] == "invalid"
    old_cid = client.get(f"/api/memory/memories/by-cid/{page['cid']}", **auth).json()  # the old id still resolves
    assert old_cid["id"] == page["id"] and old_cid["version"] == 2
    pinned = client.post(f"/api/memory/memories/page/{page['id']}/pin", json.dumps({"value": True}),
                         content_type="application/json", **auth).json()
    assert pinned["pinned"]
    client.post(f"/api/memory/memories/page/{page['id']}/repress", json.dumps({"value": True, "reason": "x"}),
                content_type="application/json", **auth)
    found = client.get("/api/memory/memories/search?q=Matterhorn", **auth).json()
    assert all("Matterhorn" not in item["text"] for item in found["items"])
    dry = client.delete(f"/api/memory/memories/page/{page['id']}?dry_run=true", **auth).json()
    assert dry["deleted"] is False and dry["final"] and DialoguePage.objects.filter(id=page["id"]).exists()
    done = client.delete(f"/api/memory/memories/page/{page['id']}", **auth).json()
    assert done["deleted"] and not DialoguePage.objects.filter(id=page["id"]).exists()
    assert client.get(f"/api/memory/memories/page/{page['id']}", **auth).json()["code"] == "not_found"


def test_recall_changes_nothing_unless_asked_and_lists_are_paginated(client, ana):
    user, text = ana
    auth = bearer(text)
    before = LifecycleEvent.objects.filter(user=user).count()
    recall = client.post("/api/memory/recall", json.dumps({"query": "Which mountain?", "policy": "memoryos"}),
                         content_type="application/json", **auth).json()
    assert recall["policy"] == "memoryos" and recall["trace_id"] is None and recall["items"]
    assert LifecycleEvent.objects.filter(user=user).count() == before
    unknown = client.post("/api/memory/recall", json.dumps({"query": "x", "policy": "nope"}),
                          content_type="application/json", **auth)
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_policy"
    events = client.get("/api/memory/events?limit=1", **auth).json()
    assert events["count"] == before and len(events["items"]) == 1
    traits = client.get("/api/long-term/traits?limit=10&offset=85", **auth).json()
    assert traits["count"] == 90 and len(traits["items"]) == 5
    assert client.get("/api/long-term/profile", **auth).json()["name"] == ""
    put = client.put("/api/long-term/profile", json.dumps({"name": "Ana", "birth_year": 1990}),
                     content_type="application/json", **auth).json()
    assert put["name"] == "Ana" and put["birth_year"] == 1990
    renamed = client.put("/api/long-term/profile", json.dumps({"name": "Anna"}), content_type="application/json",
                         **auth).json()
    assert renamed["name"] == "Anna" and [(h["field"], h["value"]) for h in renamed["history"]] == [("name", "Ana")]
    assert renamed["history"][0]["valid_until"] == renamed["since"]["name"]
    bad = client.put("/api/long-term/profile", json.dumps({"birth_year": 1200}),
                     content_type="application/json", **auth)
    assert bad.status_code == 400 and "out of range" in bad.json()["message"]
    schema = client.get("/api/memory/memories?limit=nope", **auth)
    assert schema.status_code == 422 and schema.json()["code"] == "validation_error"


def test_acting_for_another_user_is_for_staff_and_audited(client, make_user, ana):
    user, _ = ana
    _, plain = token_create(user=make_user("eve"), name="eve's")
    operator = make_user("op", is_staff=True)
    operator.user_permissions.add(*Permission.objects.filter(codename__in=["inspect_any_user", "edit_any_user"]))
    _, staff = token_create(user=operator, name="ops")
    assert client.get("/api/memory/memories?user=ana", **bearer(plain)).status_code == 404
    assert client.get("/api/memory/memories?user=ana", **bearer(plain)).json()["code"] == "not_found"
    listed = client.get("/api/memory/memories?user=ana", **bearer(staff)).json()
    assert listed["count"] == 1
    access = LifecycleEvent.objects.get(user=user, kind="operator_access")
    assert access.payload["actor"] == "op" and access.payload["method"] == "GET"


def test_body_size_is_limited(client, ana, settings):
    _, text = ana
    settings.MEMORYOS_API = {**settings.MEMORYOS_API, "MAX_BODY_BYTES": 100}
    response = client.post("/api/memory/recall", json.dumps({"query": "x" * 500}), content_type="application/json",
                           **bearer(text))
    assert response.status_code == 413 and response.json()["code"] == "body_too_large"


def test_rate_limit_is_per_token(client, ana, make_user, monkeypatch):
    from django.core.cache import cache

    from memoryos_site.api import api

    cache.clear()
    for throttle in api.throttle:
        monkeypatch.setattr(throttle, "num_requests", 3)
    user, first = ana
    _, second = token_create(user=user, name="second")
    codes = [client.get("/api/memory/stats", **bearer(first)).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert client.get("/api/memory/stats", **bearer(first)).json()["code"] == "rate_limited"
    assert client.get("/api/memory/stats", **bearer(second)).status_code == 200  # a bucket per token
    cache.clear()


def test_a_turn_streams_as_server_sent_events(client, ana):
    user, text = ana
    response = client.post("/api/memory/turns?stream=true", json.dumps({"message": "Which mountain do I love?"}),
                           content_type="application/json", **bearer(text))
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    body = b"".join(response.streaming_content).decode()
    events = [block.split("\n")[0].removeprefix("event: ") for block in body.strip().split("\n\n")]
    assert events[0] == "stored" and events[-1] == "done" and events.count("token") >= 3
    done = json.loads(body.strip().split("\n\n")[-1].split("data: ", 1)[1])
    blocks = body.strip().split("\n\n")
    tokens = "".join(json.loads(b.split("data: ", 1)[1]) for b in blocks if b.startswith("event: token"))
    assert tokens == done["reply"] and DialoguePage.objects.filter(user=user).count() == 2
