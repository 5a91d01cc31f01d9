"""Replies that use what is known: current facts first, the past value when asked about the past,
relations keeping their owner, statements said back without their lead-in, dates no speakers, and a
sona that keeps answers short."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.engine.fact_answers import KnownFact, answer_from_facts, question_about
from memory.engine.replies import compose_reply
from memory.engine.types import RecalledItem

MARCH = datetime(2026, 3, 1, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, tzinfo=UTC)
MOVED = [KnownFact("User lives in Lyon", MARCH, valid_until=JUNE, successor="User lives in Porto"),
         KnownFact("User lives in Porto", JUNE), KnownFact("User's sister lives in Oslo", JUNE),
         KnownFact("Lia is User's brother's daughter", MARCH)]


def test_the_current_value_answers_and_the_old_one_is_not_said():
    reply = compose_reply("Where do I live?", [], facts=MOVED)
    assert reply.startswith("You live in Porto") and "Lyon" not in reply


def test_the_past_value_answers_a_question_about_the_past_with_its_period():
    reply = compose_reply("Where did I live before?", [], facts=MOVED)
    assert reply == "Before that, you lived in Lyon (until 1 June 2026)."


def test_another_persons_fact_answers_only_about_them():
    assert compose_reply("Where does my sister live?", [], facts=MOVED).startswith("Your sister lives in Oslo")


def test_a_relation_keeps_its_owner():
    reply = compose_reply("Who is Lia?", [], facts=MOVED)
    assert reply.startswith("Lia is your brother's daughter") and "your daughter" not in reply


def test_the_newest_value_of_a_one_value_slot_answers():
    facts = [KnownFact("User works as a librarian", JUNE), KnownFact("User works as a teacher", MARCH)]
    assert compose_reply("What is my job?", [], facts=facts).startswith("You work as a librarian")


def test_what_holds_answers_before_what_was_said_to_have_ended():
    """ "What's my job?" shares "job" with "you left your job at the café", and was answered by it."""
    facts = [KnownFact("User left their job at the café", JUNE), KnownFact("User works as a junior developer at Monzo",
                                                                        JUNE)]
    assert compose_reply("What's my job?", [], facts=facts).startswith("You work as a junior developer at Monzo")


def test_a_turn_that_said_a_superseded_fact_gives_way_to_its_successor():
    """ "I drink about four coffees a day" quoted for "how much coffee do I drink?" after they cut it
    out: the recalled turn said what a superseded fact holds, so what took its place answers."""
    page = RecalledItem(kind="stm_page", ref="p1", text="User: I drink about four coffees a day",
                        score=0.9, timestamp=MARCH, breakdown={"similarity": 0.9})
    facts = [KnownFact("User drinks about four coffees a day", MARCH, valid_until=JUNE,
                       successor="User cut out coffee completely, herbal tea only now"),
             KnownFact("User cut out coffee completely, herbal tea only now", JUNE)]
    reply = compose_reply("How much coffee do I drink?", [page], now=JUNE, facts=facts)
    assert "herbal tea" in reply and "four" not in reply


@pytest.mark.parametrize(("question", "slots"), [
    ("Where do I live?", ("residence",)), ("Who do I work for?", ("employer",)),
    ("What's my cat's name?", ("pet",)), ("When is my birthday?", ("birthday",)),
    ("Who am I dating?", ("partner",)), ("Who am I?", ("name",)),
])
def test_questions_are_read_into_slots(question, slots):
    asked = question_about(question)
    assert asked is not None and set(slots) <= set(asked.slots)


@pytest.mark.parametrize(("question", "asked", "not_asked"), [
    ("What do I do for a living?", "occupation", "residence"), ("How do I earn a living?", "employer", "residence"),
    ("Where am I living now?", "residence", "occupation"), ("Where was I born?", "origin", "residence"),
])
def test_a_word_asks_as_the_part_of_speech_it_is(question, asked, not_asked):
    """"for a living", the noun, asks about work; "living", the verb, about home (issue 50, finding 5)."""
    slots = question_about(question).slots
    assert asked in slots and not_asked not in slots


@pytest.mark.parametrize("question", ["What exercise do I get these days?", "How do I keep up my fitness?"])
def test_exercise_asks_about_what_the_person_does(question):
    assert "activity" in question_about(question).slots


KNOWN = [KnownFact("User works at Globex", JUNE), KnownFact("User has a cat named Miso", MARCH),
         KnownFact("User's birthday is on 4 May", MARCH), KnownFact("User is flying to Kyoto on 3 April", JUNE),
         KnownFact("User is coeliac", MARCH), KnownFact("User's boyfriend is Alex", JUNE),
         KnownFact("User doesn't drink alcohol", MARCH), KnownFact("User plays the cello", MARCH)]


@pytest.mark.parametrize(("question", "answer"), [
    ("Who do I work for?", "You work at Globex"), ("What's my cat called?", "You have a cat named Miso"),
    ("When is my birthday?", "Your birthday is on 4 May"), ("When am I off to Kyoto?", "You're flying to Kyoto"),
    ("Who am I dating?", "Your boyfriend is Alex"),
    ("Do I drink?", "You don't drink alcohol"), ("Which instrument do I play?", "You play the cello"),
])
def test_the_fact_a_question_asks_for_answers_it_and_no_other(question, answer):
    reply = answer_from_facts(question, KNOWN)
    assert reply is not None and answer in reply
    others = [word for word in ("Globex", "Miso", "4 May", "Kyoto", "coeliac", "Alex", "cello") if word not in answer]
    assert not [word for word in others if word in reply]


def test_a_question_about_food_is_answered_by_what_is_known_of_their_diet_and_health():
    reply = answer_from_facts("Can I eat gluten?", KNOWN)
    assert reply is not None and "You're coeliac" in reply
    assert not [word for word in ("Globex", "Miso", "Kyoto", "Alex", "cello") if word in reply]


def test_a_question_no_fact_answers_falls_back_to_the_turns():
    assert answer_from_facts("What did we talk about yesterday?", MOVED) is None


def test_a_statement_is_answered_with_what_it_stores_not_its_lead_in():
    reply = compose_reply("Big news: I moved from Lyon to Porto last week!", [], noted=["User lives in Porto"])
    assert reply == "Got it. I'll remember that you live in Porto."


def test_a_month_is_not_a_speaker():
    page = RecalledItem(kind="stm_page", ref="p1", text="User: Plans for April: Kyoto first, then Osaka.",
                        score=0.9, timestamp=MARCH, breakdown={"similarity": 0.9})
    reply = compose_reply("What are my plans for Kyoto?", [page], now=JUNE)
    assert "April said" not in reply and "Kyoto first" in reply


def test_a_sona_that_keeps_answers_short_gives_short_replies():
    pages = [RecalledItem(kind="stm_page", ref=f"p{i}", text=f"User: I went hiking in the Alps with Ana in week {i}.",
                          score=0.9, timestamp=MARCH, breakdown={"similarity": 0.9}) for i in range(3)]
    long = compose_reply("Tell me about hiking in the Alps?", pages, now=JUNE)
    short = compose_reply("Tell me about hiking in the Alps?", pages, now=JUNE,
                          persona="Friendly; keeps answers short.")
    assert len(short.split()) <= 30 < len(long.split()) and "Here's what I remember" not in short
