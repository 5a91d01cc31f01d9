"""The offline fact extractor: what a statement says about the person and the people they name,
each fact keeping its owner; hypotheticals, visits and questions claim nothing of the person's own."""

from __future__ import annotations

import pytest

from memory.engine.facts import fact_reading, facts_of, validate_turn_facts
from memory.engine.supersession import SELF


def texts(statement: str) -> list[str]:
    return [fact.text for fact in facts_of(statement)]


@pytest.mark.parametrize(("statement", "expected"), [
    ("I live in Lyon with my cat Miso.", ["User has a cat named Miso", "User lives in Lyon"]),
    ("Big news: I moved from Lyon to Porto last week!", ["User lives in Porto"]),
    ("I just started a new job at Globex!", ["User works at Globex"]),
    ("I'm a nurse.", ["User works as a nurse"]),
    ("I'm vegetarian now.", ["User is vegetarian"]),
    ("I love hiking and I hate coffee.", ["User loves hiking", "User hates coffee"]),
    ("My favourite food is sushi.", ["User's favourite food is sushi"]),
    ("My brother's daughter Lia starts school in May.",  # family's schooling is the person's to tell
     ["Lia is User's brother's daughter", "User's brother's daughter Lia starts school in May"]),
    ("I'm flying to Kyoto on April 3rd.", ["User is flying to Kyoto on April 3rd"]),
    ("I'm allergic to peanuts.", ["User is allergic to peanuts"]),
    ("I quit my job at Acme.", ["User left their job at Acme"]),
    ("My sister moved to Oslo.", ["User's sister lives in Oslo"]),
])
def test_statements_become_facts_in_the_third_person(statement, expected):
    assert texts(statement) == expected


@pytest.mark.parametrize("statement", [
    "If I moved to Berlin I'd learn German.",
    "Where do I live?",
    "Maybe I should move to Paris someday.",
])
def test_hypotheticals_and_questions_state_nothing(statement):
    assert texts(statement) == []


def test_a_visit_is_a_trip_not_a_residence():
    [fact] = facts_of("I'm visiting Rome.")
    assert (fact.slot, fact.text) == ("trip", "User is visiting Rome")


def test_another_persons_fact_keeps_its_owner():
    [fact] = facts_of("My sister moved to Oslo.")
    assert (fact.subject, fact.slot, fact.value) == ("sister", "residence", "oslo")
    [mine] = facts_of("I moved to Oslo.")
    assert mine.subject == SELF


@pytest.mark.parametrize(("stored", "slot", "value"), [
    ("User lives in Porto", "residence", "porto"),
    ("User's sister lives in Oslo", "residence", "oslo"),
    ("Lia is User's brother's daughter", "family", "brother's daughter"),
    ("User is flying to Kyoto on April 3rd", "plan", "april 3rd"),
    ("User's plan: flying to Kyoto on April 3rd", "plan", "april 3rd"),  # as plans were stored before
    ("User left their job at Acme", "employer", ""),
])
def test_a_stored_fact_reads_back_as_its_slot(stored, slot, value):
    reading = fact_reading(stored)
    assert reading is not None and (reading.slot, reading.value) == (slot, value)


def test_the_models_facts_are_read_tolerantly():
    assert validate_turn_facts({"facts": ["User lives in Porto.", " ", {"text": "User has a cat"}, 3]}) == (
        "User lives in Porto", "User has a cat")
    assert validate_turn_facts(["User lives in Porto"]) == ("User lives in Porto",)
    with pytest.raises(ValueError):
        validate_turn_facts("User lives in Porto")
