"""The period a question names, as [start, end) in UTC seconds (memory/engine/time_window.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.engine.time_window import Window, question_anchor, question_window

NOW = datetime(2023, 5, 20, 15, 30, tzinfo=UTC)  # "today" is 20 May 2023


def day(year: int, month: int, date: int) -> float:
    """Midnight UTC of that day, in Unix seconds."""
    return datetime(year, month, date, tzinfo=UTC).timestamp()


def test_a_day_by_month_first_or_day_first_is_that_whole_day():
    expected = (1647388800.0, 1647388800.0 + 86400)  # 16 March 2022 00:00 UTC, and the next midnight
    for question, words in (("What did Caroline do on March 16, 2022?", "March 16, 2022"),
                            ("What happened on 16 March 2022?", "16 March 2022"),
                            ("Where was she on the 16th of March, 2022?", "16th of March, 2022"),
                            ("Any news from mar. 16th 2022?", "mar. 16th 2022")):
        window = question_window(question, now=NOW)
        assert (window.start, window.end, window.words) == (*expected, words), question
    assert day(2022, 3, 16) == expected[0]
    assert question_window("the 3rd of Jan. 2021", now=NOW) == Window(day(2021, 1, 3), day(2021, 1, 4),
                                                                        "3rd of Jan. 2021")


def test_a_month_runs_to_the_first_of_the_next_one():
    assert question_window("What did Melanie paint in May 2023?", now=NOW) == Window(
        day(2023, 5, 1), day(2023, 6, 1), "May 2023")
    # December ends at the next year's first of January
    assert question_window("Did we travel in December, 2022?", now=NOW) == Window(
        day(2022, 12, 1), day(2023, 1, 1), "December, 2022")


def test_a_year_needs_a_word_that_says_it_is_a_time():
    assert question_window("What did they buy in 2022?", now=NOW) == Window(day(2022, 1, 1), day(2023, 1, 1),
                                                                            "in 2022")
    assert question_window("Has she painted since 2019?", now=NOW) == Window(day(2019, 1, 1), day(2020, 1, 1),
                                                                             "since 2019")
    assert question_window("Is 2022 the number on the door?", now=NOW) is None


def test_relative_periods_end_tomorrow_and_reach_back_two_periods_or_one():
    tomorrow = day(2023, 5, 21)
    # "last week": two weeks back to the end of today (the previous week and this one so far)
    assert question_window("What did I cook last week?", now=NOW) == Window(day(2023, 5, 6), tomorrow, "last week")
    assert question_window("Who called this past month?", now=NOW) == Window(day(2023, 3, 19), tomorrow,
                                                                              "this past month")
    # "this month": the period so far, 31 days back
    assert question_window("What did I read this month?", now=NOW) == Window(day(2023, 4, 19), tomorrow,
                                                                              "this month")


def test_so_long_ago_is_a_span_around_that_day():
    # three days ago is 17 May; a quarter of three days rounds to none, so a day either side
    assert question_window("What did I say three days ago?", now=NOW) == Window(
        day(2023, 5, 16), day(2023, 5, 19), "three days ago")
    assert question_window("Where was I a week ago?", now=NOW) == Window(day(2023, 5, 12), day(2023, 5, 15),
                                                                          "a week ago")
    # two months ago: 60 days back is 21 March, 15 days either side
    assert question_window("What did we plan 2 months ago?", now=NOW) == Window(
        day(2023, 3, 6), day(2023, 4, 6), "2 months ago")


def test_yesterday_is_the_day_before_today():
    for question, words in (("What did I eat yesterday?", "yesterday"), ("Who rang last night?", "last night")):
        assert question_window(question, now=NOW) == Window(day(2023, 5, 19), day(2023, 5, 20), words)


def test_the_most_specific_expression_wins():
    assert question_window("In 2022, or was it on March 16, 2022?", now=NOW).words == "March 16, 2022"
    assert question_window("Not in 2022: in May 2023, last week?", now=NOW).words == "May 2023"


def test_an_impossible_date_falls_back_to_its_month_or_to_nothing():
    assert question_window("What happened on 31 February 2023?", now=NOW) == Window(
        day(2023, 2, 1), day(2023, 3, 1), "February 2023")
    assert question_window("What happened on February 30?", now=NOW) is None


def test_a_month_without_a_year_is_that_month_of_any_year():
    for question, words in (("What did Melanie do in June?", "in June"), ("Where did we go in early June?",
                                                                          "early June")):
        window = question_window(question, now=NOW)
        assert (window.words, window.month) == (words, 6)
        assert window.contains(day(2019, 6, 15)) and window.contains(day(2023, 6, 1))
        assert not window.contains(day(2023, 6, 1) - 1) and not window.contains(day(2023, 7, 1))
    # a year, when given, wins: the month of that year only
    assert question_window("What did Melanie do in June 2022?", now=NOW).month is None


def test_an_event_the_question_names_anchors_two_weeks_after_its_day():
    anchor = question_anchor("What happened after my road trip with Ana?")
    assert (anchor.side, anchor.event, anchor.words) == ("after", "road trip", "after my road trip")
    assert question_anchor("What did she do before the wedding?").side == "before"
    assert question_window("What did she do before the wedding?", now=NOW) is None  # the recall finds the day
    said = datetime(2023, 3, 4, 18, 0, tzinfo=UTC).timestamp()  # the trip was mentioned on 4 March, 6 pm
    assert anchor.window(said) == Window(day(2023, 3, 4), day(2023, 3, 18), "after my road trip")
    assert question_anchor("What is my dog's name?") is None


@pytest.mark.parametrize("question", ["What is my dog's name?", "When did Caroline go hiking?",
                                      "How many days does a week have?", "May I ask you something?", ""])
def test_a_question_without_a_time_has_no_window(question):
    assert question_window(question, now=NOW) is None


def test_a_window_holds_its_start_and_not_its_end():
    window = question_window("What did I eat yesterday?", now=NOW)
    assert window.contains(day(2023, 5, 19)) and window.contains(day(2023, 5, 20) - 1)
    assert not window.contains(day(2023, 5, 20)) and not window.contains(day(2023, 5, 19) - 1)
