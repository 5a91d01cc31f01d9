"""Recognising requests about memory itself, and matching what they point at (pure)."""

from __future__ import annotations

from datetime import datetime

import pytest

from memory.engine.memory_talk import (
    Candidate,
    Intent,
    choose,
    contradicts,
    correction_parts,
    denial,
    detect,
    first_person,
    given_values,
    group,
    period,
    quotes,
    replace_given,
    third_person,
)


@pytest.mark.parametrize(("message", "intent", "target"), [
    ("What do you know about me?", Intent.WHAT, ""),
    ("Tell me what you remember about me.", Intent.WHAT, ""),
    ("Forget that I have a cat.", Intent.FORGET, "I have a cat"),
    ("Can you erase the fact that I'm allergic to peanuts?", Intent.FORGET, "I'm allergic to peanuts"),
    ("Please forget what I told you about my job", Intent.FORGET, "my job"),
    ("Never store this: I live in Lisbon", Intent.FORGET, "I live in Lisbon"),
    ("I want you to forget my phone number.", Intent.FORGET, "my phone number"),
    ("Can you not remember where I work? It's Northgate Pharmacy.", Intent.FORGET, "where I work"),
    ("That's wrong, I live in Porto.", Intent.CORRECT, "I live in Porto"),
    ("No, you've got that wrong: I work at Bosch now.", Intent.CORRECT, "I work at Bosch now"),
    ("Correction: my cat is called Tom", Intent.CORRECT, "my cat is called Tom"),
    ("Why do you think I live in Porto?", Intent.WHY, "I live in Porto"),
    ("What makes you think I'm vegetarian?", Intent.WHY, "I'm vegetarian"),
    ("How do you know I have a dog?", Intent.WHY, "I have a dog"),
    ("undo", Intent.UNDO, ""),
])
def test_requests_about_memory_are_recognised(message, intent, target):
    request = detect(message)
    assert request is not None and (request.intent, request.target) == (intent, target)


@pytest.mark.parametrize("message", ["I live in Porto.", "Where do I live?", "What do you know about Lisbon?",
                                     "Forget it, let's talk about films.", "I forgot my keys at work.",
                                     "Why is the sky blue?", "That's a wrong turn we took in Rome."])
def test_ordinary_messages_are_not_requests(message):
    assert detect(message) is None


MISO = Candidate("page", "1", "I have a cat named Miso.")
TOM = Candidate("page", "2", "My neighbour has a cat called Tom.")
MISO_FACT = Candidate("fact", "3", "User has a cat named Miso")
LYON = Candidate("page", "4", "I live in Lyon.")


def test_a_target_matching_two_distinct_memories_makes_two_groups():
    groups = group("I have a cat", [MISO, TOM, MISO_FACT, LYON])
    assert [[c.ident for c in g.members] for g in groups] == [["1", "3"], ["2"]]
    assert groups[0].label == MISO_FACT  # a fact names a memory best


def test_a_name_singles_out_one_memory_and_quotes_follow_it():
    groups = group("my cat Miso", [MISO, TOM, MISO_FACT])
    assert len(groups) == 1 and {c.ident for c in groups[0].members} == {"1", "3"}
    assert quotes(groups[0], "my cat Miso", "What is Miso eating today?")
    assert not quotes(groups[0], "my cat Miso", "Tom the cat is asleep")


@pytest.mark.parametrize(("answer", "picked"), [("the first one", [0]), ("2", [1]), ("both", [0, 1]),
                                                 ("Tom", [1]), ("none", []), ("What's the weather?", None)])
def test_an_answer_picks_options(answer, picked):
    assert choose(answer, ["\"I have a cat named Miso\"", "\"My neighbour has a cat called Tom\""]) == picked


def test_a_correction_names_the_new_value_and_the_old_one():
    assert correction_parts("I don't live in Lyon, I live in Porto") == ("I live in Porto", "lyon")
    assert contradicts("I live in Porto", "User lives in Lyon")
    assert not contradicts("I live in Porto", "I love the food in Porto")
    assert not contradicts("I live in Porto", "I live in Porto now")


def test_a_correction_in_two_clauses_keeps_the_fact_of_each():
    """Joined back with a comma, the first clause's cleft was lost: "User is allergic to"."""
    new, old = correction_parts("it's hazelnuts I'm allergic to — I got muddled with my son's allergy", sentences=True)
    assert (new, old) == ("it's hazelnuts I'm allergic to. I got muddled with my son's allergy", "")
    assert third_person(new) == "User is allergic to hazelnuts"


def test_statements_turn_into_facts_and_back():
    assert third_person("I live in Porto") == "User lives in Porto"
    assert third_person("I'm vegetarian") == "User is vegetarian"
    assert first_person("User lives in Porto") == "you live in Porto"
    assert first_person("User has a cat named Miso") == "you have a cat named Miso"
    assert period(datetime(2026, 3, 2), "you live in Porto") == "until March 2026; since then: you live in Porto"


def test_numbers_are_part_of_what_a_target_names():
    seven, seventeen = Candidate("page", "7", "I cooked dish number 7."), Candidate("page", "17", "I cooked dish 17.")
    assert [[c.ident for c in g.members] for g in group("dish number 7", [seven, seventeen])] == [["7"]]
    assert choose("yes, please", ["a"]) == [0]



@pytest.mark.parametrize(("message", "said"), [
    ("Actually I got that wrong, it's pecans I react to, not walnuts.", ("pecans", "walnuts")),  # a cleft
    ("Violin, not viola! I'd never survive the viola jokes", ("Violin", "viola")),  # "viola" tagged a verb
])
def test_a_denial_is_read_in_a_cleft_and_past_a_tagging_slip(message, said):
    assert denial(message) == said
    assert detect(message).intent is Intent.CORRECT


def test_a_verb_after_not_denies_nothing():
    assert denial("I'm at home, not working") is None


def test_a_correction_gives_the_value_the_fact_does_not_already_hold():
    """ "oops, the Perth move is in July": Perth is named first, but the fact holds it already."""
    givens = given_values("oops, the Perth move is in July, I typed the wrong month")
    assert [g.text for g in givens][:2] == ["Perth", "July"]
    fact = "User is moving to Perth in June"
    assert replace_given(fact, givens[0]) == ""
    assert replace_given(fact, givens[1], same_label=True) == "User is moving to Perth in July"
    assert replace_given("User's sister Ana lives in Porto", givens[1], same_label=True) == ""  # no date to set right
