"""import_conversation never half-stores: the whole file is checked first, a re-run adds only what
is missing, and --user follows the sign-up rules."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from memory.formats.locomo import conversation_pages, parse_sample
from memory.models import DialoguePage, MemoryNode, PageStatus
from memory.services.importing import conversation_import
from memory.services.pages import page_reply_store

pytestmark = pytest.mark.usefixtures("memory_env")


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def sample(sessions: dict[int, list[tuple[str, str]]], *, sample_id: str = "tiny") -> dict:
    """A LoCoMo record: session n's (speaker, text) turns, dated a day apart."""
    conversation: dict = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for number, turns in sessions.items():
        conversation[f"session_{number}_date_time"] = f"10:00 am on {number} May, 2023"
        conversation[f"session_{number}"] = [{"speaker": who, "dia_id": f"D{number}:{i + 1}", "text": text}
                                             for i, (who, text) in enumerate(turns)]
    return {"sample_id": sample_id, "conversation": conversation, "qa": []}


SIX_TURNS = {1: [("Ana", "I adopted a golden retriever."), ("Ben", "Lovely! What is his name?"),
                 ("Ana", "Biscuit. He is four."), ("Ben", "Great name.")],
             2: [("Ana", "I started pottery classes."), ("Ben", "What did you make?")]}


def write(tmp_path, records: list[dict]):
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(records))
    return path


def test_a_turn_over_the_limit_is_named_and_nothing_is_stored(tmp_path, settings):
    settings.MEMORYOS = {**settings.MEMORYOS, "MAX_MESSAGE_CHARS": 200}
    long_turn = {2: [("Ana", "I started pottery classes."), ("Ben", "x " * 150)]}
    path = write(tmp_path, [sample(SIX_TURNS, sample_id="good"), sample({**SIX_TURNS, **long_turn}, sample_id="bad")])
    with pytest.raises(CommandError) as err:
        run("import_conversation", str(path), "--user", "ana", "--sample", "0")
    message = str(err.value)
    assert "Nothing was imported" in message
    assert "sample 1 (bad), session 2, turn 1 (D2:2), field 'text': 304 characters" in message
    assert "the limit is 200" in message
    assert DialoguePage.objects.count() == 0
    assert not get_user_model().objects.filter(username="ana").exists()


def test_text_no_database_stores_is_named_and_nothing_is_stored(tmp_path):
    """NUL in a conversation's text: SQLite kept it, PostgreSQL refuses it (issue 35, finding 2)."""
    bad = {2: [("Ana", "I started\u0000 pottery classes."), ("Ben", "Which studio?")]}
    path = write(tmp_path, [sample({**SIX_TURNS, **bad}, sample_id="nul")])
    with pytest.raises(CommandError) as err:
        run("import_conversation", str(path), "--user", "ana", "--sample", "0")
    message = str(err.value)
    assert "Nothing was imported" in message
    assert ("sample 0 (nul), session 2, turn 0, field 'text' holds a NUL character (U+0000) at character 10: "
            "text may hold neither NUL characters nor lone surrogates.") in message
    assert DialoguePage.objects.count() == 0


def test_a_turn_id_given_twice_is_refused(tmp_path):
    twice = sample(SIX_TURNS)
    twice["conversation"]["session_2"][1]["dia_id"] = "D1:2"
    with pytest.raises(CommandError, match=r"session 2, turn 1 \(D1:2\), field 'dia_id': 'D1:2' is also session 1"):
        run("import_conversation", str(write(tmp_path, [twice])), "--user", "ana")
    assert DialoguePage.objects.count() == 0


def test_a_speaker_who_could_not_be_a_persona_is_refused(tmp_path):
    odd = sample(SIX_TURNS)
    odd["conversation"]["speaker_b"] = "B" * 41
    with pytest.raises(CommandError, match=r"sample 0 \(tiny\), field 'speaker_b': a sona's name is at most 40"):
        run("import_conversation", str(write(tmp_path, [odd])), "--user", "ana")
    assert DialoguePage.objects.count() == 0


def test_importing_the_same_file_twice_adds_nothing(tmp_path):
    path = write(tmp_path, [sample(SIX_TURNS)])
    first = run("import_conversation", str(path), "--user", "ana")
    assert "3 pages, 3 added and 0 already stored" in first
    again = run("import_conversation", str(path), "--user", "ana")
    assert "3 pages, 0 added and 3 already stored" in again
    pages = DialoguePage.objects.filter(user__username="ana")
    assert pages.count() == 3
    assert sorted(tuple(p.source_ids) for p in pages) == [("D1:1", "D1:2"), ("D1:3", "D1:4"), ("D2:1", "D2:2")]


def test_the_same_turn_ids_in_another_session_are_other_turns(tmp_path):
    """LoCoMo ids restart in every conversation: another conversation's D1:1 is imported."""
    first = write(tmp_path, [sample(SIX_TURNS, sample_id="a")])
    run("import_conversation", str(first), "--user", "ana")
    other = sample(SIX_TURNS, sample_id="b")
    other["conversation"]["session_1_date_time"] = "10:00 am on 1 June, 2023"
    run("import_conversation", str(write(tmp_path, [other])), "--user", "ana")
    assert DialoguePage.objects.filter(user__username="ana").count() == 5  # session 2 is the same


def test_an_interrupted_import_resumes_with_only_what_is_missing(make_user, monkeypatch):
    user = make_user("resumer")
    conversation = parse_sample(sample(SIX_TURNS), 0)
    pages = conversation_pages(conversation)
    replies = []

    def dies_before_the_third_reply(**kwargs):
        if len(replies) == 2:  # the third page's message is stored; the process stops before its reply
            raise KeyboardInterrupt
        replies.append(kwargs["page"].id)
        return page_reply_store(**kwargs)

    monkeypatch.setattr("memory.services.importing.page_reply_store", dies_before_the_third_reply)
    with pytest.raises(KeyboardInterrupt):
        conversation_import(user=user, conversation=conversation, batched=False)  # a commit per page
    assert DialoguePage.objects.filter(user=user).count() == 3
    assert DialoguePage.objects.filter(user=user, status=PageStatus.PENDING).count() == 1

    monkeypatch.setattr("memory.services.importing.page_reply_store", page_reply_store)
    report = conversation_import(user=user, conversation=conversation)

    assert (report.added, report.already) == (1, 2)
    stored = DialoguePage.objects.filter(user=user).order_by("seq")
    assert [tuple(p.source_ids) for p in stored] == [p.source_ids for p in pages]
    assert all(p.status == PageStatus.COMPLETE for p in stored)
    assert stored[2].response == "Ben: What did you make?"
    assert stored[2].turns_indexed


def test_an_interrupted_batched_import_loses_its_batch_and_adds_it_again(make_user, monkeypatch):
    user = make_user("resumer")
    conversation = parse_sample(sample(SIX_TURNS), 0)
    replies = []

    def dies_before_the_third_reply(**kwargs):
        if len(replies) == 2:
            raise KeyboardInterrupt
        replies.append(kwargs["page"].id)
        return page_reply_store(**kwargs)

    monkeypatch.setattr("memory.services.importing.page_reply_store", dies_before_the_third_reply)
    with pytest.raises(KeyboardInterrupt):
        conversation_import(user=user, conversation=conversation, batched=True)
    # the batch was one transaction: nothing of it stayed, graph included
    assert not DialoguePage.objects.filter(user=user).exists()
    assert not MemoryNode.objects.filter(user=user).exists()

    monkeypatch.setattr("memory.services.importing.page_reply_store", page_reply_store)
    report = conversation_import(user=user, conversation=conversation, batched=True)
    assert (report.added, report.already) == (3, 0)
    assert all(p.status == PageStatus.COMPLETE and p.turns_indexed
               for p in DialoguePage.objects.filter(user=user))


@pytest.mark.parametrize(("name", "reason"), [
    ("bad name <b>/../!", "Enter a valid username"),
    ("x" * 151, "at most 150 characters"),
])
def test_the_user_option_follows_the_sign_up_rules(tmp_path, name, reason):
    path = write(tmp_path, [sample(SIX_TURNS)])
    with pytest.raises(CommandError, match=reason):
        run("import_conversation", str(path), "--user", name)
    assert not get_user_model().objects.exists()
    assert DialoguePage.objects.count() == 0


def test_a_name_differing_only_in_case_is_refused(tmp_path, make_user):
    make_user("Caroline")
    with pytest.raises(CommandError, match="A user named 'Caroline' already exists"):
        run("import_conversation", str(write(tmp_path, [sample(SIX_TURNS)])), "--user", "caroline")
