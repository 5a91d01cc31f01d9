"""Relative dates in remembered sentences, counted from the day they were said (hand-computed)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memory.engine.when import relative_dates, resolve_relative

SATURDAY_15_JULY = datetime(2023, 7, 15, 13, 0, tzinfo=UTC)  # 15 July 2023 was a Saturday


@pytest.mark.parametrize(("expression", "resolved"), [
    ("yesterday", "14 July 2023"),
    ("last night", "14 July 2023"),
    ("tomorrow", "16 July 2023"),
    ("last week", "the week before 15 July 2023"),
    ("next week", "the week after 15 July 2023"),
    ("last weekend", "the weekend before 15 July 2023"),
    ("this past weekend", "the weekend before 15 July 2023"),
    ("last Friday", "Friday 14 July 2023"),
    ("last Saturday", "Saturday 8 July 2023"),  # said on a Saturday: the one a week before
    ("next Monday", "Monday 17 July 2023"),
    ("last month", "June 2023"),
    ("next month", "August 2023"),
    ("last year", "2022"),
    ("next year", "2024"),
    ("3 days ago", "12 July 2023"),
    ("a few days ago", "12 July 2023"),
    ("two weeks ago", "the week of 1 July 2023"),
    ("a couple of months ago", "May 2023"),
    ("ten years ago", "2013"),
])
def test_expressions_resolve_from_the_day_they_were_said(expression, resolved):
    assert resolve_relative(expression, said_at=SATURDAY_15_JULY) == resolved


def test_month_arithmetic_crosses_years():
    assert resolve_relative("last month", said_at=date(2023, 1, 9)) == "December 2022"
    assert resolve_relative("next month", said_at=date(2023, 12, 30)) == "January 2024"


def test_other_words_are_not_dates():
    assert resolve_relative("last time", said_at=SATURDAY_15_JULY) is None
    assert relative_dates("I love the weekend and my dog.", said_at=SATURDAY_15_JULY) == []


def test_each_expression_of_a_sentence_once_in_order():
    text = "Yesterday I ran, and last Friday too. Yesterday was hot."
    assert relative_dates(text, said_at=SATURDAY_15_JULY) == [("yesterday", "14 July 2023"),
                                                              ("last friday", "Friday 14 July 2023")]
