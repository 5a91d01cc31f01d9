"""Importing chat histories (memory/services/history_import.py, `manage.py import_history`): pages
with their times under the assistant's sona, a second run adding nothing, an interrupted one
resumed, a broken file storing nothing, and what was imported recalled."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from memory.benchmarks.exports import (
    ChatGPTConversation,
    chatgpt_json,
    chatgpt_zip,
    claude_conversation,
    claude_json,
)
from memory.benchmarks.imported import locomo_chatgpt_export
from memory.formats.locomo import parse_sample
from memory.models import DialoguePage, LifecycleEvent, Sona
from memory.selectors.about_me import about_me
from memory.services.common import MemoryInputError
from memory.services.history_import import history_import
from memory.services.importing import conversation_import
from memory.services.long_term import profile_update
from memory.services.memory_talk import memory_item_forget_plan
from memory.services.recall import recall_for_query
from memory.services.turns import turn_run
from persona.models import KnowledgeFact

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]


def family() -> ChatGPTConversation:
    chat = ChatGPTConversation("Family visit", "fam")
    chat.add("user", "My brother Daniel lives in Porto with his daughter Lia.")
    chat.add("assistant", "How nice! When will you visit them?")
    chat.add("user", "In June, for Lia's fifth birthday.")
    chat.add("assistant", "A birthday trip to Porto sounds wonderful.")
    return chat


def garden() -> ChatGPTConversation:
    chat = ChatGPTConversation("Allotment", "gar")
    chat.add("user", "The tomatoes on my allotment have blight again.", minutes=60 * 24 * 3)
    chat.add("assistant", "Remove the affected leaves and water at the base.", minutes=60 * 24 * 3 + 1)
    return chat


def test_an_export_becomes_pages_with_their_times_and_a_second_run_adds_nothing(make_user):
    user = make_user("maya")
    report = history_import(user=user, data=chatgpt_zip([family(), garden()]), name="chatgpt-export.zip")
    assert (report.format, report.conversations, report.messages, report.pages, report.added) == (
        "chatgpt", 2, 6, 3, 3)
    assert report.titles == ["Family visit", "Allotment"]
    [event] = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.HISTORY_IMPORTED)
    assert event.payload == {"format": "chatgpt", "file": "chatgpt-export.zip", "conversations": 2, "messages": 6,
                             "added": 3, "already": 0, "skipped": {}}
    pages = list(DialoguePage.objects.filter(user=user).order_by("seq"))
    assert [p.query for p in pages] == ["maya: My brother Daniel lives in Porto with his daughter Lia.",
                                        "maya: In June, for Lia's fifth birthday.",
                                        "maya: The tomatoes on my allotment have blight again."]
    assert pages[0].response == "ChatGPT: How nice! When will you visit them?"
    assert [p.timestamp for p in pages] == [family().start.replace(minute=1), family().start.replace(minute=3),
                                            garden().start.replace(day=9)]
    assert {p.sona_id for p in pages} == {Sona.objects.get(user=user, name="ChatGPT").id}
    again = history_import(user=user, data=chatgpt_json([family(), garden()]), name="conversations.json")
    assert (again.added, again.already) == (0, 3) and DialoguePage.objects.filter(user=user).count() == 3

    found = recall_for_query(user=user, query="Where does my brother live?", update_heat=False, record_trace=False)
    assert any("Daniel lives in Porto" in item.text for item in found.items[:5])


def test_progress_counts_each_page_stored(make_user):
    """The page's progress stayed at "Storing 0 of N" until the end (issue 49, finding 5): the
    count came from a progress bar that counts nothing when it is not shown."""
    told = []
    history_import(user=make_user("maya"), data=chatgpt_json([family(), garden()]), name="conversations.json",
                   on_page=lambda done, total: told.append((done, total)))
    assert told == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_an_interrupted_import_resumes_with_what_is_missing(make_user):
    user = make_user("maya")
    history_import(user=user, data=chatgpt_json([family()]), name="conversations.json")  # stopped after one
    report = history_import(user=user, data=chatgpt_json([family(), garden()]), name="conversations.json")
    assert (report.added, report.already) == (1, 2)
    assert DialoguePage.objects.filter(user=user).count() == 3


def test_another_text_under_the_same_ids_and_times_is_stored_not_skipped(make_user):
    """An import knows a page by its ids, time and words (issue 49, finding 7): a file that reuses
    another's ids and times for other text adds that text instead of calling it already stored."""
    user = make_user("maya")
    history_import(user=user, data=chatgpt_json([garden()]), name="conversations.json")
    other = json.loads(chatgpt_json([garden()]))
    other[0]["mapping"]["gar-m1"]["message"]["content"]["parts"] = ["My courgettes have mildew instead."]
    report = history_import(user=user, data=json.dumps(other).encode(), name="conversations.json")
    assert (report.added, report.already) == (1, 0)
    assert sorted(DialoguePage.objects.filter(user=user).values_list("query", flat=True)) == [
        "maya: My courgettes have mildew instead.", "maya: The tomatoes on my allotment have blight again."]
    assert history_import(user=user, data=json.dumps(other).encode(), name="conversations.json").added == 0


def test_a_broken_file_stores_nothing_and_names_the_place(make_user):
    user = make_user("maya")
    broken = json.loads(chatgpt_json([family(), garden()]))
    broken[1]["mapping"]["gar-m2"]["message"]["create_time"] = "tomorrow"
    with pytest.raises(MemoryInputError, match=r"Nothing was imported: .*conversation 2 \('Allotment'\), "
                                               r"message 'gar-m2', field 'create_time'"):
        history_import(user=user, data=json.dumps(broken).encode(), name="conversations.json")
    assert not DialoguePage.objects.filter(user=user).exists()
    assert not Sona.objects.filter(user=user).exists()


def test_a_title_no_memory_can_hold_stores_nothing(make_user):
    """A NUL in a conversation's title is refused as in any text (issue 49, finding 8)."""
    user = make_user("maya")
    titled = json.loads(chatgpt_json([family(), garden()]))
    titled[1]["title"] = "Allot\u0000ment"
    with pytest.raises(MemoryInputError, match=r"conversation 2, its title, holds a NUL character"):
        history_import(user=user, data=json.dumps(titled).encode(), name="conversations.json")
    assert not DialoguePage.objects.filter(user=user).exists()


def test_settings_limit_what_one_file_may_hold(make_user, settings):
    user = make_user("maya")
    settings.MEMORYOS_HISTORY_IMPORT_MAX_MESSAGES = 5
    with pytest.raises(MemoryInputError, match="more than 5 messages"):
        history_import(user=user, data=chatgpt_json([family(), garden()]), name="conversations.json")
    settings.MEMORYOS_HISTORY_IMPORT_MAX_MESSAGES, settings.MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES = 6, 100
    with pytest.raises(MemoryInputError, match="more than 100 bytes once unpacked"):
        history_import(user=user, data=chatgpt_json([family(), garden()]), name="conversations.json")
    assert not DialoguePage.objects.filter(user=user).exists()


def test_the_command_imports_a_claude_export_and_reports_what_it_skipped(make_user, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(claude_json([claude_conversation("Cello", "c1", [
        ("human", "I started learning the cello in September."), ("assistant", "Wonderful! Who teaches you?"),
        ("human", ""), ("human", "A teacher called Ruth.")], **{"2": {"files": [{"file_name": "bow.jpg"}]}})]))
    out = io.StringIO()
    call_command("import_history", str(path), "--user", "ana", "--no-progress", stdout=out)
    assert "imported claude export conversations.json: 1 conversations, 3 messages as 2 pages (2 added" in \
        out.getvalue() and "skipped: 1 not text" in out.getvalue()
    assert DialoguePage.objects.filter(user__username="ana", sona__name="Claude").count() == 2
    (tmp_path / "bad.json").write_text('[{"title": "Trip", "mapping": ')
    with pytest.raises(CommandError, match="Nothing was imported: bad.json: not JSON"):
        call_command("import_history", str(tmp_path / "bad.json"), "--user", "ana", stdout=io.StringIO())


def test_an_imported_request_not_to_keep_becomes_no_fact(make_user):
    """A line of an export that asks not to keep something is read as a request, whoever's name
    the page carries ("maya: …"), and what it names never becomes a fact (issue 49)."""
    user = make_user("maya")
    chat = ChatGPTConversation("Private", "pri")
    chat.add("user", "I have a dog named Rex.")
    chat.add("assistant", "Rex is a great name.")
    chat.add("user", "Please don't store this anywhere: I'm moving to Oslo in May.")
    chat.add("assistant", "Understood.")
    history_import(user=user, data=chatgpt_json([chat]), name="conversations.json")
    facts = list(KnowledgeFact.objects.filter(user=user).values_list("text", flat=True))
    assert any("Rex" in text for text in facts)
    assert not any("Oslo" in text for text in facts)


def test_an_imported_facts_source_quotes_the_person_without_their_name(make_user):
    """Issue 50, finding 5: imported quotes started with the speaker's name ("Tomasz: My cat …")."""
    user = make_user("maya")
    chat = ChatGPTConversation("Pets", "pets")
    chat.add("user", "My cat is called Pickle.")
    chat.add("assistant", "Pickle is a lovely name.")
    history_import(user=user, data=chatgpt_json([chat]), name="conversations.json")
    sources = [source.text for fact in about_me(user=user).facts for source in fact.sources]
    assert "My cat is called Pickle." in sources and not any(text.startswith("maya:") for text in sources)


def test_forgetting_ones_name_does_not_reach_every_imported_turn(make_user):
    """Imported turns are stored as "Maya: …": forgetting the name "Maya" found them all."""
    user = make_user("maya")
    profile_update(user=user, name="Maya")
    history_import(user=user, data=chatgpt_json([family(), garden()]), name="conversations.json")
    plan = memory_item_forget_plan(user=user, kind="profile", ident="name")
    assert not plan.told and not plan.spoke and not plan.redacted


def test_after_an_import_a_question_about_work_is_answered_with_the_work(make_user):
    """Issue 50, finding 5: after an import, "What do I do for a living?" was answered with where
    the person had lived: the noun "living" asked about home as well as work."""
    user = make_user("maya")
    chat = ChatGPTConversation("About me", "me")
    chat.add("user", "Back in 2021 I lived in Galway.")
    chat.add("assistant", "Galway is a lovely city.")
    chat.add("user", "I work as a physiotherapist at a clinic in Cork.")
    chat.add("assistant", "That sounds rewarding.")
    history_import(user=user, data=chatgpt_json([chat]), name="conversations.json")
    reply = turn_run(user=user, message="What do I do for a living?").reply
    assert "physiotherapist" in reply and "Galway" not in reply
    assert "Galway" in turn_run(user=user, message="Where was I living in 2021?").reply


def test_an_export_of_a_locomo_conversation_stores_its_words_but_for_the_assistants_name(make_user):
    """Issue 51: a conversation imported from ChatGPT's export and from LoCoMo's file differ in the
    assistant's name alone (the export cannot hold what speaker_b was called): the same pages, at the
    same times, of the same words, under the same turns."""
    said = [("Ana", "I adopted a golden retriever today! He is Max."), ("Ben", "Congratulations, Ana!"),
            ("Ana", "On weekends I hike with Max."), ("Ben", "Does Max like the mountains?"),
            ("Ana", "He loves them."), ("Ana", "And the lake too.")]
    sample = {"sample_id": "tiny", "qa": [], "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "10:00 am on 7 May, 2023",
        "session_1": [{"speaker": who, "dia_id": f"D1:{n}", "text": text} for n, (who, text) in enumerate(said, 1)]}}
    conversation = parse_sample(sample, 0)
    native, imported = make_user("ana-file"), make_user("ana-export")
    profile_update(user=imported, name="Ana")
    conversation_import(user=native, conversation=conversation)
    history_import(user=imported, data=locomo_chatgpt_export(conversation), name="conversations.json")

    def stored(user, assistant: str) -> list:
        pages = DialoguePage.objects.filter(user=user).order_by("seq")
        return [(page.timestamp, [i.removeprefix("chatgpt:tiny-s1:") for i in page.source_ids],
                 page.query.replace(f"{assistant}: ", "Ben: "), page.response.replace(f"{assistant}: ", "Ben: "),
                 [("Ben" if u["speaker"] == assistant else u["speaker"], u["text"]) for u in page.utterances])
                for page in pages]

    assert stored(imported, "ChatGPT") == stored(native, "Ben")
    assert len(stored(native, "Ben")) == 3
