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


@pytest.mark.parametrize(("question", "slots"), [
    ("Where do I live?", ("residence",)), ("Who do I work for?", ("employer",)),
    ("What's my cat's name?", ("pet",)), ("When is my birthday?", ("birthday",)),
    ("Who am I dating?", ("partner",)), ("Who am I?", ("name",)),
])
def test_questions_are_read_into_slots(question, slots):
    asked = question_about(question)
    assert asked is not None and asked.slots == slots


def test_a_question_no_fact_answers_falls_back_to_the_turns():
    assert answer_from_facts("What did we talk about yesterday?", MOVED) is None


def test_a_statements_lead_in_is_not_remembered():
    reply = compose_reply("Big news: I moved from Lyon to Porto last week!", [])
    assert "Big news" not in reply and "you moved from Lyon to Porto" in reply


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
