"""Property-based (hypothesis): text that no database can store (NUL, which PostgreSQL refuses in text
and jsonb, and lone surrogates, which no UTF-8 encodes) sent through every way text comes in: each
field of every REST write route and its query parameters, an HTML form, the websocket's message
frame, the MCP tools, an upload's file name and the services themselves. Each refuses it with a
4xx (or the service's MemoryInputError) in the same words, naming the field, and stores nothing.

CI runs this file again on PostgreSQL (.ci/run), where a text that slipped through would fail in
the driver instead of being stored (issue 35, findings 1 and 2)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.models import AttachedFile, DialoguePage, LifecycleEvent, MemoryNode, Sona
from memory.services.common import MemoryInputError
from memory.services.editing import memory_correct
from memory.services.remember import memory_add
from memory.services.turns import turn_run
from memory.services.users import sona_create, sona_get_or_create
from memory.web.rate_limit import rate_limits_reset
from persona.models import KnowledgeFact, UserProfile

pytestmark = pytest.mark.usefixtures("memory_env")

WORDS = "text may hold neither NUL characters nor lone surrogates."
PROPERTY = settings(max_examples=60, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
UNSTORABLE = st.sampled_from(["\x00", "\ud800", "\udbff", "\udc00", "\udfff"])
# Anything around it, a paired surrogate (an emoji) included: only the lone ones are refused.
AROUND = st.text(max_size=12) | st.just("\U0001F600")


def bad_text(unstorable=UNSTORABLE) -> st.SearchStrategy[str]:
    return st.tuples(AROUND, unstorable, AROUND).map("".join)


@pytest.fixture
def ana(make_user, settings):
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_REDIS_URL": "", "RATE_BURST": 10_000}
    settings.MEMORYOS_API = {**settings.MEMORYOS_API, "RATE": "100000/m"}
    rate_limits_reset()
    user = make_user("ana")
    page = memory_add(user=user, text="I collect antique maps of Lisbon.", sona="friend")
    fact = KnowledgeFact.objects.create(user=user, text="Ana lives in Porto.")
    client = Client()
    client.force_login(user)
    yield user, str(page.id), str(fact.id), client
    rate_limits_reset()


def stored(user) -> tuple:
    return (tuple(DialoguePage.objects.filter(user=user).values_list("query", "response", "version")),
            tuple(Sona.objects.filter(user=user).values_list("name", "profile")),
            tuple(KnowledgeFact.objects.filter(user=user).values_list("text", "version")),
            UserProfile.objects.filter(user=user).values_list("name", "gender").first(),
            *(model.objects.filter(user=user).count() for model in (MemoryNode, AttachedFile, LifecycleEvent)))


def api_calls(page_id: str, fact_id: str) -> list[tuple[str, str, str, object]]:
    """(method, path, field, body with the field's text as "{}") for every text of every write route."""
    turns, recall = "/api/memory/turns", "/api/memory/recall"
    page, fact = f"/api/memory/memories/page/{page_id}", f"/api/memory/memories/fact/{fact_id}"
    supersession = "/api/memory/supersessions/00000000-0000-0000-0000-000000000000"
    return [
        ("post", turns, "message", {"message": "{}"}),
        ("post", turns + "?stream=true", "message", {"message": "{}"}),
        ("post", turns, "sona", {"message": "hi", "sona": "{}", "create_sona": True}),
        ("post", turns, "sona_profile", {"message": "hi", "sona": "coach", "create_sona": True,
                                         "sona_profile": "{}"}),
        ("post", turns, "policy", {"message": "hi", "policy": "{}"}),
        ("post", turns, "files[0]", {"message": "hi", "files": ["{}"]}),
        ("post", recall, "query", {"query": "{}"}),
        ("post", recall, "sona", {"query": "maps", "sona": "{}"}),
        ("post", recall, "policy", {"query": "maps", "policy": "{}"}),
        ("post", "/api/memory/sonas", "name", {"name": "{}"}),
        ("post", "/api/memory/sonas", "profile", {"name": "coach", "profile": "{}"}),
        ("post", "/api/memory/sonas", "recall_policy", {"name": "coach", "recall_policy": "{}"}),
        ("patch", "/api/memory/sonas/friend", "name", {"name": "{}"}),
        ("put", "/api/long-term/profile", "name", {"name": "{}"}),
        ("put", "/api/long-term/profile", "gender", {"name": "Ana", "gender": "{}"}),
        ("post", f"{page}/correct", "query", {"query": "{}"}),
        ("post", f"{page}/correct", "response", {"response": "{}"}),
        ("post", f"{page}/correct", "reason", {"query": "Maps of Porto.", "reason": "{}"}),
        ("post", f"{fact}/correct", "text", {"text": "{}"}),
        ("post", f"{page}/pin", "reason", {"reason": "{}"}),
        ("post", f"{page}/repress", "reason", {"reason": "{}"}),
        ("post", f"{supersession}/accept", "text", {"text": "{}"}),
        ("post", f"{supersession}/reject", "reason", {"reason": "{}"}),
        ("post", "/api/memory/segments/x/correct", "keywords[1]", {"keywords": ["maps", "{}"]}),
    ]


def filled(body: object, text: str) -> object:
    if body == "{}":
        return text
    if isinstance(body, dict):
        return {key: filled(value, text) for key, value in body.items()}
    if isinstance(body, list):
        return [filled(value, text) for value in body]
    return body


def test_every_field_of_every_write_route_refuses_unstorable_text_alike(ana):
    user, page_id, fact_id, client = ana
    calls = api_calls(page_id, fact_id)

    @PROPERTY
    @given(call=st.sampled_from(calls), text=bad_text())
    def check(call, text):
        method, path, field, body = call
        before = stored(user)
        response = getattr(client, method)(path, json.dumps(filled(body, text)), content_type="application/json")
        assert response.status_code == 400, (path, field, response.content[:300])
        answer = response.json()
        assert answer["code"] == "invalid" and answer["detail"] == {"field": field}
        assert answer["message"].startswith(f"The {field} holds ") and answer["message"].endswith(WORDS)
        assert stored(user) == before

    check()


def test_query_parameters_addresses_and_form_fields_refuse_nul_alike(ana):
    """A URL or a form carries bytes that Django decodes as UTF-8, replacing what is not: of the
    two, only NUL reaches these."""
    user, page_id, _, client = ana

    @PROPERTY
    @given(text=bad_text(st.just("\x00")), where=st.sampled_from(["query", "address", "form", "html-query"]))
    def check(text, where):
        before = stored(user)
        if where == "query":
            response = client.get(f"/api/memory/stats?user={quote(text)}")
            field = "query parameter 'user'"
        elif where == "address":
            response = client.get(f"/api/memory/files/{quote(text, safe='')}")
            field = "address"
        elif where == "form":  # the chat's form for a new sona
            response = client.post("/chat/sonas/", {"name": text, "profile": "A coach."})
            field = "name"
        else:
            response = client.get(f"/inspector/ana/events/?kind={quote(text)}")
            field = "query parameter 'kind'"
        assert response.status_code == 400, (where, response.content[:300])
        message = response.json()["message"] if response["Content-Type"].startswith("application/json") \
            else response.content.decode()
        assert message.startswith(f"The {field} holds a NUL character (U+0000)") and message.endswith(WORDS)
        assert stored(user) == before

    check()


def test_an_upload_keeps_no_unstorable_character_of_its_file_name(ana):
    """Django's multipart parser drops what is not printable from a file's name (NUL and lone
    surrogates among it) before the route's own check: the name is stored without them."""
    user, _, _, client = ana
    for name in ("notes\x00.txt", "notes&#0;.txt", "notes&#xD800;.txt"):
        upload = SimpleUploadedFile(name, b"Revenue grew.", content_type="text/plain")
        response = client.post("/api/memory/files", {"file": upload})
        assert response.status_code == 200, response.content
        assert "\x00" not in response.json()["name"] and response.json()["name"].startswith("notes")
    names = list(AttachedFile.objects.filter(user=user).values_list("name", flat=True))
    assert len(names) == 3 and not any("\x00" in name for name in names), names


def test_the_services_refuse_unstorable_text_alike(ana):
    """What the commands and every edge call: the same words without any edge in front."""
    user, page_id, fact_id, _ = ana
    calls = {
        "message": lambda text: turn_run(user=user, message=text),
        "memory_add": lambda text: memory_add(user=user, text=text),
        "sona name": lambda text: sona_get_or_create(user=user, name=text),
        "sona profile": lambda text: sona_create(user=user, name="coach", profile=text),
        "page correction": lambda text: memory_correct(user=user, kind="page", ident=page_id, version=None, query=text),
        "fact correction": lambda text: memory_correct(user=user, kind="fact", ident=fact_id, version=None, text=text),
        "reason": lambda text: memory_correct(user=user, kind="fact", ident=fact_id, version=None,
                                              text="Ana lives in Braga.", reason=text),
    }

    @PROPERTY
    @given(call=st.sampled_from(sorted(calls)), text=bad_text())
    def check(call, text):
        before = stored(user)
        with pytest.raises(MemoryInputError) as refused:
            calls[call](text)
        assert str(refused.value).endswith(WORDS) and " holds " in str(refused.value)
        assert stored(user) == before

    check()


async def _socket_answers(client: Client, frames: list[dict]) -> list[dict]:
    from memoryos_site.asgi import application

    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    tab = WebsocketCommunicator(application, "/ws/chat/", headers=[
        (b"origin", b"http://testserver"), (b"host", b"testserver"), (b"cookie", cookie)])
    assert (await tab.connect())[0]
    await tab.receive_json_from(30)  # ready
    answers = []
    for frame in frames:
        await tab.send_to(text_data=json.dumps(frame))
        answers.append(await tab.receive_json_from(30))
    assert await tab.receive_nothing(timeout=0.3)  # no turn started for any of them
    await tab.disconnect()
    return answers


def test_the_websocket_refuses_unstorable_text_in_any_field_of_a_frame(ana):
    """A lone surrogate in a message used to end in "Something went wrong" with nothing stored."""
    user, _, _, client = ana
    shapes = [("text", {"type": "message", "text": "{}"}), ("sona", {"type": "message", "text": "hi", "sona": "{}"}),
              ("files[0]", {"type": "message", "text": "hi", "files": ["{}"]}),
              ("extra.note", {"type": "message", "text": "hi", "extra": {"note": "{}"}})]

    @settings(PROPERTY, max_examples=15)
    @given(texts=st.lists(bad_text(), min_size=len(shapes), max_size=len(shapes)))
    def check(texts):
        before = stored(user)
        answers = async_to_sync(_socket_answers)(client, [filled(shape, text) for (_, shape), text
                                                          in zip(shapes, texts, strict=True)])
        for (field, _), answer in zip(shapes, answers, strict=True):
            assert answer["type"] == "error" and answer["code"] == "invalid" and answer["field"] == field, answer
            assert answer["error"].startswith(f"The {field} holds ") and answer["error"].endswith(WORDS)
        assert stored(user)[:4] == before[:4]

    check()


def test_the_mcp_tools_refuse_unstorable_text_in_their_arguments(ana):
    from mcp import Client as McpClient

    from memory.web.mcp import build_server, fixed_user

    user, _, _, _ = ana
    server = build_server(user_of=fixed_user(user))
    calls = [("add_memory", "text", {"text": "{}"}), ("add_memory", "sona", {"text": "hi", "sona": "{}"}),
             ("recall", "prompt", {"prompt": "{}"}), ("recall", "policy", {"prompt": "maps", "policy": "{}"}),
             ("get_memory", "cid", {"cid": "{}"})]

    async def answers(texts: list[str]) -> list:
        async with McpClient(server) as client:
            return [await client.call_tool(name, filled(arguments, text))
                    for (name, _, arguments), text in zip(calls, texts, strict=True)]

    @settings(PROPERTY, max_examples=10)
    @given(texts=st.lists(bad_text(st.just("\x00")), min_size=len(calls), max_size=len(calls)))
    def check(texts):
        before = stored(user)
        for (_, field, _), result in zip(calls, async_to_sync(answers)(texts), strict=True):
            said = result.content[0].text
            assert result.is_error and f": The {field} holds " in said and said.endswith(WORDS), said
        assert stored(user) == before

    check()
