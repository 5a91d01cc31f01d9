"""The OpenAI-compatible endpoint (/v1) through the official `openai` client and plain HTTP, against
the real ASGI application on a loopback port: a turn per request, stored once, recalled from,
streamed or not; OpenAI's error shapes; another person's token sees nothing."""

from __future__ import annotations

import math

import httpx
import openai
import pytest
from django.test import Client

from memory.models import DialoguePage, PageStatus, RetrievalTrace, Sona
from memory.services.tokens import token_create, token_revoke
from memory.services.users import sona_get_or_create
from memory.web.rate_limit import rate_limits_reset

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]
OFFLINE = "offline-engine"


@pytest.fixture(autouse=True)
def _fresh_buckets(memory_env):
    memory_env.MEMORYOS_CHAT = {**memory_env.MEMORYOS_CHAT, "RATE_BURST": 100}
    rate_limits_reset()
    yield
    rate_limits_reset()


@pytest.fixture
def ana(make_user):
    user = make_user("ana")
    return user, token_create(user=user, name="chat ui")[1]


@pytest.fixture
def ben(make_user):
    user = make_user("ben")
    return user, token_create(user=user, name="ben's app")[1]


def client_for(asgi_url: str, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{asgi_url}/v1", api_key=token, max_retries=0, timeout=120)


def ask(client: openai.OpenAI, text: str, model: str = OFFLINE, **extra):
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}], **extra)


def test_a_reply_arrives_the_turn_is_stored_once_and_the_next_turn_recalls_it(asgi_url, ana):
    user, token = ana
    client = client_for(asgi_url, token)

    told = ask(client, "My cat is called Miso and she sleeps on the piano.")
    page = DialoguePage.objects.get(user=user)
    assert page.query == "My cat is called Miso and she sleeps on the piano."
    assert page.status == PageStatus.COMPLETE and page.response == told.choices[0].message.content
    assert told.object == "chat.completion" and told.model == OFFLINE
    assert told.choices[0].finish_reason == "stop" and told.choices[0].message.role == "assistant"
    assert told.usage.completion_tokens == math.ceil(len(page.response) / 4)
    assert told.usage.prompt_tokens > 0
    assert told.usage.total_tokens == told.usage.prompt_tokens + told.usage.completion_tokens
    trace = RetrievalTrace.objects.get(user=user, page=page)  # the same trace as the browser chat's
    assert trace.query == page.query

    asked = ask(client, "What is my cat called?")
    assert "Miso" in asked.choices[0].message.content
    assert DialoguePage.objects.filter(user=user).count() == 2
    extra = asked.model_extra["memoryos"]
    assert extra["page_id"] == str(DialoguePage.objects.get(user=user, query="What is my cat called?").id)
    assert extra["offline"] is True and extra["recalled"] >= 1
    # The recall panel and the inspector show the turn, as for a message sent in the chat.
    browser = Client()
    browser.force_login(user)
    panel = browser.get(extra["recall_url"])
    assert panel.status_code == 200 and "Miso" in panel.content.decode()
    stm = browser.get(f"/inspector/{user.username}/stm/")
    assert stm.status_code == 200 and "What is my cat called?" in stm.content.decode()


def test_a_streamed_reply_arrives_in_chunks_and_ends_with_usage(asgi_url, ana):
    user, token = ana
    chunks = list(ask(client_for(asgi_url, token), "I am training for the Lisbon half marathon in March.",
                      stream=True, stream_options={"include_usage": True}))

    page = DialoguePage.objects.get(user=user)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == page.response and len(chunks) >= 4  # role, content (tokens batch as they queue), stop, usage
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == math.ceil(len(page.response) / 4)
    assert DialoguePage.objects.filter(user=user).count() == 1


def test_a_model_names_a_sona_and_the_models_are_the_persons_sonas(asgi_url, ana, ben):
    user, token = ana
    sona_get_or_create(user=user)  # the default sona, "assistant", as the chat page makes it
    coach = sona_get_or_create(user=user, name="Coach", profile="A running coach.")
    client = client_for(asgi_url, token)

    listed = {m.id: m.owned_by for m in client.models.list()}
    assert listed == {"Coach": "ana", "assistant": "ana", OFFLINE: "memoryos"}
    assert client.models.retrieve("Coach").id == "Coach"
    ask(client, "Remind me to stretch after runs.", model="coach")  # names compare as the chat's form does
    assert DialoguePage.objects.get(user=user).sona_id == coach.id
    ask(client, "Hello again.")  # the configured model: the default sona
    assert DialoguePage.objects.get(user=user, query="Hello again.").sona == Sona.objects.get(
        user=user, is_default=True)

    other = client_for(asgi_url, ben[1])
    assert {m.id for m in other.models.list()} == {"assistant", OFFLINE}
    with pytest.raises(openai.NotFoundError) as refused:
        ask(other, "What do you know about stretching?", model="Coach")
    assert refused.value.body["code"] == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        other.models.retrieve("Coach")
    assert not DialoguePage.objects.filter(user=ben[0]).exists()


def test_another_persons_token_recalls_nothing_of_the_first(asgi_url, ana, ben):
    ask(client_for(asgi_url, ana[1]), "My locker code at the pool is 4417.")
    reply = ask(client_for(asgi_url, ben[1]), "What is my locker code at the pool?").choices[0].message.content
    assert "4417" not in reply
    trace = RetrievalTrace.objects.get(user=ben[0])
    assert "4417" not in str(trace.payload)


def test_a_bad_or_revoked_key_is_refused_with_401(asgi_url, ana):
    user, token = ana
    with pytest.raises(openai.AuthenticationError) as refused:
        ask(client_for(asgi_url, "mos_nothing_here"), "Hello")
    assert refused.value.body["code"] == "invalid_api_key"
    token_revoke(user=user, token_id=user.api_tokens.get().id)
    with pytest.raises(openai.AuthenticationError):
        ask(client_for(asgi_url, token), "Hello")
    with pytest.raises(openai.AuthenticationError):
        client_for(asgi_url, token).models.list()
    assert not DialoguePage.objects.exists()


def test_earlier_messages_are_context_not_memories_unless_the_setting_says(asgi_url, ana, memory_env):
    user, token = ana
    history = [{"role": "system", "content": "You are terse."},
               {"role": "user", "content": "My sister Ines lives in Braga."},
               {"role": "assistant", "content": "Noted: Ines lives in Braga."},
               {"role": "user", "content": [{"type": "text", "text": "Where does she live?"},
                                            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]}]
    client = client_for(asgi_url, token)
    client.chat.completions.create(model=OFFLINE, messages=history)
    assert list(DialoguePage.objects.filter(user=user).values_list("query", flat=True)) == ["Where does she live?"]

    memory_env.MEMORYOS_OPENAI = {**memory_env.MEMORYOS_OPENAI, "STORE_CONTEXT": True}
    for _ in range(2):  # the same history twice: its exchange is stored once
        client.chat.completions.create(model=OFFLINE, messages=history[:3] + [
            {"role": "user", "content": "And her husband?"}])
    stored = DialoguePage.objects.filter(user=user)
    assert stored.filter(query="My sister Ines lives in Braga.", response="Noted: Ines lives in Braga.").count() == 1
    assert stored.filter(query="And her husband?").count() == 2
    assert stored.count() == 4


def test_the_models_prompt_carries_memory_then_the_clients_context_then_the_turn(asgi_url, ana, memory_env,
                                                                                 chat_model):
    user, token = ana
    memory_env.OPENAI_CHAT_MODEL = chat_model.name = "test-chat"
    chat_model.reply("Noted, Ines is in Braga.", "She lives in Braga.")
    client = client_for(asgi_url, token)
    ask(client, "My sister Ines lives in Braga.", model="test-chat")

    reply = client.chat.completions.create(model="test-chat", messages=[
        {"role": "user", "content": "Let's talk about family."}, {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "Where does my sister live?"}])
    assert reply.choices[0].message.content == "She lives in Braga."
    assert reply.model_extra["memoryos"]["reply_model"] == "test-chat"
    sent = chat_model.calls[-1].messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert "Ines lives in Braga" in sent[0].content  # what was recalled, in the system message
    assert [m.content for m in sent[1:]] == ["Let's talk about family.", "Sure.", "Where does my sister live?"]


def post(asgi_url: str, token: str | None, body, **headers) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    content = body if isinstance(body, bytes) else None
    return httpx.post(f"{asgi_url}/v1/chat/completions", headers={**auth, **headers}, timeout=60,
                      content=content, json=None if content is not None else body)


def error_of(response: httpx.Response) -> dict:
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


USER = [{"role": "user", "content": "Hello there."}]


@pytest.mark.parametrize("body, param, words", [
    (b"{not json", None, "not valid JSON"),
    ([1, 2], None, "JSON object"),
    ({"messages": USER}, "model", "'model' is required"),
    ({"model": OFFLINE, "messages": []}, "messages", "non-empty list"),
    ({"model": OFFLINE, "messages": [{"role": "assistant", "content": "Hi"}]}, "messages", "must be the user's"),
    ({"model": OFFLINE, "messages": [{"role": "user", "content": "   "}]}, "messages", "no text"),
    ({"model": OFFLINE, "messages": [{"role": "user", "content": 7}]}, "messages", "string or a list"),
    ({"model": OFFLINE, "messages": [{"role": "user", "content": "x" * 4001}]}, "messages", "the limit is 4000"),
    ({"model": OFFLINE, "messages": USER, "n": 2}, "n", "'n' must be 1"),
    ({"model": OFFLINE, "messages": USER, "temperature": 3}, "temperature", "from 0 to 2"),
    ({"model": OFFLINE, "messages": USER, "stream": "yes"}, "stream", "true or false"),
    ({"model": OFFLINE, "messages": [{"role": "user", "content": "a\u0000b"}]}, "body.messages[0].content",
     "NUL character"),
    (b'{"model": "offline-engine", "messages": [{"role": "system", "content": "x\\ud800"}, '
     b'{"role": "user", "content": "hi"}]}', "body.messages[0].content", "lone surrogate"),
])
def test_requests_openai_would_refuse_get_400_in_its_shape_and_store_nothing(asgi_url, ana, body, param, words):
    response = post(asgi_url, ana[1], body)
    assert response.status_code == 400
    error = error_of(response)
    assert error["type"] == "invalid_request_error" and error["param"] == param and words in error["message"]
    assert not DialoguePage.objects.exists()


def test_parameters_this_endpoint_does_not_use_are_accepted(asgi_url, ana):
    response = post(asgi_url, ana[1], {
        "model": OFFLINE, "messages": USER, "temperature": 0.2, "top_p": 0.9, "max_tokens": 50, "seed": 7,
        "user": "end-user-1", "presence_penalty": 0.5, "frequency_penalty": 0, "n": 1, "stop": ["\n\n"],
        "tools": [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}],
        "response_format": {"type": "text"}, "metadata": {"app": "test"}, "logprobs": False})
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"]


def test_unknown_routes_methods_large_bodies_and_rate_limits_answer_in_openais_shape(asgi_url, ana, memory_env):
    token = ana[1]
    assert httpx.get(f"{asgi_url}/v1/chat/completions", headers={"Authorization": f"Bearer {token}"}).status_code == 405
    missing = httpx.post(f"{asgi_url}/v1/embeddings", json={}, headers={"Authorization": f"Bearer {token}"})
    assert missing.status_code == 404 and error_of(missing)["code"] == "unknown_url"
    unauthorised = post(asgi_url, None, {"model": OFFLINE, "messages": USER})
    assert unauthorised.status_code == 401 and unauthorised.headers["www-authenticate"].startswith("Bearer")
    memory_env.MEMORYOS_OPENAI = {**memory_env.MEMORYOS_OPENAI, "MAX_BODY_BYTES": 2000}
    large = post(asgi_url, token, {"model": OFFLINE, "messages": [{"role": "user", "content": "y" * 3000}]})
    assert large.status_code == 413 and error_of(large)["code"] == "request_too_large"

    memory_env.MEMORYOS_CHAT = {**memory_env.MEMORYOS_CHAT, "RATE_BURST": 1, "RATE_PER_MINUTE": 1}
    rate_limits_reset()
    assert post(asgi_url, token, {"model": OFFLINE, "messages": USER}).status_code == 200
    limited = post(asgi_url, token, {"model": OFFLINE, "messages": USER})
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert error_of(limited)["code"] == "rate_limit_exceeded"
    assert DialoguePage.objects.count() == 1
