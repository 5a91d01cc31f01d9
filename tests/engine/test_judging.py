"""The reader's judgement by meaning: labelled statements near a message vote by their similarity;
the vote decides only where the parse has no answer of its own."""

from __future__ import annotations

import math

import pytest

from memory.engine import judging
from memory.engine.facts import judged_facts
from memory.engine.judging import examples_of, fact_likelihood


def unit(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


def test_the_nearest_statements_vote_by_their_similarity():
    examples = examples_of([unit(0), unit(10), unit(60), unit(180)], [True, True, False, False])
    # neighbours of a message at 5 degrees: cos 5 and cos 5 (facts), cos 55 (no fact); cos 175 < 0 weighs 0
    expected = (2 * math.cos(math.radians(5))) / (2 * math.cos(math.radians(5)) + math.cos(math.radians(55)))
    assert fact_likelihood(unit(5), examples, neighbours=4) == pytest.approx(expected, abs=1e-6)


def test_a_message_like_none_of_the_statements_gets_no_vote():
    examples = examples_of([unit(0), unit(10)], [True, False])
    assert fact_likelihood(unit(90), examples) is None  # cos 80 = 0.17 < NEAR


def test_the_examples_are_the_tuning_halves_labelled():
    statements = judging.example_statements()
    assert len(statements) >= 600 and {fact for _, fact in statements} == {True, False}


def test_the_vote_keeps_what_the_parse_could_not_read_and_drops_what_means_nothing():
    unread = "Island girl here, Samoa born, Auckland raised."
    assert judged_facts(unread, None) == [] or all(f.slot != "other" for f in judged_facts(unread, None))
    [kept] = judged_facts(unread, 0.9)
    assert kept.text == "User mentioned: Island girl here, Samoa born, Auckland raised"
    assert judged_facts(unread, 0.5) == judged_facts(unread, None)  # unsure: the parse alone
    chatter = "Ugh, woke up late and spilled coffee on my shirt."
    assert judged_facts(chatter, 0.1) == [] and judged_facts("I'm coeliac.", 0.1)  # a kind of its own stays


@pytest.mark.slow
@pytest.mark.real_adapters  # MiniLM's meaning: the fake embedder's vectors carry only words
def test_minilm_judges_unseen_self_descriptions_and_chatter():
    from memory.services.facts import likelihood_of

    assert likelihood_of("Retired dentist, three grandkids, live by the sea in Cornwall.") >= judging.STATES
    assert (likelihood_of("haha nice one, cheers") or 0.0) <= judging.STATES_NOTHING
