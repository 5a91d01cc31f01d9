"""Recall policies behind one interface: a toy policy registered by a test is selectable by setting,
per sona and per API call, runs inside the shared pipeline and is recorded on the trace."""

from __future__ import annotations

import json

import pytest

from memory.engine.types import RecalledItem
from memory.models import DialoguePage, RetrievalTrace, Sona
from memory.recall.base import (
    Ranking,
    RecallPolicy,
    UnknownPolicyError,
    get_policy,
    policy_names,
    register_policy,
    unregister_policy,
)
from memory.selectors.traces import trace_timings
from memory.services.common import MemoryInputError
from memory.services.turns import turn_run
from memory.services.users import sona_get_or_create

pytestmark = pytest.mark.usefixtures("memory_env")


class ToyPolicy(RecallPolicy):
    """Recalls one made-up memory that names the query's words, and counts its calls."""

    name = "toy"
    title = "A policy for tests"
    rank_part = "toy ranking"
    early_part = "toy early"
    calls: list[str] = []

    def search_early(self, context):
        return sorted(context.query_keywords)

    def rank(self, context, query_vector, early):
        self.calls.append(context.query)
        assert len(query_vector) == 384  # the shared pipeline embedded the query
        return Ranking(items=[RecalledItem(kind="toy_memory", ref="toy-1", text=f"TOY recalls {' '.join(early)}",
                                           score=0.9, breakdown={"toy_score": 0.9})],
                       trace={"toy": {"early": early}})


@pytest.fixture
def toy():
    ToyPolicy.calls = []
    register_policy(ToyPolicy)
    yield ToyPolicy
    unregister_policy("toy")


def test_builtin_policies_are_registered_in_order():
    assert policy_names()[:5] == ("memoryos", "hybrid", "memoria", "exocortex", "generative_agents")
    assert get_policy("memoria").parts() == ("keyword search", "memoria")
    assert get_policy("hybrid").parts() == ("keyword search", "utterances")
    # every policy but Memoria (whose early part also reads it) reads the keyword list while the query is embedded
    assert get_policy("memoryos").parts() == ("keyword search", "segments, then pages")
    assert get_policy("exocortex").parts() == get_policy("generative_agents").parts() == (
        "keyword search", "weighted memories")
    with pytest.raises(UnknownPolicyError, match="unknown recall policy 'nope'; choose one of memoryos, hybrid, "
                                                 "memoria, exocortex, generative_agents"):
        get_policy("nope")


def test_a_name_cannot_be_registered_twice(toy):
    class Impostor(ToyPolicy):
        pass

    with pytest.raises(ValueError, match="already registered"):
        register_policy(Impostor)
    assert type(get_policy("toy")) is ToyPolicy


def test_a_registered_policy_is_selectable_by_setting_and_traced(toy, make_user, settings):
    settings.MEMORYOS = {**settings.MEMORYOS, "RECALL_POLICY": "toy"}
    assert "toy" in policy_names()
    result = turn_run(user=make_user(), message="Tell me about tangerines")
    assert toy.calls == ["Tell me about tangerines"]
    trace = RetrievalTrace.objects.get(id=result.recall.trace.id)
    assert trace.policy == "toy" and trace.payload["policy"] == "toy"
    assert trace.payload["toy"] == {"early": ["tangerine"]}
    parts = [part for part, _ in trace_timings(trace.payload)]
    # The turn starts embedding the message as it stores it; its recall waits for that vector
    # where it would wait for its own, after what needs no vector.
    assert parts == ["STM pages", "profile and traits", "toy early", "embedding wait", "facts and agent traits",
                     "toy ranking", "segment visits"]
    assert "toy_memory:toy-1" in trace.payload["prompt"]["included"]
    assert "TOY recalls tangerine" in result.prompt.messages[0].content


def test_a_sona_chooses_its_policy_and_a_call_overrides_it(toy, make_user):
    user = make_user()
    coach = sona_get_or_create(user=user, name="coach")
    Sona.objects.filter(id=coach.id).update(recall_policy="toy")
    coach.refresh_from_db()
    assert turn_run(user=user, message="first", sona=coach).recall.policy == "toy"
    assert turn_run(user=user, message="second", sona=coach, policy="memoryos").recall.policy == "memoryos"
    plain = sona_get_or_create(user=user, name="plain")
    assert turn_run(user=user, message="third", sona=plain).recall.policy == "hybrid"  # the setting's
    assert toy.calls == ["first"]
    assert list(RetrievalTrace.objects.filter(user=user).order_by("created_at").values_list("policy", flat=True)) \
        == ["toy", "memoryos", "hybrid"]


def test_an_unknown_policy_is_refused_before_anything_is_stored(make_user):
    user = make_user()
    with pytest.raises(MemoryInputError, match="Unknown recall policy 'nope'"):
        turn_run(user=user, message="hello", policy="nope")
    assert not DialoguePage.objects.filter(user=user).exists()


def test_the_api_takes_a_policy_per_call(toy, make_user, client):
    user = make_user()
    client.force_login(user)
    response = client.post("/api/memory/turns", json.dumps({"message": "tangerines again", "policy": "toy"}),
                           content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["policy"] == "toy"
    assert RetrievalTrace.objects.get(id=body["trace_id"]).policy == "toy"
    assert any(item["kind"] == "toy_memory" for item in body["recalled"])
    refused = client.post("/api/memory/turns", json.dumps({"message": "hello", "policy": "nope"}),
                          content_type="application/json")
    assert refused.status_code == 400 and "nope" in refused.json()["message"] and refused.json()["code"] == "invalid"
    assert DialoguePage.objects.filter(user=user).count() == 1
