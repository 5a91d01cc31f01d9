"""The Exocortex through whole turns: a turn answered by the exocortex policy is recollected after
the reply (one answered by another policy is not, by default), the next turn recalls the
recollection, and the chat's panel explains each item by the Exocortex terms."""

from __future__ import annotations

import pytest

from memory.models import LifecycleEvent, Recollection, RetrievalTrace
from memory.selectors import turn_recall
from memory.services.turns import turn_run
from tests.memory.recall.test_exocortex_policy import BREAD, LISBON

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.mark.slow
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
    pages = titles["Earlier conversations (mid-term)"]
    assert all(dict(row.scores).keys() >= {"relevance", "weight"} for row in pages)
    assert "weight" in dict(panel.legend)
