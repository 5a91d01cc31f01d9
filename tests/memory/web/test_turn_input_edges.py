"""One input check for every way in: the websocket, the REST API (plain and streamed) and the
service refuse the same message with the same words, and store nothing for it."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from memory.models import AttachedFile, DialoguePage, LifecycleEvent, RetrievalTrace, Sona
from memory.services.common import MemoryInputError
from memory.services.turns import turn_run
from memory.web.rate_limit import rate_limits_reset

pytestmark = pytest.mark.usefixtures("memory_env")

TIMEOUT = 60
CID = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
NOT_A_LIST = "Files are named by a list of content ids, each the one its upload returned."


@pytest.fixture
def ana(make_user, settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_REDIS_URL": "", "RATE_BURST": 100}
    rate_limits_reset()
    user = make_user("ana")
    client = Client()
    client.force_login(user)
    yield user, client
    rate_limits_reset()


def stored(user) -> tuple[int, ...]:
    """What a refused turn must leave as it was (a default sona made for it included): pages,
    sonas, events, files, traces."""
    return tuple(model.objects.filter(user=user).count()
                 for model in (DialoguePage, Sona, LifecycleEvent, AttachedFile, RetrievalTrace))


def refusals(user, client: Client, text: str, files: list) -> dict[str, object]:
    """The error each way in answers with: the service's message, the API's body, the socket's frame."""
    with pytest.raises(MemoryInputError) as refused:
        turn_run(user=user, message=text, files=files)
    body = json.dumps({"message": text, "files": files})
    api = client.post("/api/memory/turns", body, content_type="application/json")
    streamed = client.post("/api/memory/turns?stream=true", body, content_type="application/json")
    return {"service": str(refused.value), "api": (api.status_code, api.json()),
            "api_stream": (streamed.status_code, streamed.json())}


async def socket_refusal(client: Client, text: str, files: list) -> tuple[dict, dict]:
    from memoryos_site.asgi import application

    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    tab = WebsocketCommunicator(application, "/ws/chat/", headers=[
        (b"origin", b"http://testserver"), (b"host", b"testserver"), (b"cookie", cookie)])
    assert (await tab.connect())[0]
    ready = await tab.receive_json_from(TIMEOUT)
    await tab.send_json_to({"type": "message", "text": text, "files": files})
    error = await tab.receive_json_from(TIMEOUT)
    assert await tab.receive_nothing(timeout=0.3)  # no turn started for it
    await tab.disconnect()
    return ready, error


@pytest.mark.parametrize("text, files, error", [
    pytest.param("x" * 4001, [], "The message is 4001 characters long; the limit is 4000.", id="too-long"),
    pytest.param("  \n ", [], "The message is empty.", id="empty"),
    pytest.param("My notes.", [CID] * 6, "A turn carries at most 5 files; got 6.", id="six-files"),
    pytest.param("My notes.", ["x" * 101], NOT_A_LIST, id="not-a-content-id"),
])
async def test_the_socket_the_api_and_the_service_refuse_alike_and_store_nothing(ana, text, files, error):
    user, client = ana
    before = await database_sync_to_async(stored)(user)
    answers = await database_sync_to_async(refusals)(user, client, text, files)
    refused_elsewhere = await database_sync_to_async(stored)(user)
    _, frame = await socket_refusal(client, text, files)
    assert answers == {"service": error,
                       "api": (400, {"code": "invalid", "message": error, "detail": None}),
                       "api_stream": (400, {"code": "invalid", "message": error, "detail": None})}
    assert frame == {"type": "error", "code": "invalid", "error": error}
    assert refused_elsewhere == before  # the service and the API made not even the default sona
    assert but_sonas(await database_sync_to_async(stored)(user)) == but_sonas(before)


def but_sonas(counts: tuple[int, ...]) -> tuple[int, ...]:
    """`stored` without the sonas: an opening socket makes the user's default sona (as the chat
    page does), on a turn worker, so it may or may not be there yet."""
    pages, _, *rest = counts
    return (pages, *rest)


async def test_changed_limits_hold_on_every_way_in_at_once(ana, settings):
    settings.MEMORYOS = {**settings.MEMORYOS, "MAX_MESSAGE_CHARS": 50, "MAX_FILES_PER_TURN": 1}
    user, client = ana
    before = await database_sync_to_async(stored)(user)
    error = "The message is 51 characters long; the limit is 50."
    answers = await database_sync_to_async(refusals)(user, client, "y" * 51, [])
    ready, frame = await socket_refusal(client, "y" * 51, [])
    assert answers["service"] == error and answers["api"] == (400, {"code": "invalid", "message": error,
                                                                    "detail": None})
    assert frame["error"] == error and ready["max_message_chars"] == 50
    two = await database_sync_to_async(refusals)(user, client, "hi", [CID, CID])
    assert two["service"] == two["api"][1]["message"] == "A turn carries at most 1 files; got 2."
    assert but_sonas(await database_sync_to_async(stored)(user)) == but_sonas(before)
    # Within the limits, the same message goes through.
    done = await database_sync_to_async(client.post)(
        "/api/memory/turns", json.dumps({"message": "y" * 50}), content_type="application/json")
    assert done.status_code == 200 and done.json()["reply"]


def test_an_unknown_policy_is_refused_before_the_api_makes_the_persona(ana):
    user, client = ana
    before = stored(user)
    response = client.post("/api/memory/turns", json.dumps({"message": "Plan my week.", "sona": "coach",
                                                            "create_sona": True, "policy": "nostalgia"}),
                           content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    assert response.json()["message"].startswith("Unknown recall policy 'nostalgia'; choose one of ")
    assert stored(user) == before and not Sona.objects.filter(user=user, name="coach").exists()
