"""The personas routes of the REST API (Memoria's sonas): listed with their memory counts, created
(a taken name or an unknown policy refused), renamed (the name embedded again, the memories kept),
and a sona's memories listed with how each joined; another user's sona is not found."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.test import Client

from memory.models import Sona, bytes_to_vector
from memory.services.remember import memory_add

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def api(make_user):
    ana, bob = make_user("ana"), make_user("bob")
    clients = {}
    for user in (ana, bob):
        clients[user.username] = Client()
        clients[user.username].force_login(user)

    def call(who: str, method: str, path: str, body: dict | None = None):
        client = clients[who]
        if body is None:
            return getattr(client, method)(path)
        return getattr(client, method)(path, json.dumps(body), content_type="application/json")

    return ana, bob, call


def test_personas_are_created_listed_renamed_and_show_their_memories(api):
    ana, _bob, call = api
    made = call("ana", "post", "/api/memory/sonas", {"name": "coach", "profile": "A running coach.",
                                                     "recall_policy": "memoria"})
    assert made.status_code == 200, made.content
    assert made.json()["name"] == "coach" and made.json()["recall_policy"] == "memoria"
    memory_add(user=ana, text="I run ten kilometres every Sunday.", sona="coach")
    memory_add(user=ana, text="My knee hurts after long runs.", sona="coach")
    listed = {s["name"]: s["memories"] for s in call("ana", "get", "/api/memory/sonas").json()}
    assert listed == {"coach": 2}
    before = bytes(Sona.objects.get(user=ana, name="coach").name_embedding)

    renamed = call("ana", "patch", "/api/memory/sonas/Coach", {"name": "running buddy"})  # names: case aside
    assert renamed.status_code == 200 and renamed.json() == {**renamed.json(), "name": "running buddy",
                                                               "memories": 2}
    after = Sona.objects.get(user=ana, name="running buddy")
    assert bytes(after.name_embedding) != before and np.isclose(np.linalg.norm(bytes_to_vector(after.name_embedding)),
                                                                1.0, atol=1e-3)
    memories = call("ana", "get", "/api/memory/sonas/running%20buddy/memories?limit=1").json()
    assert memories["count"] == 2 and len(memories["items"]) == 1
    newest = memories["items"][0]
    assert newest["kind"] == "page" and newest["via"] == "origin" and "knee hurts" in newest["text"]
    assert newest["cid"].startswith("bafyrei")


def test_refusals_name_the_problem_and_another_users_persona_is_not_found(api):
    _ana, _bob, call = api
    call("ana", "post", "/api/memory/sonas", {"name": "coach"})
    taken = call("ana", "post", "/api/memory/sonas", {"name": "COACH"})
    assert taken.status_code == 400 and taken.json()["message"] == "You already have a sona named 'COACH'."
    unknown = call("ana", "post", "/api/memory/sonas", {"name": "chef", "recall_policy": "telepathy"})
    assert unknown.status_code == 400 and "unknown recall policy 'telepathy'" in unknown.json()["message"]
    call("ana", "post", "/api/memory/sonas", {"name": "chef"})
    clash = call("ana", "patch", "/api/memory/sonas/chef", {"name": "coach"})
    assert clash.status_code == 400 and "already have a sona named 'coach'" in clash.json()["message"]
    for method, path, body in (("get", "/api/memory/sonas/coach/memories", None),
                               ("patch", "/api/memory/sonas/coach", {"name": "mine now"})):
        refused = call("bob", method, path, body)
        assert refused.status_code == 404 and refused.json()["code"] == "not_found"
    assert call("bob", "get", "/api/memory/sonas").json() == []
    assert sorted(Sona.objects.values_list("name", flat=True)) == ["chef", "coach"]
