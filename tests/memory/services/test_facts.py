"""Facts at the turn they are told, through the real write path (turn_run with maintenance inline):
stored at once with provenance, told twice kept once with two sources, changes superseded before
the next reply, non-changes leaving the fact, each turn's changes announced, and undone."""

from __future__ import annotations

import pytest

from memory.models import LifecycleEvent, MemoryEdge
from memory.selectors.about_me import about_me
from memory.services.common import MemoryNotFound
from memory.services.facts import (
    fact_change_undo,
    fact_changes_listen,
    fact_changes_of_page,
    fact_changes_unlisten,
)
from memory.services.turns import turn_run
from persona.models import KnowledgeFact, Supersession

pytestmark = pytest.mark.usefixtures("memory_env")


def current(user) -> set[str]:
    return set(KnowledgeFact.objects.filter(user=user, valid_until__isnull=True).values_list("text", flat=True))


def test_a_fact_is_stored_at_its_turn_with_the_page_and_speaker(make_user):
    user = make_user()
    result = turn_run(user=user, message="I live in Lyon with my cat Miso.")

    assert current(user) == {"User lives in Lyon", "User has a cat named Miso"}
    fact = KnowledgeFact.objects.get(user=user, text="User lives in Lyon")
    assert fact.source_page_ids == [str(result.page.id)] and fact.valid_from is not None
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.FACT_ADDED, subject_id=str(fact.pk))
    assert event.payload["page_id"] == str(result.page.id)
    assert event.payload["speaker"] and event.payload["via"] == "offline"
    assert MemoryEdge.objects.filter(user=user, relation="stated_in", source__object_id=str(fact.pk)).exists()


def test_the_same_fact_told_twice_is_one_fact_with_two_sources(make_user):
    user = make_user()
    first = turn_run(user=user, message="I live in Lyon.")
    second = turn_run(user=user, message="As I said, I live in Lyon.")

    [fact] = KnowledgeFact.objects.filter(user=user)
    assert fact.source_page_ids == [str(first.page.id), str(second.page.id)]
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.FACT_ADDED).count() == 1


def test_a_move_supersedes_the_old_residence_before_the_next_reply(make_user):
    user = make_user()
    turn_run(user=user, message="I live in Lyon with my cat Miso.")
    moved = turn_run(user=user, message="Big news: I moved from Lyon to Porto last week!")

    assert current(user) == {"User lives in Porto", "User has a cat named Miso"}
    lyon = KnowledgeFact.objects.get(user=user, text="User lives in Lyon")
    assert lyon.valid_until is not None and lyon.superseded_by is not None
    [change] = fact_changes_of_page(user=user, page_id=str(moved.page.id))
    assert (change.action, change.text, change.previous) == ("changed", "User lives in Porto", "User lives in Lyon")
    reply = turn_run(user=user, message="Where do I live?").reply
    assert "Porto" in reply and "Lyon" not in reply


@pytest.mark.parametrize("message", [
    "I'm visiting Rome this week, it's lovely.",
    "If I moved to Berlin I would learn German.",
    "My sister moved to Oslo.",
])
def test_visits_hypotheticals_and_other_peoples_moves_leave_the_persons_fact(make_user, message):
    user = make_user()
    turn_run(user=user, message="I live in Lyon.")
    turn_run(user=user, message=message)

    assert "User lives in Lyon" in current(user)
    assert not Supersession.objects.filter(user=user).exists()


def test_another_persons_fact_keeps_its_owner(make_user):
    user = make_user()
    turn_run(user=user, message="My sister moved to Oslo.")
    assert current(user) == {"User's sister lives in Oslo"}


def test_each_turns_changes_are_announced_to_the_listeners(make_user):
    user = make_user()
    heard = []

    def listener(**kwargs):
        heard.append(kwargs)

    fact_changes_listen(listener)
    try:
        turn_run(user=user, message="I live in Lyon.")
        moved = turn_run(user=user, message="I moved from Lyon to Porto.")
        turn_run(user=user, message="Nice weather today.")
    finally:
        fact_changes_unlisten(listener)
    assert [[c.action for c in h["changes"]] for h in heard] == [["remembered"], ["changed"]]
    assert heard[1]["page_id"] == str(moved.page.id) and heard[1]["user_id"] == user.pk


def test_undo_deletes_the_fact_audited_and_makes_the_old_one_current_again(make_user):
    user = make_user()
    turn_run(user=user, message="I live in Lyon.")
    moved = turn_run(user=user, message="I moved from Lyon to Porto.")
    [change] = fact_changes_of_page(user=user, page_id=str(moved.page.id))

    restored = fact_change_undo(user=user, fact_id=change.fact_id)

    assert restored == ["User lives in Lyon"]
    assert current(user) == {"User lives in Lyon"}
    event = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.DELETED).latest("id")
    assert event.subject_id == change.fact_id and "undone" in event.payload["reason"]


def test_undo_takes_back_the_words_too_not_only_the_fact(make_user):
    """Issue 50, finding 3: after Undo, /me/ still listed the sentence as a thing said about oneself,
    and "what do you know about me?" still named it."""
    user = make_user()
    told = turn_run(user=user, message="My favourite colour is green.")
    [change] = fact_changes_of_page(user=user, page_id=str(told.page.id))
    fact_change_undo(user=user, fact_id=change.fact_id)
    assert not [s for s in about_me(user=user).statements if "green" in s.text]
    assert "green" not in turn_run(user=user, message="What do you know about me?").reply


def test_undo_of_another_users_fact_is_refused(make_user):
    owner, other = make_user(), make_user()
    turn_run(user=owner, message="I live in Lyon.")
    fact = KnowledgeFact.objects.get(user=owner)
    with pytest.raises(MemoryNotFound):
        fact_change_undo(user=other, fact_id=str(fact.pk))
    assert KnowledgeFact.objects.filter(pk=fact.pk).exists()


def test_a_fact_promotion_learns_late_is_ended_by_the_newer_change(make_user, memory_env):
    """Promotion reads a segment's older turns after the move was read at its turn: what it learns
    about where they lived is history at once, not current again."""
    from datetime import UTC, datetime, timedelta

    from memory.services.pages import page_start
    from memory.services.turns import page_complete

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1, "FSCORE_THRESHOLD": 0.0}  # one segment
    user = make_user()
    start = datetime(2025, 3, 1, tzinfo=UTC)
    lines = ["I live in Leeds with my two cats.", "The cats love the garden.", "I painted the kitchen blue.",
             "My neighbours are lovely.", "We moved from Leeds to York last week!", "The new garden is tiny.",
             "Closing line."]
    for day, line in enumerate(lines):
        page_complete(page=page_start(user=user, query=line, timestamp=start + timedelta(days=day)),
                      response="Noted.", reply_model="test")

    # Promotion reads the segment's turns late with the same reader: it adds no second Leeds fact,
    # and the one there is history.
    assert KnowledgeFact.objects.filter(user=user, text__icontains="Leeds").count() == 1
    assert not [t for t in current(user) if "Leeds" in t and "York" not in t]
    assert "User lives in York" in current(user)


def test_a_models_prompt_carries_current_facts_first_and_the_past_with_its_period(make_user, memory_env,
                                                                                   chat_model):
    from memory.adapters import configured

    memory_env.LLM_ENABLED = False  # the first turns are answered offline
    configured.chat_model.cache_clear()
    user = make_user()
    turn_run(user=user, message="I live in Lyon.")
    turn_run(user=user, message="I moved from Lyon to Porto.")
    chat_model.reply("You live in Porto.")
    memory_env.LLM_ENABLED = True
    configured.chat_model.cache_clear()

    turn_run(user=user, message="Where do I live?")

    system = [call for call in chat_model.calls if call.stream][-1].messages[0].content
    facts = system.split("## Facts about the user", 1)[1]
    assert facts.index("User lives in Porto") < facts.index("User lives in Lyon (until")
    assert "since then: User lives in Porto" in facts


def test_with_the_model_reading_turns_its_facts_are_stored_and_bad_answers_fall_back(make_user, memory_env,
                                                                                       chat_model):
    from memory.services.facts import facts_read

    user = make_user()
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "TURN_FACTS_MODEL": True}

    chat_model.reply('Sure: {"facts": ["User lives in Porto.", {"text": "User has a cat named Miso"}]}')
    assert facts_read(user_id=user.pk, text="I live in Porto with Miso, my cat.") == (
        ["User lives in Porto", "User has a cat named Miso"], "model")
    chat_model.reply("I cannot answer in JSON today.")
    assert facts_read(user_id=user.pk, text="I live in Porto.") == (["User lives in Porto"], "offline")
    assert LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.MODEL_OUTPUT_REJECTED,
                                         payload__task="turn_facts").exists()
    calls = len(chat_model.calls)
    assert facts_read(user_id=user.pk, text="I live in Porto.", live=False) == (["User lives in Porto"], "offline")
    assert len(chat_model.calls) == calls  # an imported page costs no model call


def test_facts_read_at_their_turn_leave_the_vector_index_as_it_was_unless_asked(make_user, memory_env):
    """Recall ranks as before (BM25 statistics, the long-term boost): the reply reads the facts
    itself. TURN_FACTS_INDEXED gives them points too."""
    from memory.adapters import configured

    user = make_user()
    turn_run(user=user, message="I live in Lyon.")
    assert KnowledgeFact.objects.filter(user=user).count() == 1
    assert configured.vector_index().count(user_id=str(user.pk), kind="kb") == 0

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "TURN_FACTS_INDEXED": True}
    turn_run(user=user, message="I have a cat named Miso.")
    assert configured.vector_index().count(user_id=str(user.pk), kind="kb") == 1


@pytest.mark.parametrize("request_to_memory", [
    "Forget that I live in Lyon.", "Why do you think I live in Lyon?",
    # a request not to keep, however it is put (issue 49): no fact, no promise
    "Hey, forget that I live in Lyon.", "I want you to forget that I live in Lyon.",
    "Never store this: I live in Lyon", "I live in Lyon, but keep that to yourself.",
    "Off the record: I live in Lyon.", "You don't need to remember that I live in Lyon.",
])
def test_a_request_to_memory_states_no_new_fact(make_user, request_to_memory):
    user = make_user()
    turn_run(user=user, message="I have a dog named Rex.")
    result = turn_run(user=user, message=request_to_memory)
    assert not LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.FACT_ADDED, payload__source="turn",
                                             payload__page_id=str(result.page.id)).exists()
    assert not KnowledgeFact.objects.filter(user=user, text__contains="Lyon").exists()
    assert "remember that" not in result.reply.lower()


def test_a_correction_that_finds_nothing_to_correct_is_remembered_as_told(make_user):
    user = make_user()
    turn_run(user=user, message="I have a dog named Rex.")
    result = turn_run(user=user, message="That's wrong, I live in Porto.")
    assert "User lives in Porto" in current(user)
    assert "I'll remember that you live in Porto" in result.reply


@pytest.mark.slow
def test_a_new_job_told_with_the_leaving_answers_where_the_person_works_now(make_user):
    """Issue 48: "I've left my job at Larkfield Hospital, I'm now at Northgate Pharmacy" → "Where do
    I work now?" was answered "You left your job at Larkfield Hospital"."""
    user = make_user()
    turn_run(user=user, message="I'm a pharmacist at Larkfield Hospital.")
    turn_run(user=user, message="I've left my job at Larkfield Hospital, I'm now at Northgate Pharmacy.")
    reply = turn_run(user=user, message="Where do I work now?").reply
    assert "Northgate Pharmacy" in reply and "Larkfield" not in reply
