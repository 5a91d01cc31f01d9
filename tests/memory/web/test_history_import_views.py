"""/settings/import/: a person uploads an export, watches its progress and reads its summary; a
broken file is refused at once and stores nothing; another person cannot see the job."""

from __future__ import annotations

import io
import time
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from memory.benchmarks.exports import ChatGPTConversation, chatgpt_json
from memory.models import DialoguePage
from memory.runtime import imports
from memory.services.forgetting import memory_erase_all
from memory.web import history_import

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]


def export() -> bytes:
    chat = ChatGPTConversation("Bees", "bees")
    chat.add("user", "I keep two beehives on my roof in Leeds.")
    chat.add("assistant", "How much honey did they make this year?")
    chat.add("user", "About twelve jars.")
    chat.add("assistant", "That's a good harvest for two hives.")
    chat.add("tool", "weather lookup")
    return chatgpt_json([chat])


def signed_in(make_user, name: str) -> tuple:
    user = make_user(name)
    client = Client()
    client.force_login(user)
    return user, client


def finished(client: Client, url: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = client.get(url, HTTP_HX_REQUEST="true").content.decode()
        if 'id="import-bar"' not in page:
            return page
        time.sleep(0.2)
    raise AssertionError("the import did not finish")


def test_an_upload_shows_progress_then_a_summary_and_only_to_its_owner(make_user):
    user, client = signed_in(make_user, "maya")
    answer = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    assert answer.status_code == 302 and answer.url.startswith("/settings/import/")
    page = finished(client, answer.url)
    assert 'id="import-summary"' in page and "4 messages read as 2 exchanges;\n        2 added" in page
    assert "Skipped: 1 tool." in page and "<li>Bees</li>" in page
    assert "<!DOCTYPE html>" not in page  # the htmx answer is the progress partial alone
    assert DialoguePage.objects.filter(user=user).count() == 2
    assert "Done:" in client.get(answer.url).content.decode()  # and the whole page, without htmx

    _, other = signed_in(make_user, "ben")
    assert other.get(answer.url).status_code == 404

    again = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    assert "0 added, 2 already in your memory" in finished(client, again.url)


def test_a_broken_file_is_refused_at_once_and_stores_nothing(make_user):
    user, client = signed_in(make_user, "maya")
    answer = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", b"[{]")})
    assert answer.status_code == 400
    assert "Nothing was imported: conversations.json: not JSON (invalid object key" in answer.content.decode()
    assert client.post("/settings/import/", {}).status_code == 400
    assert not DialoguePage.objects.filter(user=user).exists()
    assert Client().get("/settings/import/").status_code == 302  # signed out: to the sign-in page


def test_an_upload_past_the_unpacked_limit_is_refused_and_stores_nothing(make_user, settings):
    """The limit holds for what the zip inflates to, not the upload's own size (issue 49)."""
    settings.MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES = 4096
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", chatgpt_json([ChatGPTConversation("Pad", "pad")] * 200))
    assert len(buffer.getvalue()) < 4096  # small as sent
    user, client = signed_in(make_user, "maya")
    answer = client.post("/settings/import/", {"export": SimpleUploadedFile("export.zip", buffer.getvalue())})
    assert answer.status_code == 400
    assert "more than 4,096 bytes once unpacked" in answer.content.decode()
    assert not DialoguePage.objects.filter(user=user).exists()
    # the person's claim was given back: a good file goes through at once
    settings.MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES = 1 << 20
    good = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    assert good.status_code == 302 and "2 added" in finished(client, good.url)


def test_uploads_wait_for_a_reader_and_are_refused_when_none_frees(make_user, settings, monkeypatch):
    settings.MEMORYOS_HISTORY_IMPORT_READERS = 1
    monkeypatch.setattr(history_import, "READ_WAIT_S", 0.1)
    turn = history_import._reader_turn()
    user, client = signed_in(make_user, "maya")
    assert turn.acquire(timeout=1)  # another upload is being read
    try:
        busy = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    finally:
        turn.release()
    assert busy.status_code == 400 and "reading other uploads" in busy.content.decode()
    assert not DialoguePage.objects.filter(user=user).exists()
    done = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    assert done.status_code == 302 and "2 added" in finished(client, done.url)


def test_an_erase_takes_the_import_pages_away_at_once(make_user):
    """Issue 49, finding 7: the job page showed the titles for a day after an erase."""
    user, client = signed_in(make_user, "maya")
    answer = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    assert "<li>Bees</li>" in finished(client, answer.url)
    memory_erase_all(user=user)
    assert client.get(answer.url).status_code == 404
    assert "An import of yours is running" not in client.get("/settings/import/").content.decode()


def test_uploads_queue_one_a_person_and_say_how_many_are_ahead(make_user, monkeypatch):
    monkeypatch.setattr(history_import, "imports_kick", lambda: None)  # the worker busy elsewhere
    _, ana = signed_in(make_user, "ana")
    _, bo = signed_in(make_user, "bo")
    first = ana.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    second = bo.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    assert "Checked and waiting to be stored: 1 import ahead of yours." in bo.get(second.url).content.decode()
    again = ana.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", export())})
    assert again.status_code == 400 and "still running" in again.content.decode()
    imports.imports_kick()
    assert "2 added" in finished(ana, first.url) and "2 added" in finished(bo, second.url)
