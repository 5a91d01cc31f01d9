"""Maintenance with an LLM endpoint: summaries and persona extraction, and their failures."""

from __future__ import annotations

import json

import pytest

from memory.adapters import configured
from memory.models import LifecycleEvent, Segment
from memory.services.pages import page_start
from memory.services.turns import page_complete
from persona.models import KnowledgeFact, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def llm(memory_env, chat_model):
    """The fake chat model (tests/fakes.py): what is asked and answered, not the HTTP client."""
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    return chat_model


def add_page(user, query, response=""):
    page = page_start(user=user, query=query)
    return page_complete(page=page, response=response, reply_model="test")


def test_segment_summary_comes_from_the_model(make_user, llm):
    llm.reply(json.dumps({"summary": "The user is learning the violin.", "keywords": ["violins", "lessons"]}))
    user = make_user()
    add_page(user, "I started violin lessons.", "How do you like them?")
    add_page(user, "Unrelated.", "")
    segment = Segment.objects.get(user=user)
    assert segment.summary == "The user is learning the violin."
    assert segment.summary_source == "llm" and not segment.summary_stale
    assert {"violin", "lesson"} <= set(segment.keywords)
    assert "I started violin lessons." in llm.calls[0].prompt


def test_garbage_from_the_model_keeps_the_offline_summary_and_says_so(make_user, llm):
    llm.reply("this is not json", "{still not json")
    user = make_user()
    add_page(user, "I started violin lessons.", "How do you like them?")
    add_page(user, "Unrelated.", "")
    segment = Segment.objects.get(user=user)
    assert segment.summary_source == "offline" and "violin" in segment.summary.lower()
    assert not segment.summary_stale
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.MODEL_OUTPUT_REJECTED)
    assert event.payload["task"] == "segment_summary" and "2 attempts" in event.payload["error"]
    assert len(llm.calls) == 2  # one retry, then the offline result stands


def test_promotion_uses_the_models_extraction(make_user, llm, memory_env):
    # Promotion alone reads the facts here (not the turn): the model's replies are scripted in order.
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "HEAT_THRESHOLD": 0.5, "FACTS_AT_TURN": False}
    llm.reply(
        json.dumps({"summary": "Sailing.", "keywords": ["sailing"]}),
        json.dumps({"facts": ["User owns a sailboat named Wren"],
                    "agent_traits": ["Assistant suggested a sailing course"],
                    "traits": [{"key": "sports_interest", "evidence": "I sail every weekend"}]}),
    )
    user = make_user()
    add_page(user, "I sail my boat Wren every weekend.", "You could take an advanced sailing course.")
    add_page(user, "Unrelated.", "")
    assert list(KnowledgeFact.objects.filter(user=user).values_list("text", flat=True)) == [
        "User owns a sailboat named Wren"]
    trait = UserTrait.objects.get(user=user, key="sports_interest")
    assert trait.score == pytest.approx(0.15)  # 0 + 0.3 · 0.5 · (1 − 0)
    assert trait.evidence[0]["matched"] == ["I sail every weekend"]
    assert configured.vector_index().count(user_id=str(user.pk), kind="kb") == 1


@pytest.mark.slow
def test_a_recollection_is_summarised_by_the_model_with_its_dates(make_user, memory_env, openai_server):
    from django.utils import timezone

    from memory.models import Recollection
    from memory.policies.exocortex.services import recollections_make

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 2, "EXOCORTEX_RECOLLECTIONS": "off"}
    user = make_user()
    from tests.policies.exocortex.test_ranking import BREAD, LISBON

    for text in (*LISBON, *BREAD, "The weather is grey today.", "Remind me about my trip to Lisbon?"):
        add_page(user, text)
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "EXOCORTEX_RECOLLECTIONS": "always"}
    memory_env.LLM_ENABLED = True
    memory_env.OPENAI_API_KEY, memory_env.OPENAI_BASE_URL = openai_server.api_key, openai_server.base_url
    memory_env.OPENAI_TIMEOUT, memory_env.OPENAI_MAX_RETRIES = 3.0, 0
    configured.chat_model.cache_clear()
    openai_server.reply(json.dumps({"summary": "In Lisbon you heard fado, rode tram 28 and ate pastéis de nata."}))
    made = recollections_make(user_id=user.pk, now=timezone.now())
    assert made and made[0].text == "In Lisbon you heard fado, rode tram 28 and ate pastéis de nata."
    asked = openai_server.chat_requests()[0].body["messages"]
    assert "Recollect these memories" in asked[0]["content"]
    assert "New message: Remind me about my trip to Lisbon?" in asked[-1]["content"]
    assert f"[{timezone.now():%d %B %Y}]" in asked[-1]["content"] and "tram 28" in asked[-1]["content"]
    assert Recollection.objects.get(id=made[0].id).text == made[0].text
