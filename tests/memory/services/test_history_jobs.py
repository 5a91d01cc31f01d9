"""History imports as jobs (memory/services/history_jobs.py, memory/runtime/imports.py): queued in
order and stored one at a time, giving way to replies, resumed after their process stopped, and
gone with an erase (issue 49, findings 5, 7 and 8)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.benchmarks.exports import ChatGPTConversation, chatgpt_json
from memory.formats.locomo import Conversation, Turn
from memory.models import DialoguePage, HistoryImport, UserMemoryState
from memory.runtime import imports
from memory.services.forgetting import memory_erase_all
from memory.services.history_import import history_read
from memory.services.history_jobs import (
    history_files_sweep,
    history_job_current,
    history_job_queue,
    history_jobs_ahead,
    history_jobs_requeue_stopped,
)
from memory.services.import_claims import import_claim
from memory.services.import_files import imports_dir
from memory.services.importing import GiveWay, conversation_import

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]


def export(topic: str = "bees", exchanges: int = 2) -> bytes:
    chat = ChatGPTConversation(topic.title(), topic)
    for number in range(exchanges):
        chat.add("user", f"Note {number} about my {topic}: they did well this week.")
        chat.add("assistant", "Good to hear.")
    return chatgpt_json([chat])


def queued(user, data: bytes) -> HistoryImport:
    stream = io.BytesIO(data)
    return history_job_queue(user=user, read=history_read(user=user, data=stream, name="conversations.json"),
                             stream=stream, name="conversations.json")


def drain() -> None:
    imports.imports_kick().join(120)


def test_jobs_wait_their_turn_then_are_stored_oldest_first(make_user):
    ana, bo = make_user("ana"), make_user("bo")
    first, second = queued(ana, export("bees")), queued(bo, export("roses", 3))
    assert (imports_dir() / first.file).read_bytes() == export("bees")  # the upload kept until stored
    assert (history_jobs_ahead(first), history_jobs_ahead(second)) == (0, 1)
    assert history_job_current(user=bo) == second
    drain()
    first.refresh_from_db(), second.refresh_from_db()
    assert (first.status, first.done, first.total, first.file) == ("done", 2, 2, "")
    assert (second.status, second.done, second.report["added"]) == ("done", 3, 3)
    assert first.updated_at <= second.updated_at
    assert not list(imports_dir().iterdir())  # files removed once stored
    assert DialoguePage.objects.filter(user=bo).count() == 3 and history_job_current(user=bo) is None


def test_a_job_whose_process_stopped_is_resumed_with_what_is_missing(make_user):
    ana = make_user("ana")
    job = queued(ana, export("bees", 3))
    # It was taken and ran one page, then its process died: its claim lapsed, its row stopped moving.
    conversation_import(user=ana, conversation=history_read(
        user=ana, data=export("bees", 1), name="conversations.json").conversation)
    HistoryImport.objects.filter(pk=job.pk).update(status="running", updated_at=timezone.now() - timedelta(minutes=5))
    assert history_jobs_requeue_stopped() == 1
    imports.imports_resume()
    imports.imports_kick().join(120)
    job.refresh_from_db()
    assert job.status == "done" and (job.report["added"], job.report["already"]) == (2, 1)
    assert DialoguePage.objects.filter(user=ana).count() == 3


def test_a_running_job_with_its_claim_held_is_not_requeued(make_user):
    ana = make_user("ana")
    job = queued(ana, export())
    HistoryImport.objects.filter(pk=job.pk).update(status="running", updated_at=timezone.now() - timedelta(minutes=5))
    import_claim(user=ana)  # its process lives and holds the claim
    assert history_jobs_requeue_stopped() == 0
    UserMemoryState.objects.filter(user=ana).update(import_claimed_until=timezone.now() - timedelta(seconds=1))
    assert history_jobs_requeue_stopped() == 1


def test_uploads_no_job_names_are_swept_once_old(make_user):
    ana = make_user("ana")
    job = queued(ana, export())
    stray = imports_dir() / "stray"
    stray.write_bytes(b"[]")
    assert history_files_sweep() == 0  # too new: it may be a job being queued
    assert history_files_sweep(older_than=timedelta(0)) == 1
    assert not stray.exists() and (imports_dir() / job.file).exists()


def test_an_erase_takes_queued_jobs_and_their_files(make_user):
    ana = make_user("ana")
    job = queued(ana, export())
    memory_erase_all(user=ana)
    assert not HistoryImport.objects.filter(user=ana).exists() and not (imports_dir() / job.file).exists()


def test_an_import_gives_way_to_a_reply_between_pages(make_user):
    """A reply under way ends the batch's transaction at the page being stored; the import waits."""
    ana = make_user("ana")
    turns = tuple(Turn(dia_id=f"d{n}{who}", speaker=who, text=f"{who} line {n}")
                  for n in range(10) for who in ("ana", "Assistant"))
    conversation = Conversation(sample_id="s", speaker_a="ana", speaker_b="Assistant", qa=(),
                                sessions=((1, timezone.now() - timedelta(days=1), turns),))
    asked, waited = [], []

    def wanted() -> bool:
        asked.append(DialoguePage.objects.filter(user=ana).count())
        return len(asked) in (3, 7)  # replies begin after the third and the seventh page

    report = conversation_import(user=ana, conversation=conversation, batched=True,
                                 give_way=GiveWay(wanted=wanted, wait=lambda: waited.append(len(asked))))
    assert report.added == 10 and DialoguePage.objects.filter(user=ana).count() == 10
    # before the first batch's up-front work and before storing it, then after each page a reply wanted
    assert waited == [0, 0, 3, 7]
