"""The chat websocket, through the real ASGI application: auth, streaming, bad frames, rate limit,
several tabs of one user, and a tab closed mid-reply. Runs on the in-memory channel layer and,
when a Redis server answers on 127.0.0.1:6379, on the Redis layer as well."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client

from memory.adapters import configured
from memory.models import DialoguePage, PageStatus, RetrievalTrace, Sona
from memory.runtime.background import turns_drain
from memory.services.files import file_upload
from memory.web.rate_limit import rate_limits_reset
from tests.conftest import REDIS_HOST, REDIS_PORT, redis_available

pytestmark = pytest.mark.usefixtures("memory_env")

TIMEOUT = 60


@pytest.fixture(params=["in-memory", "redis"])
async def channel_layer(request, settings):
    """Each test once per channel layer; Redis gets a private key prefix, flushed afterwards."""
    if request.param == "redis":
        if not redis_available():
            pytest.skip(f"no Redis server at {REDIS_HOST}:{REDIS_PORT}")
        settings.CHANNEL_LAYERS = {"default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://{REDIS_HOST}:{REDIS_PORT}/0"],
                       "prefix": f"memoryos-test-{uuid.uuid4().hex[:12]}"}}}
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_BURST": 100}
    rate_limits_reset()
    yield request.param
    await turns_drain(TIMEOUT)
    layer = get_channel_layer()
    if request.param == "redis":
        await layer.flush()
        await layer.close_pools()
    rate_limits_reset()


def _session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


@pytest.fixture
def ana(make_user):
    user = make_user("ana")
    return user, _session_cookie(user)


@pytest.fixture
def ben(make_user):
    user = make_user("ben")
    return user, _session_cookie(user)


def socket_for(cookie: str | None) -> WebsocketCommunicator:
    from memoryos_site.asgi import application

    headers = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, "/ws/chat/", headers=headers)


async def open_socket(cookie: str) -> WebsocketCommunicator:
    communicator = socket_for(cookie)
    connected, _ = await communicator.connect()
    assert connected
    ready = await communicator.receive_json_from(TIMEOUT)
    assert ready["type"] == "ready"
    return communicator


async def frames_until(communicator, done, timeout: float = TIMEOUT) -> list[dict]:
    """Frames up to and including the first for which done(frame) is true."""
    frames = []
    while True:
        frame = await communicator.receive_json_from(timeout)
        frames.append(frame)
        if done(frame):
            return frames


def final(frame: dict) -> bool:
    return frame["type"] in ("turn.done", "turn.error")


class GatedModel:
    """A chat model that streams some tokens, then waits for the test to let it finish."""

    name = "gated-test-model"
    offline = False

    def __init__(self, tokens: list[str], pause_after: int):
        self.tokens = tokens
        self.pause_after = pause_after
        self.paused = threading.Event()
        self.proceed = threading.Event()

    def stream(self, messages, *, max_tokens=None):
        for i, token in enumerate(self.tokens):
            if i == self.pause_after:
                self.paused.set()
                assert self.proceed.wait(TIMEOUT), "the test never released the model"
            yield token

    def complete(self, messages, *, max_tokens=None, json_mode=False):
        raise NotImplementedError


@pytest.fixture
def gated_model(monkeypatch):
    model = GatedModel(["Hello ", "there, ", "I ", "remember ", "you."], pause_after=2)

    def factory():
        return model

    factory.cache_clear = lambda: None  # memory_env clears the real factory's cache
    monkeypatch.setattr(configured, "chat_model", factory)
    yield model
    model.proceed.set()


@database_sync_to_async
def pages_of(user) -> list[DialoguePage]:
    return list(DialoguePage.objects.filter(user=user).order_by("seq"))


# --- tests ------------------------------------------------------------------------------------

async def test_unauthenticated_socket_is_refused(channel_layer):
    communicator = socket_for(None)
    connected, code = await communicator.connect()
    assert not connected and code == 4401


async def test_socket_with_a_foreign_origin_is_refused(channel_layer, ana):
    from memoryos_site.asgi import application

    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=[
        (b"origin", b"http://evil.example"), (b"cookie", ana[1].encode())])
    connected, _ = await communicator.connect()
    assert not connected


@pytest.mark.parametrize("origin", [b"http://testserver:9999", b"http://testserver:8000", b"http://localhost",
                                    b"null", b"file://testserver"])
async def test_socket_from_another_port_or_scheme_of_an_allowed_host_is_refused(channel_layer, ana, origin):
    """Another server on the same machine (another port) is another origin: it gets no socket with
    the person's cookie."""
    from memoryos_site.asgi import application

    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=[
        (b"origin", origin), (b"host", b"testserver"), (b"cookie", ana[1].encode())])
    connected, _ = await communicator.connect()
    assert not connected


async def test_socket_from_the_same_host_and_port_opens(channel_layer, ana):
    from memoryos_site.asgi import application

    communicator = WebsocketCommunicator(application, "/ws/chat/", headers=[
        (b"origin", b"http://localhost:8000"), (b"host", b"localhost:8000"), (b"cookie", ana[1].encode())])
    connected, _ = await communicator.connect()
    assert connected
    await communicator.disconnect()


async def test_reply_streams_token_by_token_then_a_final_frame(channel_layer, ana, gated_model):
    user, cookie = ana
    tab = await open_socket(cookie)
    await tab.send_json_to({"type": "message", "text": "Hi, I am Ana and I like sailing."})
    frames = await frames_until(tab, lambda f: f["type"] == "turn.token" and "there" in f["text"])
    assert [f["type"] for f in frames[:2]] == ["turn.user", "turn.started"]
    assert frames[0]["text"] == "Hi, I am Ana and I like sailing." and frames[0]["sona"] == "assistant"
    assert gated_model.paused.wait(TIMEOUT)
    # Mid-reply: the message is stored already, the reply not yet.
    [page] = await pages_of(user)
    assert page.status == PageStatus.PENDING and page.query == "Hi, I am Ana and I like sailing."
    gated_model.proceed.set()
    frames += await frames_until(tab, final)
    tokens = [f["text"] for f in frames if f["type"] == "turn.token"]
    done = frames[-1]
    assert done["type"] == "turn.done" and len(tokens) >= 2
    assert "".join(tokens) == done["reply"] == "Hello there, I remember you."
    assert done["turn_id"] == frames[0]["turn_id"] and done["model"] == "gated-test-model"
    [page] = await pages_of(user)
    assert page.status == PageStatus.COMPLETE and page.response == done["reply"]
    assert done["page_id"] == str(page.id) and done["seq"] == page.seq == 1
    assert done["recall_url"] == f"/chat/turns/{page.id}/recall/"
    assert await database_sync_to_async(RetrievalTrace.objects.filter(page=page).exists)()
    await tab.disconnect()


async def test_a_turns_frames_do_not_hop_to_the_shared_database_thread(channel_layer, ana, monkeypatch):
    # Channels closes the old database connections of the thread every socket shares before each
    # handler; a turn's frames (every token batch, to every tab) need no database, and under a
    # burst those hops queued the messages' checks behind them. A message still gets its hop.
    import channels.consumer

    hops: list[int] = []
    real = channels.consumer.aclose_old_connections

    async def counted():
        hops.append(1)
        await real()

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", counted)
    user, cookie = ana
    tab = await open_socket(cookie)
    before = len(hops)
    await tab.send_json_to({"type": "message", "text": "Tell me something about sailing, please."})
    frames = await frames_until(tab, final)
    assert frames[-1]["type"] == "turn.done" and len(frames) >= 4  # turn.user, turn.started, tokens, turn.done
    assert len(hops) - before == 1  # the message's, none for the frames
    await tab.disconnect()


async def test_opening_a_socket_makes_a_new_users_default_sona_before_any_message(channel_layer, ana):
    # The chat page makes it as it loads; a socket opened without the page makes it in the
    # background, so that the first message does not wait for it (it embeds the sona's name).
    user, cookie = ana
    tab = await open_socket(cookie)

    def sonas():
        return list(Sona.objects.filter(user=user).values_list("name", "is_default"))

    def embedded() -> bool:  # made, and its name embedded
        return Sona.objects.filter(user=user).exclude(name_embedding=b"").exists()

    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not await database_sync_to_async(embedded)():
        assert asyncio.get_running_loop().time() < deadline, "the default sona was never made"
        await asyncio.sleep(0.05)
    assert await database_sync_to_async(sonas)() == [("assistant", True)]
    await tab.send_json_to({"type": "message", "text": "Hello again."})
    frames = await frames_until(tab, final)
    assert frames[0]["sona"] == "assistant" and frames[-1]["type"] == "turn.done"
    assert await database_sync_to_async(sonas)() == [("assistant", True)]  # made once
    await tab.disconnect()


async def test_reply_uses_the_chosen_persona(channel_layer, ana):
    user, cookie = ana
    chef = await database_sync_to_async(Sona.objects.create)(user=user, name="chef",
                                                             profile="A cheerful cook.")
    tab = await open_socket(cookie)
    await tab.send_json_to({"type": "message", "text": "What should I cook tonight?", "sona": str(chef.id)})
    frames = await frames_until(tab, final)
    assert frames[0]["sona"] == "chef" and frames[-1]["type"] == "turn.done" and frames[-1]["sona"] == "chef"
    [page] = await pages_of(user)
    assert page.sona_id == chef.id
    await tab.disconnect()


@pytest.mark.parametrize("raw, code", [
    (b"\x00binary", "bad_frame"),
    ("this is not json", "bad_json"),
    ("[1, 2, 3]", "bad_frame"),
    (json.dumps({"type": "dance"}), "unknown_type"),
    (json.dumps({"type": "message"}), "invalid"),
    (json.dumps({"type": "message", "text": "   "}), "invalid"),
    (json.dumps({"type": "message", "text": {"nested": "object"}}), "invalid"),
    (json.dumps({"type": "message", "text": "x" * 5000}), "invalid"),
    (json.dumps({"type": "message", "text": "x" * 20_000}), "too_large"),
    (json.dumps({"type": "message", "text": "hi", "files": "bafkrei"}), "invalid"),
    (json.dumps({"type": "message", "text": "hi", "files": [1, 2]}), "invalid"),
    (json.dumps({"type": "message", "text": "hi", "files": ["x"] * 6}), "invalid"),
    (json.dumps({"type": "message", "text": "hi", "sona": "not-a-uuid"}), "unknown_sona"),
    # a fixed id no sona has: a random one would name the test differently in each xdist worker
    (json.dumps({"type": "message", "text": "hi", "sona": "5fd04383-6432-483e-b5d4-d8b7c9af66cd"}), "unknown_sona"),
])
async def test_bad_frames_get_an_error_frame_and_the_socket_lives_on(channel_layer, ana, raw, code):
    user, cookie = ana
    tab = await open_socket(cookie)
    if isinstance(raw, bytes):
        await tab.send_to(bytes_data=raw)
    else:
        await tab.send_to(text_data=raw)
    error = await tab.receive_json_from(TIMEOUT)
    assert error["type"] == "error" and error["code"] == code and error["error"]
    assert await pages_of(user) == []
    await tab.send_json_to({"type": "message", "text": "Still there?"})
    frames = await frames_until(tab, final)
    assert frames[-1]["type"] == "turn.done"
    await tab.disconnect()


async def test_a_message_carries_its_uploaded_files_and_not_another_users(channel_layer, ana, ben):
    user, cookie = ana
    mine = await database_sync_to_async(file_upload)(user=user, name="notes.txt", data=b"Key box code 5521.")
    theirs = await database_sync_to_async(file_upload)(user=ben[0], name="bob.txt", data=b"Locker code 4417.")
    tab = await open_socket(cookie)
    await tab.send_json_to({"type": "message", "text": "My notes.", "files": [mine.content_cid]})
    done = (await frames_until(tab, final))[-1]
    assert done["type"] == "turn.done"
    assert [(f["name"], f["cid"]) for f in done["files"]] == [("notes.txt", mine.content_cid)]
    assert done["files"][0]["url"] == f"/api/memory/files/{mine.content_cid}/content"
    await tab.send_json_to({"type": "message", "text": "Their notes.", "files": [theirs.content_cid]})
    refused = await tab.receive_json_from(TIMEOUT)
    # Refused before the message is shown as started, naming the route that uploads (issue 35).
    assert refused == {"type": "error", "code": "invalid", "error": f"No uploaded file with content id "
                       f"{theirs.content_cid!r} here; upload it first (POST /api/memory/files)."}
    assert await tab.receive_nothing(timeout=0.3)  # no turn.user, no turn.started
    assert [p.query for p in await pages_of(user)] == ["My notes."]
    await tab.disconnect()


async def test_a_frame_nested_5000_deep_gets_a_clear_error_and_logs_no_traceback(channel_layer, ana, caplog):
    """It got an "internal" error and a logged traceback (json's parser recursing past Python's limit)."""
    tab = await open_socket(ana[1])
    with caplog.at_level(logging.WARNING):
        await tab.send_to(text_data="[" * 5000 + "]" * 5000)
        error = await tab.receive_json_from(TIMEOUT)
        await tab.send_to(text_data='{"a":' * 2500 + "1" + "}" * 2500)
        nested_object = await tab.receive_json_from(TIMEOUT)
    assert error["type"] == "error" and error["code"] == "bad_json" and "deeper" in error["error"]
    assert nested_object["code"] == "bad_json"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    await tab.send_json_to({"type": "message", "text": "Still here?"})  # the socket lives on
    assert (await frames_until(tab, final))[-1]["type"] == "turn.done"
    await tab.disconnect()


async def test_a_socket_cannot_use_another_users_persona(channel_layer, ana, ben):
    ben_user, _ = ben
    bens_coach = await database_sync_to_async(Sona.objects.create)(user=ben_user, name="coach")
    tab = await open_socket(ana[1])
    await tab.send_json_to({"type": "message", "text": "hello", "sona": str(bens_coach.id),
                            "user": ben_user.pk})
    error = await tab.receive_json_from(TIMEOUT)
    assert error["code"] == "unknown_sona"
    assert await pages_of(ben_user) == [] and await pages_of(ana[0]) == []
    await tab.disconnect()


async def test_a_flood_is_rate_limited_with_a_clear_message(channel_layer, ana, settings):
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_BURST": 2, "RATE_PER_MINUTE": 0.5}
    rate_limits_reset()
    user, cookie = ana
    tab = await open_socket(cookie)
    for i in range(4):
        await tab.send_json_to({"type": "message", "text": f"Flood message {i} about kayaks."})
    frames = []
    while sum(f["type"] == "turn.done" for f in frames) < 2 or sum(f["type"] == "error" for f in frames) < 2:
        frames.append(await tab.receive_json_from(TIMEOUT))
    errors = [f for f in frames if f["type"] == "error"]
    assert {e["code"] for e in errors} == {"rate_limited"}
    assert "too fast" in errors[0]["error"] and errors[0]["retry_after"] > 0
    # each refusal names the message it refused, for the page to give back (issue 50, finding 8)
    assert [e["text"] for e in errors] == ["Flood message 2 about kayaks.", "Flood message 3 about kayaks."]
    await turns_drain(TIMEOUT)
    assert [p.query for p in await pages_of(user)] == ["Flood message 0 about kayaks.",
                                                       "Flood message 1 about kayaks."]
    await tab.disconnect()


async def test_two_tabs_of_one_user_both_see_every_turn_stored_once_in_order(channel_layer, ana, ben):
    user, cookie = ana
    left, right = await open_socket(cookie), await open_socket(cookie)
    stranger = await open_socket(ben[1])
    await left.send_json_to({"type": "message", "text": "From the left tab: I grow tomatoes."})
    await right.send_json_to({"type": "message", "text": "From the right tab: I also keep bees."})
    seen = {}
    for name, tab in (("left", left), ("right", right)):
        frames = []
        while sum(f["type"] == "turn.done" for f in frames) < 2:
            frames.append(await tab.receive_json_from(TIMEOUT))
        seen[name] = frames
    for frames in seen.values():
        users = [f["text"] for f in frames if f["type"] == "turn.user"]
        assert sorted(users) == sorted(["From the left tab: I grow tomatoes.",
                                        "From the right tab: I also keep bees."])
        for done in (f for f in frames if f["type"] == "turn.done"):
            streamed = "".join(f["text"] for f in frames
                               if f["type"] == "turn.token" and f["turn_id"] == done["turn_id"])
            assert streamed == done["reply"]
    done_left = [(f["seq"], f["page_id"]) for f in seen["left"] if f["type"] == "turn.done"]
    done_right = [(f["seq"], f["page_id"]) for f in seen["right"] if f["type"] == "turn.done"]
    assert done_left == done_right and [seq for seq, _ in done_left] == [1, 2]
    pages = await pages_of(user)
    assert [p.seq for p in pages] == [1, 2] and all(p.status == PageStatus.COMPLETE for p in pages)
    assert [str(p.id) for p in pages] == [pid for _, pid in done_left]
    # The order the tabs were told is the order the turns were stored.
    told = [f["text"] for f in seen["left"] if f["type"] == "turn.user"]
    assert told == [p.query for p in pages]
    assert await stranger.receive_nothing(timeout=0.3)
    for tab in (left, right, stranger):
        await tab.disconnect()


async def test_closing_the_tab_mid_reply_loses_nothing(channel_layer, ana, gated_model):
    user, cookie = ana
    tab = await open_socket(cookie)
    await tab.send_json_to({"type": "message", "text": "Remember that my sister is called Lea."})
    await frames_until(tab, lambda f: f["type"] == "turn.token")
    assert gated_model.paused.wait(TIMEOUT)
    await tab.disconnect()
    [page] = await pages_of(user)
    assert page.status == PageStatus.PENDING and page.query == "Remember that my sister is called Lea."
    gated_model.proceed.set()
    await turns_drain(TIMEOUT)
    [page] = await pages_of(user)
    assert page.status == PageStatus.COMPLETE and page.response == "Hello there, I remember you."
    # A tab opened afterwards reads the finished turn back from the database.
    assert page.reply_model == "gated-test-model"


async def test_a_failing_turn_sends_a_clear_error_frame(channel_layer, ana, monkeypatch):
    from memory.runtime import chat

    def broken(**kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(chat, "turn_prepare", broken)
    tab = await open_socket(ana[1])
    await tab.send_json_to({"type": "message", "text": "Are you there?"})
    frames = await frames_until(tab, final)
    assert frames[-1]["type"] == "turn.error"
    assert "went wrong" in frames[-1]["error"] and "fire" not in frames[-1]["error"]
    await tab.send_json_to({"type": "message", "text": "Hello again."})
    assert (await frames_until(tab, final))[-1]["type"] == "turn.error"  # and the socket is still up
    await tab.disconnect()


async def test_a_socket_stops_working_once_its_session_signs_out(channel_layer, ana):
    from django.contrib.sessions.models import Session

    user, cookie = ana
    tab = await open_socket(cookie)
    await database_sync_to_async(Session.objects.all().delete)()
    await tab.send_json_to({"type": "message", "text": "Am I still here?"})
    error = await tab.receive_json_from(TIMEOUT)
    assert error["code"] == "signed_out"
    assert (await tab.receive_output(TIMEOUT))["type"] == "websocket.close"
    assert await pages_of(user) == []


async def eventually(condition, timeout: float = 20.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.fixture
def one_turn_worker(settings):
    from memory.runtime import chat

    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "TURN_WORKERS": 1}
    chat._turn_executor.cache_clear()
    yield
    chat._turn_executor.cache_clear()


async def test_a_model_that_never_answers_does_not_hold_the_turn_workers(channel_layer, ana, ben, memory_env,
                                                                         openai_server, one_turn_worker):
    # Before: the one turn worker waited on Ana's reply, so Ben's turn did not start until it ended
    # (with six users and four workers, the fifth and sixth waited 42 s).
    openai_server.fail("hang", times=None)
    memory_env.LLM_ENABLED, memory_env.OPENAI_BASE_URL = True, openai_server.base_url
    memory_env.OPENAI_TIMEOUT, memory_env.OPENAI_MAX_RETRIES = 60.0, 0
    memory_env.OPENAI_FIRST_TOKEN_TIMEOUT = 60.0  # only the test ends the hanging calls
    memory_env.LLM_BREAKER_FAILURES = 10
    configured.chat_model.cache_clear()
    tabs = [await open_socket(ana[1]), await open_socket(ben[1])]
    try:
        await tabs[0].send_json_to({"type": "message", "text": "Ana asks a question."})
        assert await eventually(lambda: len(openai_server.chat_requests()) == 1)
        await tabs[1].send_json_to({"type": "message", "text": "Ben asks one too."})
        # Ben's turn reaches the model while Ana's call still hangs.
        assert await eventually(lambda: len(openai_server.chat_requests()) == 2)
    finally:
        openai_server.release_hangs()
    for tab in tabs:
        done = (await frames_until(tab, final))[-1]
        assert done["type"] == "turn.done" and done["offline"] and done["fallback"]
        await tab.disconnect()
