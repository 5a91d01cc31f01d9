"""The Exocortex through whole turns: a turn answered by the exocortex policy is recollected after
the reply (one answered by another policy is not, by default), the next turn recalls the
recollection, and the chat's panel explains each item by the Exocortex terms."""

from __future__ import annotations

import io

import pytest

from memory.adapters import configured
from memory.models import LifecycleEvent, Recollection, RetrievalTrace
from memory.selectors.recall_panel import GONE, turn_recall
from memory.services.deletion import user_forget
from memory.services.portable import memory_export, memory_import
from memory.services.recall import recall_for_query
from memory.services.reindex import reindex_all
from memory.services.turns import turn_run
from tests.policies.exocortex.test_ranking import BREAD, LISBON

TURN_SECTION = "Things said earlier (mid-term)"

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.mark.slow
@pytest.mark.real_adapters  # a recollection needs MiniLM's clusters of the candidates
def test_an_exocortex_turn_is_recollected_and_the_next_turn_recalls_it(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 2}
    user = make_user()
    for text in (*LISBON, *BREAD, "Remind me about my trip to Lisbon?"):
        turn_run(user=user, message=text, policy="hybrid")
    assert not Recollection.objects.filter(user=user).exists()  # hybrid's turns are not recollected
    asked = turn_run(user=user, message="What do I remember of Lisbon?", policy="exocortex")
    made = list(Recollection.objects.filter(user=user))
    assert made and all(r.prompt == "What do I remember of Lisbon?" for r in made)
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.RECOLLECTED)
    assert event.subject_id == str(asked.page.id) and event.payload["guard"]["clusters"]
    later = turn_run(user=user, message="Which tram did we take in Lisbon?", policy="exocortex")
    recalled = [i for i in later.recall.items if i.kind == "recollection"]
    assert {i.ref for i in recalled} & {str(r.id) for r in made}
    trace = RetrievalTrace.objects.get(page=later.page)
    assert trace.policy == "exocortex" and trace.payload["candidates"]["recollections"] >= 1
    panel = turn_recall(user=user, page_id=later.page.id)
    titles = dict(panel.sections)
    rows = titles["Recollections (earlier memories summarised together)"]  # it entered the prompt
    assert [label for label, _ in rows[0].scores] == ["relevance", "decay recency", "nostalgia", "type weight",
                                                      "weight"]
    assert rows[0].text.startswith("Recollection for")
    said = titles[TURN_SECTION]  # the utterances the relevance core ranked, weighed by the Exocortex
    assert said and all(dict(row.scores).keys() >= {"relevance", "weight"} for row in said)
    assert all(row.text != GONE for row in said)  # their words come from the trace
    assert "weight" in dict(panel.legend)
    # The vectors are derived: a reindex brings the recollections' points back from their rows.
    index = configured.vector_index()
    stored = Recollection.objects.filter(user=user).count()
    assert index.count(user_id=str(user.pk), kind="recollection") == stored
    assert reindex_all()["recollection"] == stored
    assert index.count(user_id=str(user.pk), kind="recollection") == stored
    # An export carries the recollections: imported into another user, the exocortex recalls the same.
    archive = io.BytesIO()
    memory_export(user=user, out=archive)
    other = make_user()
    memory_import(user=other, source=io.BytesIO(archive.getvalue()))
    assert sorted(Recollection.objects.filter(user=other).values_list("cid", flat=True)) \
        == sorted(Recollection.objects.filter(user=user).values_list("cid", flat=True))
    moved = {str(p.id) for p in other.pages.all()}
    assert all(set(r.members) <= moved for r in Recollection.objects.filter(user=other))

    def recalled(who):
        found = recall_for_query(user=who, query="Which tram did we take in Lisbon?", policy="exocortex",
                                 update_heat=False, record_trace=False, now=later.page.timestamp)
        return [(item.kind, item.text, round(item.score, 9)) for item in found.items]

    assert recalled(other) == recalled(user) and any(kind == "recollection" for kind, _, _ in recalled(other))
    # Forgetting the user forgets their recollections too.
    counts = user_forget(user=user, reason="erasure request")
    assert counts["recollections"] == stored and not Recollection.objects.filter(user=user).exists()
    assert index.count(user_id=str(user.pk)) == 0


@pytest.mark.slow
def test_both_policies_are_selectable_per_api_call_and_per_sona(make_user, memory_env, client):
    import json

    from memory.services.users import sona_get_or_create

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    client.force_login(user)
    for text in LISBON[:3]:
        turn_run(user=user, message=text)
    for policy in ("exocortex", "generative_agents"):
        response = client.post("/api/memory/recall", json.dumps({"query": "Lisbon tram", "policy": policy}),
                               content_type="application/json")
        assert response.status_code == 200, response.content
        items = [i for i in response.json()["items"] if i["kind"] == "turn"]
        assert items and all("weight" in i["breakdown"] and "relevance" in i["breakdown"] for i in items), policy
        assert ("nostalgia" in items[0]["breakdown"]) == (policy == "exocortex")
    sona = sona_get_or_create(user=user, name="historian")
    sona.recall_policy = "generative_agents"
    sona.save(update_fields=["recall_policy"])
    result = turn_run(user=user, message="What about the castle?", sona=sona)
    assert result.recall.policy == "generative_agents"
    assert RetrievalTrace.objects.get(page=result.page).policy == "generative_agents"
