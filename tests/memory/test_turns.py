"""The turn write path: store first, recall, reply, complete; bad input; LLM failures."""

from __future__ import annotations

import pytest

from memory import components
from memory.models import DialoguePage, LifecycleEvent, PageStatus, RetrievalTrace, Tier
from memory.selectors import memory_stats
from memory.services import MemoryInputError, page_start, turn_run, user_get

pytestmark = pytest.mark.usefixtures("memory_env")


def test_turn_stores_page_reply_and_trace(make_user):
    user = make_user()
    tokens: list[str] = []
    result = turn_run(user=user, message="Hi, my name is Ana and I love climbing.", on_token=tokens.append)
    page = DialoguePage.objects.get(user=user)
    assert page.status == PageStatus.COMPLETE
    assert page.response == result.reply and "".join(tokens) == result.reply
    assert page.reply_model == "offline-engine" and result.offline
    assert page.tier == Tier.STM and page.seq == 1
    assert len(page.embedding) == 384 * 4
    assert "climb" in " ".join(page.keywords)
    trace = RetrievalTrace.objects.get(user=user)
    assert trace.page_id == page.id and trace.prompt_tokens == result.prompt.tokens > 0
    assert components.vector_index().count(user_id=str(user.pk), kind="page") == 1


@pytest.mark.parametrize("bad", ["", "   ", "x" * 5000])
def test_bad_message_is_refused_and_nothing_stored(make_user, bad):
    user = make_user()
    with pytest.raises(MemoryInputError) as err:
        turn_run(user=user, message=bad)
    assert "empty" in str(err.value) or "limit is 4000" in str(err.value)
    assert DialoguePage.objects.filter(user=user).count() == 0


def test_unknown_user_is_a_clear_error(make_user):
    with pytest.raises(MemoryInputError, match="Unknown user 'nobody'"):
        user_get(username="nobody")


def test_eighth_turn_moves_oldest_page_to_mtm(make_user):
    user = make_user()
    for i in range(8):
        turn_run(user=user, message=f"Message number {i} about my garden and tomatoes.")
    stm = list(DialoguePage.objects.filter(user=user, tier=Tier.STM).order_by("seq").values_list("seq", flat=True))
    mtm = list(DialoguePage.objects.filter(user=user, tier=Tier.MTM).values_list("seq", flat=True))
    assert stm == [2, 3, 4, 5, 6, 7, 8]
    assert mtm == [1]
    moved = DialoguePage.objects.get(user=user, seq=1)
    assert moved.segment is not None and moved.moved_at is not None
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.MOVED_TO_MTM).count() == 1
    hits = components.vector_index().search(user_id=str(user.pk), vector=list(moved.to_engine().embedding),
                                            limit=1, kind="page", match={"tier": "mtm"})
    assert [h.id for h in hits] == [str(moved.id)]


def test_llm_down_falls_back_to_offline_and_keeps_the_turn(make_user, memory_env, openai_server):
    openai_server.fail("http_500", times=None)
    memory_env.LLM_ENABLED = True
    memory_env.OPENAI_API_KEY = "sk-test"
    memory_env.OPENAI_BASE_URL = openai_server.base_url
    memory_env.OPENAI_TIMEOUT = 2.0
    memory_env.OPENAI_MAX_RETRIES = 0
    components.chat_model.cache_clear()
    user = make_user()
    result = turn_run(user=user, message="Remember that my sister lives in Lisbon.")
    page = DialoguePage.objects.get(user=user)
    assert page.status == PageStatus.COMPLETE and page.query == "Remember that my sister lives in Lisbon."
    assert result.offline and "offline memory engine" in result.reply
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.REPLY_FALLBACK).exists()


def test_llm_reply_streams_from_the_model(make_user, memory_env, openai_server):
    openai_server.reply("Nice to meet you, Ana!")
    memory_env.LLM_ENABLED = True
    memory_env.OPENAI_API_KEY = "sk-test"
    memory_env.OPENAI_BASE_URL = openai_server.base_url
    components.chat_model.cache_clear()
    user = make_user()
    tokens: list[str] = []
    result = turn_run(user=user, message="Hello, I'm Ana.", on_token=tokens.append)
    assert result.reply == "Nice to meet you, Ana!" and len(tokens) > 1
    assert not result.offline
    sent = openai_server.chat_requests()[-1].body
    assert sent["stream"] is True
    assert sent["messages"][-1] == {"role": "user", "content": "Hello, I'm Ana."}
    assert "# Memory" in sent["messages"][0]["content"]


def test_message_is_stored_before_the_model_is_called(make_user, memory_env, monkeypatch):
    user = make_user()
    seen = {}

    def exploding_model(**kwargs):
        seen["pages"] = list(DialoguePage.objects.filter(user=user).values_list("query", "status"))
        raise RuntimeError("boom")

    monkeypatch.setattr("memory.services.generate_reply", exploding_model)
    with pytest.raises(RuntimeError):
        turn_run(user=user, message="Keep this one safe.")
    assert seen["pages"] == [("Keep this one safe.", PageStatus.PENDING)]
    assert DialoguePage.objects.filter(user=user, query="Keep this one safe.").exists()


def test_stats_count_tiers(make_user):
    user = make_user()
    page_start(user=user, query="pending one")
    stats = memory_stats(user=user)
    assert stats["pending_pages"] == 1 and stats["stm_pages"] == 0 and stats["total_pages"] == 1


def test_vector_store_down_degrades_to_stm_and_keeps_the_turn(make_user, monkeypatch):
    user = make_user()
    turn_run(user=user, message="I grow chillies on my balcony.")

    def broken_search(**kwargs):
        raise ConnectionError("qdrant is unreachable")

    monkeypatch.setattr(components.vector_index(), "search", broken_search)
    stored = []
    result = turn_run(user=user, message="What do I grow?", on_stored=lambda p: stored.append((p.query, p.status)))
    assert stored == [("What do I grow?", PageStatus.PENDING)]
    assert result.page.status == PageStatus.COMPLETE
    assert [i.kind for i in result.recall.items] == ["stm_page"]
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.RECALL_DEGRADED).count() == 1
