"""When a remembered sentence's "yesterday" or "last Friday" was, counted from the day it was said.

A memory quoted weeks later keeps its own words ("I went there yesterday"); the reader needs the
date they point at. Pure and deterministic: the caller passes the moment the words were said.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}
# How many, in words or digits ("three days ago", "a couple of weeks ago"): also read by time_window.py.
COUNT = r"\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few"
_EXPRESSION = re.compile(
    r"\b(?:(?P<day>yesterday|last night|tomorrow)"
    rf"|(?P<edge>last|next|this past) (?P<unit>week|weekend|month|year|{'|'.join(_WEEKDAYS)})"
    rf"|(?P<count>{COUNT}) (?P<ago_unit>day|week|month|year)s? ago)\b",
    re.IGNORECASE)


def day_text(day: date) -> str:
    """'7 May 2023': day, month name, year, as the rest of the reply writes dates."""
    return f"{day.day} {day:%B} {day.year}"


def _month_shift(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _edge(edge: str, unit: str, said: date) -> str:
    step = 1 if edge == "next" else -1
    if unit in _WEEKDAYS:
        target = _WEEKDAYS.index(unit)
        days = (said.weekday() - target) % 7 or 7
        when = said - timedelta(days=days) if step < 0 else said + timedelta(days=(target - said.weekday()) % 7 or 7)
        return f"{unit.title()} {day_text(when)}"
    if unit in ("week", "weekend"):
        return f"the {unit} {'after' if step > 0 else 'before'} {day_text(said)}"
    if unit == "month":
        return f"{_month_shift(said, step):%B %Y}"
    return str(said.year + step)


def count_value(count: str) -> int:
    """The number a COUNT match says: "3" → 3, "three" → 3, "a couple of" → 2."""
    return int(count) if count.isdigit() else _NUMBERS[count.lower().removeprefix("a ")]


def _ago(count: str, unit: str, said: date) -> str:
    number = count_value(count)
    if unit == "day":
        return day_text(said - timedelta(days=number))
    if unit == "week":
        return f"the week of {day_text(said - timedelta(weeks=number))}"
    if unit == "month":
        return f"{_month_shift(said, -number):%B %Y}"
    return str(said.year - number)


def resolve_relative(expression: str, *, said_at: datetime | date) -> str | None:
    """The date or period one relative expression points at, or None if it is not one we read.

    "yesterday" said on 8 May 2023 is "7 May 2023"; "last week", "the week before 8 May 2023";
    "last Friday", the Friday before that day; "last month", "April 2023"; "3 years ago", "2020".
    """
    match = _EXPRESSION.fullmatch(expression.strip())
    if match is None:
        return None
    said = said_at.date() if isinstance(said_at, datetime) else said_at
    if match.group("day"):
        offset = 1 if match.group("day").lower() == "tomorrow" else -1
        return day_text(said + timedelta(days=offset))
    if match.group("edge"):
        edge = "last" if match.group("edge").lower() == "this past" else match.group("edge").lower()
        return _edge(edge, match.group("unit").lower(), said)
    return _ago(match.group("count").lower(), match.group("ago_unit").lower(), said)


def relative_dates(text: str, *, said_at: datetime | date) -> list[tuple[str, str]]:
    """Each relative expression of `text` with what it resolves to, in order, each once."""
    found: dict[str, str] = {}
    for match in _EXPRESSION.finditer(text):
        expression = match.group(0)
        resolved = resolve_relative(expression, said_at=said_at)
        if resolved and expression.lower() not in found:
            found[expression.lower()] = resolved
    return list(found.items())
