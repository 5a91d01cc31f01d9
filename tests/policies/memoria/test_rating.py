"""Memoria's helpfulness ratings: word overlap offline, the LLM's answer validated."""

from __future__ import annotations

import pytest

from memory.policies.memoria.engine.rating import overlap_rating, rating_request, validate_ratings


def test_overlap_rating_by_hand():
    # The memory's content words (stemmed): sourdough, starter, call, bubbl = 4.
    memory = "My sourdough starter is called Bubbles."
    assert overlap_rating(memory, "Your sourdough starter is called Bubbles!") == 10  # 4 of 4
    # "I remember the starter named Bubbles." shares starter and bubbles (name is not call): 2 of 4
    assert overlap_rating(memory, "I remember the starter named Bubbles.") == 1 + round(9 * 2 / 4)  # 5
    assert overlap_rating(memory, "The weather is grey today.") == 1  # nothing shared
    assert overlap_rating("", "anything") == 1


def test_the_request_numbers_the_memories_from_one():
    text = rating_request(["first memory", "second memory"], "the reply")
    assert "Reply:\nthe reply" in text and "1. first memory\n2. second memory" in text


def test_ratings_are_validated():
    assert validate_ratings({"ratings": {"1": 7, "2": 1}}, 2) == [7, 1]
    for bad in ({"ratings": {"1": 7}}, {"ratings": {"1": 7, "2": 11}}, {"ratings": {"1": 7, "2": 2.5}},
                {"ratings": {"1": True, "2": 3}}, {"ratings": [7, 1]}, [], {"ratings": {"1": 7, "2": 3, "3": 4}}):
        with pytest.raises(ValueError):
            validate_ratings(bad, 2)
