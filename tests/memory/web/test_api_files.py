"""The files routes of the REST API: upload (multipart) with a session or a token, a turn that names
its files by content id, the bytes read back as a download by their owner only, limits and
refusals with the API's error shape and nothing stored: hostile files, a file name over Django's
limit, and (hypothesis) malformed uploads of every kind, none of which gets a 500."""

from __future__ import annotations

import json

import pytest
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory.models import AttachedFile, DialoguePage
from memory.services.files import file_upload
from memory.services.tokens import token_create
from memory.services.turns import turn_run
from memory.web.rate_limit import rate_limits_reset
from tests.memory.hostile_files import (
    BOMB_SIDE,
    IMAGE_BOMBS,
    gif_header,
    jpeg_header,
    multipart,
    pdf_inflation_bomb,
    pdf_many_pages,
    pdf_pages,
    png_header,
)

pytestmark = pytest.mark.usefixtures("memory_env")
NOTES = b"The ferry to Hvar leaves Split at 07:45; the key box code is 5521."


@pytest.fixture
def clients(make_user, settings):
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_REDIS_URL": ""}
    rate_limits_reset()
    ana, bob = make_user("ana"), make_user("bob")
    ana_client, bob_client = Client(), Client()
    ana_client.force_login(ana)
    bob_client.force_login(bob)
    yield ana, ana_client, bob, bob_client
    rate_limits_reset()


def upload(client, name: str, data: bytes, content_type: str = "text/plain", **extra):
    return client.post("/api/memory/files", {"file": SimpleUploadedFile(name, data, content_type=content_type)},
                       **extra)


def test_an_uploaded_file_rides_a_turn_and_only_its_owner_reads_it_back(clients):
    ana, ana_client, bob, bob_client = clients
    uploaded = upload(ana_client, "trip notes.txt", NOTES)
    assert uploaded.status_code == 200, uploaded.content
    meta = uploaded.json()
    assert meta["name"] == "trip notes.txt" and meta["media_type"] == "text/plain" and meta["page_id"] is None
    assert meta["size"] == len(NOTES) and meta["text_preview"] == NOTES.decode() and meta["cid"].startswith("bafkrei")

    turn = ana_client.post("/api/memory/turns", json.dumps({"message": "My trip notes.", "files": [meta["cid"]]}),
                           content_type="application/json")
    assert turn.status_code == 200, turn.content
    body = turn.json()
    assert [f["cid"] for f in body["files"]] == [meta["cid"]] and body["files"][0]["page_id"] == body["page_id"]

    content = ana_client.get(f"/api/memory/files/{meta['cid']}/content")
    assert content.status_code == 200 and content.content == NOTES
    assert content["Content-Type"] == "text/plain" and content["X-Content-Type-Options"] == "nosniff"
    assert content["Content-Disposition"] == "attachment; filename*=UTF-8''trip%20notes.txt"
    listed = ana_client.get("/api/memory/files").json()
    assert listed["count"] == 1 and listed["items"][0]["page_id"] == body["page_id"]
    # Bob learns nothing of it, by either of its ids, and has no files
    for path in (f"/api/memory/files/{meta['cid']}", f"/api/memory/files/{meta['cid']}/content",
                 f"/api/memory/files/{meta['node_cid']}"):
        refused = bob_client.get(path)
        assert refused.status_code == 404 and refused.json()["code"] == "not_found"
    assert bob_client.get("/api/memory/files").json()["count"] == 0
    attached = ana_client.delete(f"/api/memory/files/{meta['cid']}")
    assert attached.status_code == 400 and "delete that page" in attached.json()["message"]


def test_the_inspector_shows_a_turn_s_files_in_stm_and_in_provenance(clients):
    ana, ana_client, _bob, bob_client = clients
    notes = file_upload(user=ana, name="trip.txt", data=NOTES)
    page = turn_run(user=ana, message="My trip notes.", files=[notes.content_cid]).page
    stm = ana_client.get("/inspector/ana/stm/").content.decode()
    assert f'href="/api/memory/files/{notes.content_cid}/content?user=ana" download' in stm and ">trip.txt</a>" in stm
    provenance = ana_client.get(f"/inspector/ana/provenance/page/{page.id}/")
    assert provenance.status_code == 200
    assert "file trip.txt (text/plain)" in provenance.content.decode()  # what the page depends on
    of_file = ana_client.get(f"/inspector/ana/provenance/file/{notes.pk}/")
    assert of_file.status_code == 200 and "My trip notes." in of_file.content.decode()  # what depends on it
    assert bob_client.get(f"/inspector/ana/provenance/file/{notes.pk}/").status_code == 404


def test_a_token_uploads_and_a_pending_upload_can_be_deleted(clients):
    ana = clients[0]
    _, token = token_create(user=ana, name="files")
    client = Client(headers={"Authorization": f"Bearer {token}"})
    meta = upload(client, "plan.md", b"# Plan\nBake rye bread on Sunday.", content_type="text/markdown").json()
    assert meta["media_type"] == "text/markdown"
    deleted = client.delete(f"/api/memory/files/{meta['cid']}")
    assert deleted.status_code == 200 and not AttachedFile.objects.filter(user=ana).exists()
    assert client.get(f"/api/memory/files/{meta['cid']}").status_code == 404


def test_refusals_say_why_and_store_nothing(clients, settings):
    ana, ana_client, _bob, bob_client = clients
    settings.MEMORYOS = {**settings.MEMORYOS, "MAX_FILE_BYTES": 100}
    too_big = upload(ana_client, "big.txt", b"x" * 101)
    assert too_big.status_code == 400 and too_big.json()["message"] == \
        "big.txt is 101 bytes; a file may be at most 100 bytes."
    binary = upload(ana_client, "tool.exe", b"MZ\x90\x00\x03\x00\xff\xfe", content_type="application/octet-stream")
    assert binary.status_code == 400 and "Only text (UTF-8), PDF and images" in binary.json()["message"]
    over_body = ana_client.post("/api/memory/files", b"x", content_type="multipart/form-data; boundary=b",
                                CONTENT_LENGTH=str(settings.MEMORYOS_API["MAX_BODY_BYTES"] + 101))
    assert over_body.status_code == 413 and over_body.json()["code"] == "body_too_large"
    bobs = upload(bob_client, "bob.txt", b"Bob's locker code is 4417.").json()
    turn = ana_client.post("/api/memory/turns", json.dumps({"message": "Read this.", "files": [bobs["cid"]]}),
                           content_type="application/json")
    assert turn.status_code == 400 and "No uploaded file with content id" in turn.json()["message"]
    assert not AttachedFile.objects.filter(user=ana).exists() and not DialoguePage.objects.filter(user=ana).exists()


# ------------------------------------------------------------------ hostile uploads

def stored_blobs() -> list[str]:
    storage = storages["memory_files"]
    folders, _files = storage.listdir("")
    return sorted(name for folder in folders for name in storage.listdir(folder)[1])


def test_bombs_get_a_400_naming_the_file_and_the_limit_and_nothing_is_stored(clients):
    ana, ana_client, _bob, _bob_client = clients
    blobs = stored_blobs()
    refusals = [(name, make(BOMB_SIDE, BOMB_SIDE), "The image declares 3,600,000,000 pixels")
                for name, make in sorted(IMAGE_BOMBS.items())]
    refusals += [("inflates.pdf", pdf_inflation_bomb(), "The PDF is past a limit of what is read from one"),
                 ("pages.pdf", pdf_many_pages(), "The PDF is past a limit of what is read from one")]
    for name, data, reason in refusals:
        refused = upload(ana_client, name, data, content_type="application/octet-stream")
        assert refused.status_code == 400, (name, refused.content)
        assert refused.json()["code"] == "invalid" and refused.json()["message"].startswith(f"{name}: {reason}")
    assert not AttachedFile.objects.filter(user=ana).exists() and stored_blobs() == blobs


@pytest.mark.parametrize("debug", [False, True])
def test_a_file_name_over_django_s_header_limit_gets_a_400_with_the_reason(clients, settings, debug):
    settings.DEBUG = debug  # in DEBUG ninja answered the parser's error with a 500 and its traceback
    ana, ana_client, _bob, _bob_client = clients
    body, content_type = multipart("n" * 1100 + ".txt", NOTES)
    refused = ana_client.post("/api/memory/files", body, content_type=content_type)
    assert refused.status_code == 400, refused.content
    assert refused.json() == {"code": "invalid_upload", "detail": None, "message": (
        "The multipart body cannot be read: Request max total header size exceeded. A part's headers, its file "
        "name among them, may be at most 1,024 bytes: shorten the file name.")}
    body, content_type = multipart("n" * 600 + ".txt", NOTES)  # a long name that fits: Django keeps 255 characters
    kept = ana_client.post("/api/memory/files", body, content_type=content_type)
    assert kept.status_code == 200 and kept.json()["name"] == "n" * 251 + ".txt"
    assert AttachedFile.objects.filter(user=ana).count() == 1


def test_too_many_files_in_one_body_get_a_400_in_the_api_s_shape(clients, settings):
    settings.DEBUG = True  # ninja answered Django's TooManyFilesSent with a 500 in DEBUG
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 1
    ana, ana_client, _bob, _bob_client = clients
    files = [SimpleUploadedFile(f"{i}.txt", NOTES, content_type="text/plain") for i in range(2)]
    refused = ana_client.post("/api/memory/files", {"file": files})
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_upload"
    assert "DATA_UPLOAD_MAX_NUMBER_FILES" in refused.json()["message"]
    assert not AttachedFile.objects.filter(user=ana).exists()


GOOD_FILES = {"png": png_header(5, 4), "gif": gif_header(5, 4), "jpeg": jpeg_header(5, 4), "pdf": pdf_pages(2),
              "text": NOTES}


@st.composite
def malformed_uploads(draw) -> tuple[str, bytes, str]:
    """A file name (any characters, up to 1,500 of them) and bytes: random, or a good file of each
    kind truncated, with bytes flipped or spliced in, or one of the bombs."""
    name = draw(st.one_of(st.text(min_size=1, max_size=40), st.text(min_size=200, max_size=1500)))
    kind = draw(st.sampled_from(["random", "mutated", "bomb"]))
    if kind == "random":
        data = draw(st.binary(max_size=2048))
    elif kind == "bomb":
        data = draw(st.sampled_from(list(IMAGE_BOMBS.values())))(draw(st.integers(1, 65535)), BOMB_SIDE)
    else:
        data = bytearray(GOOD_FILES[draw(st.sampled_from(sorted(GOOD_FILES)))])
        for _ in range(draw(st.integers(1, 8))):
            at = draw(st.integers(0, len(data)))
            action = draw(st.sampled_from(["flip", "cut", "splice"]))
            if action == "flip" and at < len(data):
                data[at] = draw(st.integers(0, 255))
            elif action == "cut":
                del data[at:at + draw(st.integers(1, 64))]
            else:
                data[at:at] = draw(st.binary(min_size=1, max_size=64))
        data = bytes(data)
    content_type = draw(st.sampled_from(["text/plain", "application/pdf", "image/png", "application/octet-stream",
                                         "text/markdown; charset=utf-8", "", "x/\u00e9\u0000"]))
    return name, data, content_type


def test_property_malformed_uploads_never_get_a_500_and_a_refused_one_writes_nothing(clients, settings):
    ana, ana_client, _bob, _bob_client = clients
    settings.MEMORYOS = {**settings.MEMORYOS, "FILE_READ_SECONDS": 5.0}

    @given(upload_=malformed_uploads())
    @hypothesis_settings(max_examples=40, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    def check(upload_):
        name, data, content_type = upload_
        rows, blobs = AttachedFile.objects.filter(user=ana).count(), stored_blobs()
        safe_type = content_type.replace("\u0000", "")
        body, multipart_type = multipart(name.replace("\\", "\\\\"), data, content_type=safe_type)
        answer = ana_client.post("/api/memory/files", body, content_type=multipart_type)
        assert answer.status_code < 500, answer.content
        if answer.status_code == 200:
            assert AttachedFile.objects.filter(user=ana).count() == rows + 1
        else:
            assert 400 <= answer.status_code < 500 and answer.json()["message"]  # JSON with the reason
            assert AttachedFile.objects.filter(user=ana).count() == rows and stored_blobs() == blobs

    check()


async def _asgi_upload(token: str, body: bytes, boundary: str) -> tuple[int, dict, dict]:
    """An upload over ASGI without a Content-Length (as a chunked request arrives), in pieces."""
    from asgiref.testing import ApplicationCommunicator

    from memoryos_site.asgi import application

    scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": "/api/memory/files",
             "raw_path": b"/api/memory/files", "query_string": b"", "root_path": "", "scheme": "http",
             "server": ("testserver", 80), "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode()),
                         (b"transfer-encoding", b"chunked"),
                         (b"content-type", f"multipart/form-data; boundary={boundary}".encode())]}
    talk = ApplicationCommunicator(application, scope)
    piece = 1 << 20
    for start in range(0, len(body), piece):
        await talk.send_input({"type": "http.request", "body": body[start:start + piece],
                               "more_body": start + piece < len(body)})
    start = await talk.receive_output(60)
    answer = await talk.receive_output(60)
    headers = {key.decode().lower(): value.decode() for key, value in start["headers"]}
    return start["status"], headers, json.loads(answer["body"])


async def test_a_chunked_upload_is_measured_30_mb_get_413_and_a_small_one_is_stored(clients):
    """A 30 MB upload sent chunked got 422 "file field required" (issue 35, finding 9): Django read a
    body without a length as an empty form."""
    from channels.db import database_sync_to_async

    ana = clients[0]
    _, token = await database_sync_to_async(token_create)(user=ana, name="chunked")
    boundary = "hostile-boundary"

    def body(data: bytes) -> bytes:
        return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\n"
                f"Content-Type: text/plain\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()

    status, _, answer = await _asgi_upload(token, body(b"x" * (30 * 1024 * 1024)), boundary)
    assert status == 413 and answer["code"] == "body_too_large"
    assert not await database_sync_to_async(AttachedFile.objects.filter(user=ana).exists)()
    status, _, answer = await _asgi_upload(token, body(NOTES), boundary)
    assert status == 200 and answer["name"] == "notes.txt" and answer["size"] == len(NOTES)


def test_an_upload_that_finds_every_pdf_reader_busy_gets_503_with_retry_after(clients, settings):
    import threading

    from memory.adapters.file_reader import ReadBudget, file_text_within
    from tests.memory.hostile_files import pdf_slow_pages

    settings.MEMORYOS = {**settings.MEMORYOS, "FILE_READERS": 1, "FILE_READERS_WAIT_S": 0.2,
                         "FILE_READ_SECONDS": 3.0}
    ana, ana_client, _, _ = clients
    holder = threading.Thread(target=lambda: file_text_within(
        pdf_slow_pages(), max_chars=1000, max_pixels=1000, budget=ReadBudget(seconds=3, readers=1)))
    holder.start()
    try:
        import time

        time.sleep(0.5)
        response = upload(ana_client, "pages.pdf", pdf_pages(2), "application/pdf")
        assert response.status_code == 503 and response["Retry-After"] == "3"
        assert response.json()["code"] == "busy" and "file readers of this server are busy" in \
            response.json()["message"]
        assert not AttachedFile.objects.filter(user=ana).exists()
    finally:
        holder.join(30)
    assert upload(ana_client, "pages.pdf", pdf_pages(2), "application/pdf").status_code == 200


def test_a_person_reading_a_pdf_waits_for_it_while_others_upload(clients, settings):
    """One reader a person (issue 49, finding 6): ana's second PDF is told to come back at once,
    bob's is read on the place that is left."""
    import threading
    import time

    from memory.adapters.file_reader import ReadBudget, file_text_within
    from tests.memory.hostile_files import pdf_slow_pages

    settings.MEMORYOS = {**settings.MEMORYOS, "FILE_READERS": 2, "FILE_READERS_WAIT_S": 0.2,
                         "FILE_READ_SECONDS": 3.0}
    ana, ana_client, bob, bob_client = clients
    holder = threading.Thread(target=lambda: file_text_within(
        pdf_slow_pages(), max_chars=1000, max_pixels=1000, budget=ReadBudget(seconds=3, readers=2), owner=str(ana.pk)))
    holder.start()
    try:
        time.sleep(0.5)
        refused = upload(ana_client, "pages.pdf", pdf_pages(2), "application/pdf")
        assert refused.status_code == 503 and refused["Retry-After"] == "3"
        assert "Your previous PDF is still being read" in refused.json()["message"]
        assert upload(bob_client, "pages.pdf", pdf_pages(2), "application/pdf").status_code == 200
        assert not AttachedFile.objects.filter(user=ana).exists()
    finally:
        holder.join(30)
    assert upload(ana_client, "pages.pdf", pdf_pages(2), "application/pdf").status_code == 200
