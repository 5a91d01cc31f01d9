"""Property-based (hypothesis): the API's write routes given any JSON at all, bodies shaped like
their schema with any values, and bytes that are no JSON: never a 500, and a refusal (4xx) writes
nothing. Schemathesis (test_api_schemathesis.py) checks the answers against the OpenAPI schema."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.models import DialoguePage, LifecycleEvent, MemoryEdge, MemoryNode, Segment, Sona
from memory.services.remember import memory_add
from memory.services.tokens import token_create
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")
PROPERTY = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FIELDS = ("message", "sona", "create_sona", "sona_profile", "policy", "files", "query", "update_heat",
          "record_trace", "name", "profile", "recall_policy", "version", "reason", "response", "summary",
          "keywords", "text", "score", "note", "value", "gender", "birth_year", "stream")
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=4), max_leaves=10)
TEXTS = st.sampled_from(["", " ", "friend", "assistant", "x" * 5000, "<script>", "memoryos", "hybrid", "\x00",
                         "Lisbon maps", "mos_x"])


@pytest.fixture
def caller(make_user):
    user = make_user("ana")
    page = memory_add(user=user, text="I collect antique maps of Lisbon.", sona="friend")
    _, token = token_create(user=user, name="properties")
    return user, str(page.id), Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def routes(page_id: str):
    kinds = st.sampled_from(["page", "segment", "fact", "agent_trait", "trait", "<script>", "openness"])
    idents = st.sampled_from([page_id, "openness", "not-a-uuid", "00000000-0000-0000-0000-000000000000", "%00"])
    action = st.sampled_from(["correct", "pin", "repress"])
    return st.one_of(
        st.sampled_from([("post", "/api/memory/recall"), ("post", "/api/memory/sonas"),
                         ("post", "/api/memory/turns"), ("put", "/api/long-term/profile"),
                         ("patch", "/api/memory/sonas/friend"), ("patch", "/api/memory/sonas/nobody")]),
        st.builds(lambda kind, ident, verb: ("post", f"/api/memory/memories/{kind}/{ident}/{verb}"),
                  kinds, idents, action),
    )


def bodies():
    shaped = st.dictionaries(st.sampled_from(FIELDS), JSON | TEXTS, max_size=5).map(json.dumps)
    return st.one_of(shaped, JSON.map(json.dumps), st.binary(max_size=40))


def written(user) -> tuple:
    """What a refused call must leave as it was."""
    profile = UserProfile.objects.filter(user=user).values_list("name", "gender", "birth_year").first()
    return (*(model.objects.filter(user=user).count() for model in (
        DialoguePage, Segment, MemoryNode, MemoryEdge, Sona, KnowledgeFact, AgentTrait, UserTrait, LifecycleEvent)),
        tuple(DialoguePage.objects.filter(user=user).values_list("query", "pinned", "repressed", "version")),
        tuple(Sona.objects.filter(user=user).values_list("name", "profile")), profile)


def test_any_body_on_any_write_route_is_answered_below_500_and_a_refusal_writes_nothing(caller):
    user, page_id, client = caller

    @PROPERTY
    @given(route=routes(page_id), body=bodies())
    def check(route, body):
        method, path = route
        before = written(user)
        response = getattr(client, method)(path, body, content_type="application/json")
        assert response.status_code < 500, (path, body, response.content[:300])
        if response.status_code >= 400:
            assert written(user) == before, (path, body, response.status_code)
            assert set(response.json()) == {"code", "message", "detail"}

    check()
