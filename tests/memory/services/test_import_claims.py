"""One import at a time for a person, across processes (memory/services/import_claims.py): a
second claim is refused while the first holds, a lapsed one is taken over, and an import started
while another holds the claim stores nothing (issue 49: two `import_history` runs at once left a
batch of duplicates)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from memory.benchmarks.exports import ChatGPTConversation, chatgpt_json
from memory.models import DialoguePage
from memory.services.deletion import user_forget
from memory.services.history_import import history_import
from memory.services.import_claims import (
    IMPORT_LEASE,
    ImportRunning,
    import_claim,
    import_claimed,
    import_release,
    import_renew,
)

pytestmark = pytest.mark.usefixtures("memory_env")


def export() -> bytes:
    chat = ChatGPTConversation("Bees", "bees")
    chat.add("user", "I keep two beehives on my roof in Leeds.")
    chat.add("assistant", "How much honey did they make this year?")
    return chatgpt_json([chat])


def test_a_second_claim_is_refused_until_the_first_is_released(make_user):
    maya, ben = make_user("maya"), make_user("ben")
    first = import_claim(user=maya)
    with pytest.raises(ImportRunning, match="still running"):
        import_claim(user=maya)
    import_release(user=ben, claim=first)  # another person's release is no release of this one
    with pytest.raises(ImportRunning):
        import_claim(user=maya)
    assert import_claim(user=ben)  # each person's own
    import_release(user=maya, claim=first)
    assert import_claim(user=maya) != first


def test_a_claim_not_renewed_lapses_and_its_holder_learns_it_was_taken(make_user):
    maya = make_user("maya")
    now = timezone.now()
    stale = import_claim(user=maya, now=now)
    import_renew(user=maya, claim=stale, now=now + IMPORT_LEASE / 2)  # renewed: still held a lease later
    with pytest.raises(ImportRunning):
        import_claim(user=maya, now=now + IMPORT_LEASE)
    taken = import_claim(user=maya, now=now + IMPORT_LEASE * 2)  # the holder died: taken over
    assert taken != stale
    with pytest.raises(ImportRunning, match="lapsed"):
        import_renew(user=maya, claim=stale, now=now + IMPORT_LEASE * 2 + timedelta(seconds=1))


@pytest.mark.slow
def test_an_import_while_another_holds_the_claim_stores_nothing_and_later_runs(make_user):
    maya = make_user("maya")
    with import_claimed(user=maya):
        with pytest.raises(ImportRunning):
            history_import(user=maya, data=export(), name="conversations.json")
        assert not DialoguePage.objects.filter(user=maya).exists()
    report = history_import(user=maya, data=export(), name="conversations.json")
    assert report.added == 1
    assert import_claim(user=maya)  # the finished import gave its claim back


@pytest.mark.slow
def test_an_upload_while_an_import_runs_elsewhere_is_refused_before_it_is_read(make_user):
    maya = make_user("maya")
    client = Client()
    client.force_login(maya)
    held = import_claim(user=maya)  # as `import_history` in another process would
    answer = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", b"[{]")})
    assert answer.status_code == 400 and "still running" in answer.content.decode()  # not "not JSON"
    import_release(user=maya, claim=held)
    answer = client.post("/settings/import/", {"export": SimpleUploadedFile("conversations.json", b"[{]")})
    assert "not JSON" in answer.content.decode()
    assert import_claim(user=maya)  # the refused upload gave its claim back


def test_an_erase_takes_the_claim_back_so_a_running_import_stops(make_user):
    maya = make_user("maya")
    running = import_claim(user=maya)
    user_forget(user=maya, actor=maya, reason="erased by the person")
    with pytest.raises(ImportRunning):
        import_renew(user=maya, claim=running)  # what the import does before each page
    import_release(user=maya, claim=import_claim(user=maya))  # and the person may import again
