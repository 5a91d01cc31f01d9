"""The turn write path: store first, recall, reply, complete; bad input; LLM failures."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from django.urls import reverse

from memory.adapters import configured
from memory.models import DialoguePage, LifecycleEvent, PageStatus, RetrievalTrace, Tier, vector_to_bytes
from memory.selectors.recall_panel import turn_recall
from memory.selectors.stats import memory_stats
from memory.services.common import MemoryInputError
from memory.services.pages import page_start
from memory.services.turns import turn_run
from memory.services.users import sona_get_or_create, user_get

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
    assert configured.vector_index().count(user_id=str(user.pk), kind="page") == 1


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
    hits = configured.vector_index().search(user_id=str(user.pk), vector=list(moved.to_engine().embedding),
                                            limit=1, kind="page", match={"tier": "mtm"})
    assert [h.id for h in hits] == [str(moved.id)]


def test_llm_down_falls_back_to_offline_and_keeps_the_turn(make_user, memory_env, openai_server):
    openai_server.fail("http_500", times=None)
    memory_env.LLM_ENABLED = True
    memory_env.OPENAI_API_KEY = "sk-test"
    memory_env.OPENAI_BASE_URL = openai_server.base_url
    memory_env.OPENAI_TIMEOUT = 2.0
    memory_env.OPENAI_MAX_RETRIES = 0
    configured.chat_model.cache_clear()
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
    configured.chat_model.cache_clear()
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

    monkeypatch.setattr("memory.services.turns.generate_reply", exploding_model)
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

    monkeypatch.setattr(configured.vector_index(), "search", broken_search)
    stored = []
    result = turn_run(user=user, message="What do I grow?", on_stored=lambda p: stored.append((p.query, p.status)))
    assert stored == [("What do I grow?", PageStatus.PENDING)]
    assert result.page.status == PageStatus.COMPLETE
    assert [i.kind for i in result.recall.items] == ["stm_page"]
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.RECALL_DEGRADED).count() == 1


NEWCOMER_FACTS = [
    "My name is Sam Rivera and I work as a marine biologist in Lisbon.",
    "I have a golden retriever called Biscuit who is four years old.",
    "My sister Lena lives in Berlin.",
    "I play the cello in a community orchestra on Thursdays.",
    "I'm allergic to peanuts.",
    "My favourite food is grilled octopus.",
    "I'm training for the Lisbon half marathon in October.",
    "My best friend Joana is a nurse in Porto.",
    "I drive an old blue Vespa to work.",
    "I'm learning Japanese for a trip to Kyoto next spring.",
]


@pytest.mark.slow
@pytest.mark.real_adapters  # "my dog's name" finds "my dog is called Biscuit" by meaning, not words
def test_a_newcomers_statements_are_remembered_and_questions_answered_from_them(make_user):
    """The run the issue describes, on the real model: ten statements, then questions about them."""
    from memory.services.long_term import profile_update

    user = make_user("sam")
    profile_update(user=user, name="Sam Rivera")
    user.refresh_from_db()
    coach = sona_get_or_create(user=user, name="coach", profile="A patient running coach who plans training weeks")
    for fact in NEWCOMER_FACTS:
        reply = turn_run(user=user, message=fact, sona=coach).reply
        assert reply.startswith("Got it, Sam Rivera. I'll remember that "), reply
        assert "don't recall" not in reply and "coach:" not in reply
    assert memory_stats(user=user)["mtm_pages"] >= 3  # the first facts left STM: hybrid recall finds them
    for question, answer in [("What is my dog's name?", "Biscuit"), ("Where does my sister live?", "Berlin"),
                             ("What instrument do I play?", "cello"), ("What am I allergic to?", "peanuts"),
                             ("Which language am I learning?", "Japanese")]:
        reply = turn_run(user=user, message=question, sona=coach).reply
        # the first memory cited answers it, or the fact read from the turn that said it (issue 34)
        first = reply.split("“")[1] if "“" in reply else reply
        assert answer in first, (question, reply)
        assert "From what I know of you" not in reply and "running coach" not in reply


def test_a_reply_that_never_stops_is_cut_at_the_token_cap(make_user, memory_env, openai_server):
    # A runaway model on a server that ignores max_tokens streams until its context is full.
    openai_server.honour_max_tokens = False
    openai_server.reply("and again")
    openai_server.fail("never_stop")
    openai_server.serve_chat(memory_env, REPLY_MAX_TOKENS=25)
    user = make_user()

    result = turn_run(user=user, message="Tell me a story.")

    assert openai_server.chat_requests()[-1].body["max_tokens"] == 25
    assert not result.offline
    assert len(DialoguePage.objects.get(user=user).response.split()) == 25


def test_a_model_that_never_answers_falls_back_after_the_first_token_timeout(make_user, memory_env,
                                                                             openai_server):
    openai_server.fail("hang", times=None)
    # Before the first-token timeout this turn waited OPENAI_TIMEOUT x 2 attempts (20 s here).
    openai_server.serve_chat(memory_env, OPENAI_TIMEOUT=10.0, OPENAI_MAX_RETRIES=1,
             OPENAI_FIRST_TOKEN_TIMEOUT=0.3)
    user = make_user()
    started = time.monotonic()

    result = turn_run(user=user, message="Remember that my sister lives in Lisbon.")

    assert time.monotonic() - started < 8.0
    assert result.offline and "first-token timeout" in result.fallback_reason
    assert DialoguePage.objects.get(user=user).status == PageStatus.COMPLETE


def test_after_repeated_failures_replies_skip_the_model_and_the_recall_panel_says_so(make_user, memory_env,
                                                                                      openai_server):
    openai_server.fail("http_500", times=None)
    openai_server.serve_chat(memory_env, OPENAI_MAX_RETRIES=0, LLM_BREAKER_FAILURES=2,
             LLM_BREAKER_COOL_OFF_S=600.0)
    user = make_user()
    for text in ("First message.", "Second message."):
        turn_run(user=user, message=text)
    asked = len(openai_server.chat_requests())

    result = turn_run(user=user, message="Third message, while the model cools off.")

    assert len(openai_server.chat_requests()) == asked  # the model was not asked
    assert result.offline and "circuit breaker open" in result.fallback_reason
    event = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.REPLY_FALLBACK).latest("occurred_at")
    assert event.payload["breaker_open"] is True
    assert turn_recall(user=user, page_id=result.page.id).breaker_open
    assert not turn_recall(user=user, page_id=DialoguePage.objects.get(user=user, seq=1).id).breaker_open
    client = Client()
    client.force_login(user)
    panel = client.get(reverse("turn_recall", args=[result.page.id])).content.decode()
    assert "circuit breaker was open" in panel


class CountingEmbedder:
    """The configured embedder, with every text it was asked to embed written down."""

    def __init__(self, real) -> None:
        self.real, self.texts = real, []

    def embed(self, texts):
        self.texts.extend(texts)
        return self.real.embed(texts)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def counting_embedder(monkeypatch):
    spy = CountingEmbedder(configured.embedder())
    monkeypatch.setattr(configured, "embedder", lambda: spy)
    return spy


def test_an_offline_reply_page_is_stored_with_the_recalls_query_vector(make_user, counting_embedder):
    # The offline reply's page is indexed by the message alone (page_text): the same words the
    # recall embeds, so the message is embedded once, not once for the recall and once for the page.
    user = make_user()
    sona_get_or_create(user=user)
    counting_embedder.texts.clear()  # the sona's name
    message = "My sister moved to Lisbon last spring."
    turn_run(user=user, message=message)
    assert counting_embedder.texts.count(message) == 1  # (maintenance, inline here, embeds what it makes)
    page = DialoguePage.objects.get(user=user)
    assert page.embedding == vector_to_bytes(configured.embedder().embed([message])[0])
    hits = configured.vector_index().search(user_id=str(user.pk), vector=list(page.to_engine().embedding),
                                            limit=1, kind="page")
    assert [h.id for h in hits] == [str(page.id)]
    # The recall waited for the turn's embedding where it waits for its own, and traced it so.
    trace = RetrievalTrace.objects.get(user=user)
    assert trace.payload["embedding_ms"] > 0
    assert "embedding wait" in trace.payload["timings_order"]
    assert sum(trace.payload["timings_ms"].values()) == pytest.approx(trace.latency_ms, abs=0.5)


def test_a_model_reply_page_is_embedded_with_its_reply(make_user, chat_model, counting_embedder):
    user = make_user()
    sona_get_or_create(user=user)
    counting_embedder.texts.clear()  # the sona's name
    message = "What should I plant in May?"
    result = turn_run(user=user, message=message)
    assert not result.offline
    said = f"{message}\n{result.reply}"
    asked = list(counting_embedder.texts)
    assert asked.count(message) == 1 and asked.count(said) == 1 and asked.index(message) < asked.index(said)
    page = DialoguePage.objects.get(user=user)
    assert page.embedding == vector_to_bytes(configured.embedder().embed([said])[0])


def test_a_turns_trace_is_written_once_with_what_entered_its_prompt(make_user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    user = make_user()
    turn_run(user=user, message="My sister moved to Lisbon last spring.")  # STM has a page to recall
    with CaptureQueriesContext(connection) as queries:
        result = turn_run(user=user, message="Where does my sister live now?")
    writes = [q["sql"].split(None, 1)[0].upper() for q in queries.captured_queries
              if "memory_retrievaltrace" in q["sql"] and not q["sql"].lstrip().upper().startswith("SELECT")]
    assert writes == ["INSERT"]  # the prompt goes in with it, not in an UPDATE after
    trace = RetrievalTrace.objects.get(page=result.page)
    assert trace.prompt_tokens == result.prompt.tokens > 0
    assert trace.payload["prompt"]["included"] == [f"{item.kind}:{item.ref}" for item in result.prompt.included]
    assert f"stm_page:{DialoguePage.objects.get(user=user, seq=1).id}" in trace.payload["prompt"]["included"]
    assert trace.payload["prompt"]["tokens"] == result.prompt.tokens
    # the prompt's assembly is not the recall's time: the stored parts still add up to it
    assert sum(trace.payload["timings_ms"].values()) == pytest.approx(trace.latency_ms, abs=0.5)
