"""Who gets what, on every route of the URL conf (pages, the API, the admin) and the websocket:
anonymous, the owner, another user, staff (an operator), the owner's token, another user's token,
a revoked token. The routes are read from the URL conf: one without an entry here fails the test.
Nobody but the owner and an operator ever sees the owner's words."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from memory.benchmarks.exports import transcript
from memory.models import RetrievalTrace, Segment
from memory.services.files import file_upload
from memory.services.supersession import supersession_detect
from memory.services.tokens import token_create, token_revoke
from memory.services.turns import turn_run
from memory.services.users import sona_get_or_create
from persona.models import KnowledgeFact

pytestmark = pytest.mark.usefixtures("memory_env")
SECRET = "Zanzibar"  # in the owner's every message: it must reach nobody else
VISITORS = ("anonymous", "owner", "other", "staff", "owner_token", "other_token", "revoked_token")
LOGIN = "login"  # a redirect to the sign-in page

# What each kind of route answers each visitor. Tokens authenticate the API only.
PAGE = {"anonymous": LOGIN, "owner": 200, "other": 200, "staff": 200, "owner_token": LOGIN, "other_token": LOGIN,
        "revoked_token": LOGIN}
OWNED_PAGE = {**PAGE, "other": 404, "staff": 404}  # names one of the owner's memories
INSPECT = {**PAGE, "other": 404, "staff": 200}  # /inspector/<owner>/...: the owner and operators
API_LIST = {"anonymous": 401, "owner": 200, "other": 200, "staff": 200, "owner_token": 200, "other_token": 200,
            "revoked_token": 401}  # each caller's own memory
API_OWNED = {**API_LIST, "other": 404, "staff": 404, "other_token": 404}  # names one of the owner's memories
PUBLIC = dict.fromkeys(VISITORS, "any")  # sign-in pages, the API's documentation


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # with {owner}, {page}, {segment}, {fact}, {trace}, {cid}, {supersession}, {job}
    expect: dict
    body: dict | None = None
    htmx: bool = False


ROUTES: dict[str, list[Route]] = {
    "accounts/login/": [Route("GET", "/accounts/login/", PUBLIC)],
    "accounts/logout/": [Route("POST", "/accounts/logout/", PUBLIC)],
    "accounts/password_change/": [Route("GET", "/accounts/password_change/", PAGE)],
    "accounts/password_change/done/": [Route("GET", "/accounts/password_change/done/", PAGE)],
    "accounts/password_reset/": [Route("GET", "/accounts/password_reset/", PUBLIC)],
    "accounts/password_reset/done/": [Route("GET", "/accounts/password_reset/done/", PUBLIC)],
    "accounts/reset/<uidb64>/<token>/": [Route("GET", "/accounts/reset/MQ/bad-token/", PUBLIC)],
    "accounts/reset/done/": [Route("GET", "/accounts/reset/done/", PUBLIC)],
    "accounts/signup/": [Route("GET", "/accounts/signup/", PUBLIC)],
    "api/openapi.json": [Route("GET", "/api/openapi.json", PUBLIC)],
    "api/docs": [Route("GET", "/api/docs", PUBLIC)],
    "api/": [Route("GET", "/api/", PUBLIC)],
    "api/memory/turns": [Route("POST", "/api/memory/turns", API_LIST, {"message": "What do you know?"})],
    "api/memory/stats": [Route("GET", "/api/memory/stats", API_LIST)],
    "api/memory/memories": [Route("GET", "/api/memory/memories?kind=page", API_LIST)],
    "api/memory/memories/search": [Route("GET", "/api/memory/memories/search?q=island", API_LIST)],
    "api/memory/memories/by-cid/<cid>": [Route("GET", "/api/memory/memories/by-cid/{cid}", API_OWNED)],
    "api/memory/memories/<kind>/<ident>": [
        Route("GET", "/api/memory/memories/page/{page}", API_OWNED),
        Route("DELETE", "/api/memory/memories/page/{page}?dry_run=true", API_OWNED)],
    "api/memory/memories/<kind>/<ident>/correct": [
        Route("POST", "/api/memory/memories/fact/{fact}/correct", {**API_OWNED, "owner": 400, "owner_token": 400},
              {"version": 99, "text": "stale"})],
    "api/memory/memories/<kind>/<ident>/pin": [
        Route("POST", "/api/memory/memories/page/{page}/pin", API_OWNED, {"value": True})],
    "api/memory/memories/<kind>/<ident>/repress": [
        Route("POST", "/api/memory/memories/page/{page}/repress", API_OWNED, {"value": False})],
    "api/memory/recall": [Route("POST", "/api/memory/recall", API_LIST, {"query": "island"})],
    "api/memory/files": [Route("GET", "/api/memory/files", API_LIST)],
    "api/memory/files/<cid>": [Route("GET", "/api/memory/files/{file}", API_OWNED),
                               # attached to a turn: the owner is told to delete the page instead
                               Route("DELETE", "/api/memory/files/{file}", {**API_OWNED, "owner": 400,
                                                                            "owner_token": 400})],
    "api/memory/files/<cid>/content": [Route("GET", "/api/memory/files/{file}/content", API_OWNED)],
    "api/memory/sonas": [Route("GET", "/api/memory/sonas", API_LIST)],
    "api/memory/sonas/<name>": [Route("PATCH", "/api/memory/sonas/sailor", API_OWNED, {"name": "sailor"})],
    "api/memory/sonas/<name>/memories": [Route("GET", "/api/memory/sonas/sailor/memories", API_OWNED)],
    "api/memory/events": [Route("GET", "/api/memory/events", API_LIST)],
    "api/memory/traces": [Route("GET", "/api/memory/traces", API_LIST)],
    "api/memory/traces/<trace_id>": [Route("GET", "/api/memory/traces/{trace}", API_OWNED)],
    "api/memory/supersessions": [Route("GET", "/api/memory/supersessions", API_LIST)],
    "api/memory/supersessions/<ident>": [Route("GET", "/api/memory/supersessions/{supersession}", API_OWNED)],
    # the owner decides first; their token then finds it decided already
    "api/memory/supersessions/<ident>/accept": [
        Route("POST", "/api/memory/supersessions/{supersession}/accept", {**API_OWNED, "owner_token": 400}, {})],
    "api/memory/supersessions/<ident>/reject": [
        Route("POST", "/api/memory/supersessions/{supersession}/reject", {**API_OWNED, "owner_token": 400}, {})],
    "api/long-term/profile": [Route("GET", "/api/long-term/profile", API_LIST),
                            Route("PUT", "/api/long-term/profile", API_LIST, {"gender": ""})],
    "api/long-term/traits": [Route("GET", "/api/long-term/traits", API_LIST)],
    "api/long-term/kb": [Route("GET", "/api/long-term/kb", API_LIST)],
    "api/long-term/agent-traits": [Route("GET", "/api/long-term/agent-traits", API_LIST)],
    "profile/": [Route("GET", "/profile/", PAGE)],
    "profile/skip/": [Route("POST", "/profile/skip/", {**PAGE, "owner": 302, "other": 302,
                                                                       "staff": 302})],
    "": [Route("GET", "/", PAGE)],
    "chat/stats/": [Route("GET", "/chat/stats/", PAGE)],
    "chat/sonas/": [Route("POST", "/chat/sonas/", {**PAGE, "owner": 302, "other": 302, "staff": 302},
                          {"name": "helper"})],
    "chat/sonas/select/": [Route("POST", "/chat/sonas/select/", {**PAGE, "owner": 302, "other": 302, "staff": 302},
                                 {"sona": "x"})],
    # Each signed-in caller renames their own persona in use (their own row): the bar comes back.
    "chat/sonas/rename/": [Route("POST", "/chat/sonas/rename/", {**PAGE, "owner": 302, "other": 302, "staff": 302},
                                 {"name": "mate"})],
    "chat/turns/<uuid:page_id>/recall/": [Route("GET", "/chat/turns/{page}/recall/", OWNED_PAGE)],
    # the chat notice's undo: the owner's POST deletes it (a fact of its own), nobody else finds it
    "chat/memory/undo/<uuid:fact_id>/": [Route("POST", "/chat/memory/undo/{undo_fact}/", OWNED_PAGE)],
    "settings/tokens/": [Route("GET", "/settings/tokens/", PAGE)],
    "settings/import/": [Route("GET", "/settings/import/", PAGE)],
    "settings/import/<str:job>/": [Route("GET", "/settings/import/{job}/", OWNED_PAGE)],
    # Each signed-in caller sets their own (their own row): saved and sent back to the profile page.
    "settings/decay/": [Route("POST", "/settings/decay/", {**PAGE, "owner": 302, "other": 302, "staff": 302},
                              {"short_term_minutes": "30", "long_term_threshold": "0.02"})],
    "inspector/": [Route("GET", "/inspector/", {**PAGE, "owner": 302, "other": 302, "staff": 302})],
    "inspector/switch/": [Route("GET", "/inspector/switch/?user={owner}", {**INSPECT, "owner": 302, "staff": 302})],
    "inspector/<str:username>/": [Route("GET", "/inspector/{owner}/", INSPECT)],
    "inspector/<str:username>/stm/": [Route("GET", "/inspector/{owner}/stm/", INSPECT)],
    "inspector/<str:username>/mtm/": [Route("GET", "/inspector/{owner}/mtm/", INSPECT)],
    "inspector/<str:username>/mtm/<uuid:segment_id>/": [Route("GET", "/inspector/{owner}/mtm/{segment}/", INSPECT)],
    "inspector/<str:username>/lpm/": [Route("GET", "/inspector/{owner}/lpm/", INSPECT)],
    "inspector/<str:username>/lpm/traits/<slug:key>/": [Route("GET", "/inspector/{owner}/lpm/traits/openness/",
                                                              INSPECT)],
    "inspector/<str:username>/provenance/<slug:kind>/<str:ident>/": [
        Route("GET", "/inspector/{owner}/provenance/page/{page}/", INSPECT)],
    "inspector/<str:username>/recalls/": [Route("GET", "/inspector/{owner}/recalls/?q=island", INSPECT)],
    "inspector/<str:username>/recalls/<uuid:trace_id>/": [Route("GET", "/inspector/{owner}/recalls/{trace}/",
                                                                INSPECT)],
    "inspector/<str:username>/events/": [Route("GET", "/inspector/{owner}/events/", INSPECT)],
    "inspector/<str:username>/replay/": [Route("GET", "/inspector/{owner}/replay/", INSPECT)],
    "inspector/<str:username>/changes/": [Route("GET", "/inspector/{owner}/changes/?status=any", INSPECT)],
    "inspector/<str:username>/changes/<uuid:ident>/<slug:action>/": [
        Route("POST", "/inspector/{owner}/changes/{supersession}/reject/", {**INSPECT, "owner": 302, "staff": 302},
              {"reason": "checked"})],
    "inspector/<str:username>/memory/<slug:kind>/<str:ident>/": [
        Route("GET", "/inspector/{owner}/memory/page/{page}/", INSPECT, htmx=True)],
    "inspector/<str:username>/memory/<slug:kind>/<str:ident>/pin/": [
        Route("POST", "/inspector/{owner}/memory/page/{page}/pin/", INSPECT, {"value": "1"}, htmx=True)],
    "inspector/<str:username>/memory/<slug:kind>/<str:ident>/repress/": [
        Route("POST", "/inspector/{owner}/memory/page/{page}/repress/", INSPECT, {"value": "0"}, htmx=True)],
    "inspector/<str:username>/memory/<slug:kind>/<str:ident>/correct/": [
        Route("GET", "/inspector/{owner}/memory/fact/{fact}/correct/", INSPECT, htmx=True)],
    "inspector/<str:username>/memory/<slug:kind>/<str:ident>/delete/": [
        Route("GET", "/inspector/{owner}/memory/page/{page}/delete/", INSPECT, htmx=True)],
    # The person's own page ("What I know about you"): each signed-in caller reads and changes their own
    # memory; an id of the owner's is a 404 to anyone else. The forget route comes last: it deletes.
    "me/": [Route("GET", "/me/", PAGE)],
    "me/export/": [Route("GET", "/me/export/", PAGE)],
    "me/erase/": [Route("GET", "/me/erase/", PAGE)],
    "me/undo/<int:event_id>/": [Route("POST", "/me/undo/999999/", {**PAGE, "owner": 404, "other": 404,
                                                                      "staff": 404})],
    "me/<slug:kind>/<str:ident>/correct/": [Route("POST", "/me/facts/{fact}/correct/", {**OWNED_PAGE, "owner": 302},
                                                  {"value": ""})],
    "me/<slug:kind>/<str:ident>/forget/": [Route("POST", "/me/facts/{fact}/forget/", {**OWNED_PAGE, "owner": 302})],
}


def url_conf_routes() -> set[str]:
    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern)

    return {route for route in walk(get_resolver().url_patterns) if not route.startswith("admin/")}


@pytest.fixture
def world(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}  # a segment forms
    owner = make_user("owner")
    island_map = file_upload(user=owner, name="island.txt", data=f"A map of {SECRET}.".encode())
    for text, files in ((f"My island is {SECRET}.", [island_map.content_cid]), (f"I sail to {SECRET} every June.", [])):
        turn_run(user=owner, message=text, files=files, sona=sona_get_or_create(user=owner, name="sailor"))
    page = owner.pages.order_by("seq").first()
    fact = KnowledgeFact.objects.create(user=owner, text=f"User sails to {SECRET}", normalised=f"sails {SECRET}")
    undo_fact = KnowledgeFact.objects.create(user=owner, text=f"User flies kites on {SECRET}",
                                             normalised=f"kites {SECRET}")
    # a change of residence waiting for review
    KnowledgeFact.objects.create(user=owner, text="User lives in Leeds", normalised="lives leeds",
                                 timestamp=page.timestamp - timedelta(days=30))
    moved = KnowledgeFact.objects.create(user=owner, text=f"User lives in {SECRET}", normalised=f"lives {SECRET}",
                                         timestamp=page.timestamp)
    [supersession] = supersession_detect(user_id=owner.pk, fact_ids=[str(moved.pk)])
    other = make_user("other")
    turn_run(user=other, message="I like trains.")
    staff = make_user("staff", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["inspect_any_user", "edit_any_user"]))
    _, owner_token = token_create(user=owner, name="owner's")
    _, other_token = token_create(user=other, name="other's")
    revoked, revoked_text = token_create(user=owner, name="old")
    token_revoke(user=owner, token_id=revoked.id)
    uploader = Client()
    uploader.force_login(owner)
    job = uploader.post("/settings/import/", {"export": SimpleUploadedFile("notes.jsonl", transcript([
        {"role": "user", "content": f"I sail to {SECRET}.", "time": "2025-06-01T10:00:00Z"},
        {"role": "assistant", "content": "Fair winds."}]))})
    assert job.status_code == 302, job.content.decode()[-800:]
    for _ in range(300):  # the import's pages stored before anyone visits
        if 'id="import-bar"' not in uploader.get(job.url, HTTP_HX_REQUEST="true").content.decode():
            break
        time.sleep(0.1)
    ids = {"owner": owner.username, "page": str(page.id), "fact": str(fact.id), "cid": page.cid,
           "undo_fact": str(undo_fact.id),
           "job": job.url.rstrip("/").rsplit("/", 1)[-1],
           "file": island_map.content_cid, "supersession": str(supersession.pk),
           "segment": str(Segment.objects.get(user=owner).id),
           "trace": str(RetrievalTrace.objects.filter(user=owner).first().id)}
    sessions = {"owner": owner, "other": other, "staff": staff}
    tokens = {"owner_token": owner_token, "other_token": other_token, "revoked_token": revoked_text}
    return ids, sessions, tokens


def request(visitor: str, route: Route, ids: dict, sessions: dict, tokens: dict, *, acting_for: str = ""):
    client = Client()
    headers = {"HTTP_HX_REQUEST": "true"} if route.htmx else {}
    if visitor in sessions:
        client.force_login(sessions[visitor])
    elif visitor in tokens:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {tokens[visitor]}"
    path = route.path.format(**ids)
    if acting_for:
        path += ("&" if "?" in path else "?") + f"user={acting_for}"
    body = json.dumps(route.body) if route.path.startswith("/api/") and route.body is not None else route.body
    kind = {"content_type": "application/json"} if route.path.startswith("/api/") else {}
    call = getattr(client, route.method.lower())
    return call(path, body, **kind, **headers) if body is not None else call(path, **headers)


def test_every_route_answers_every_visitor_as_it_should(world):
    ids, sessions, tokens = world
    assert url_conf_routes() == set(ROUTES), "a route of the URL conf has no entry in the matrix (or the reverse)"
    for pattern, routes in ROUTES.items():
        for route in routes:
            for visitor in VISITORS:
                response = request(visitor, route, ids, sessions, tokens)
                expected = route.expect[visitor]
                where = (pattern, route.method, visitor, response.status_code)
                if expected == LOGIN:
                    assert response.status_code == 302 and "/accounts/login/" in response["Location"], where
                elif expected == "any":
                    assert response.status_code < 500, where
                else:
                    assert response.status_code == expected, where
                content = b"".join(response.streaming_content) if response.streaming else response.content
                if visitor not in ("owner", "owner_token") and not (visitor == "staff" and route.expect is INSPECT):
                    assert SECRET.encode() not in content, where


def test_acting_for_the_owner_through_the_api(world):
    ids, sessions, tokens = world
    from memory.services.tokens import token_create as make

    _, staff_token = make(user=sessions["staff"], name="ops")
    tokens = {**tokens, "staff_token": staff_token}
    for pattern, routes in ROUTES.items():
        for route in routes:
            if not pattern.startswith("api/memory/") and not pattern.startswith("api/long-term/"):
                continue
            refused = request("other_token", route, ids, sessions, tokens, acting_for="owner")
            assert refused.status_code == 404 and SECRET.encode() not in refused.content, (pattern, route.method)
            if route.expect is API_OWNED or route.expect is API_LIST:
                allowed = request("staff_token", route, ids, sessions, tokens, acting_for="owner")
                assert allowed.status_code in (200, 400), (pattern, route.method, allowed.status_code)


def test_the_admin_is_for_staff_with_permissions(world, make_user):
    ids, sessions, _ = world
    admin_routes = [f"/admin/{app}/{model}/" for app, model in (
        ("memory", "dialoguepage"), ("memory", "segment"), ("memory", "lifecycleevent"), ("memory", "retrievaltrace"),
        ("memory", "memorynode"), ("memory", "memoryedge"), ("memory", "sona"), ("memory", "usermemorystate"),
        ("memory", "apitoken"),
        ("persona", "knowledgefact"), ("persona", "agenttrait"), ("persona", "usertrait"), ("persona", "userprofile"),
        ("auth", "user"))]
    root = make_user("root", is_staff=True, is_superuser=True)
    for path in ["/admin/", *admin_routes]:
        for visitor, expected in (("anonymous", 302), ("owner", 302), ("other", 302), ("staff", 403), ("root", 200)):
            client = Client()
            if visitor == "root":
                client.force_login(root)
            elif visitor in sessions:
                client.force_login(sessions[visitor])
            status = client.get(path).status_code
            if path == "/admin/" and visitor == "staff":
                expected = 200  # the index, listing nothing it may not see
            assert status == expected, (path, visitor, status)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_websocket_needs_a_session_and_only_shows_ones_own_turns(make_user):
    from memoryos_site.asgi import application

    anonymous = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"origin", b"http://testserver")])
    connected, code = await anonymous.connect()
    assert not connected or (await anonymous.receive_output()).get("code") == 4401
    await anonymous.disconnect()
    owner = await database_sync_to_async(make_user)("wsowner")
    client = Client()
    await database_sync_to_async(client.force_login)(owner)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(application, "/ws/chat/",
                                   headers=[(b"origin", b"http://testserver"), (b"cookie", cookie)])
    connected, _ = await socket.connect()
    assert connected
    await socket.disconnect()
