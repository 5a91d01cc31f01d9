"""The period a question asks about, read from its words, as an interval of Unix seconds.

"What did I do in May 2023?", "on 16 March 2022", "in 2022", "last week", "three days ago", "in
June": a recall prefers memories from that period (memory/engine/relevance.py). Dates name their
own period; relative expressions count back from `now`, the moment the question is asked; a month
without a year is that month in any year the memories hold. "Before the wedding" and "after the
road trip" name an Anchor: the recall finds the event in the memory itself and takes the two
weeks before or after it. A question with no time expression has no window. Pure and
deterministic: the caller passes `now`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from .when import COUNT, count_value

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_MONTH = r"(?P<month>" + "|".join(m for m in _MONTHS) + r"|" + "|".join(m[:3] for m in _MONTHS) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_COUNT = rf"(?P<count>{COUNT})"

# Most specific first: a day beats its month, a month beats its year.
_PATTERNS = (
    ("day", re.compile(rf"\b{_MONTH} (?P<day>\d{{1,2}})(?:st|nd|rd|th)?,? {_YEAR}\b", re.I)),
    ("day", re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH},? {_YEAR}\b", re.I)),
    ("month", re.compile(rf"\b{_MONTH},? (?:of )?{_YEAR}\b", re.I)),
    ("year", re.compile(rf"\b(?:in|during|of|since|by|before|after|around) {_YEAR}\b", re.I)),
    ("relative", re.compile(r"\b(?P<edge>last|this past|this|past) (?P<unit>week|weekend|month|year)\b", re.I)),
    ("ago", re.compile(rf"\b{_COUNT} (?P<unit>day|week|month|year)s? ago\b", re.I)),
    ("yesterday", re.compile(r"\b(?:yesterday|last night)\b", re.I)),
    # A month with no year: that month in whichever year the memories hold.
    ("month_any", re.compile(rf"\b(?:in|during|of|since|by|around|early|late|mid)[- ](?:{_MONTH})\b", re.I)),
)
# "before the wedding", "after the road trip": a period next to an event the memory itself holds.
_ANCHOR = re.compile(r"\b(?P<side>before|after) (?:the |my |his |her |their |our |your )(?P<event>[a-z][a-z' -]{2,40}?)"
                     r"(?=[?.!,;]|\s+(?:to|and|with|in|on|at|for|when|while|was|were|did|does)\b|$)", re.I)
ANCHOR_DAYS = 14  # "after the road trip": within two weeks of it


@dataclass(frozen=True)
class Window:
    """[start, end) in Unix seconds, and the words it was read from; or, for a month named
    without a year, that month (1–12) of any year."""

    start: float
    end: float
    words: str
    month: int | None = None

    def contains(self, seconds: float) -> bool:
        if self.month is not None:
            return datetime.fromtimestamp(seconds, tz=UTC).month == self.month
        return self.start <= seconds < self.end


@dataclass(frozen=True)
class Anchor:
    """A period fixed by an event the question names: before or after it."""

    side: str  # "before" | "after"
    event: str
    words: str

    def window(self, event_seconds: float) -> Window:
        """From the event's day on for ANCHOR_DAYS days ("after"); or the event's day and the
        ANCHOR_DAYS days before it ("before": the event may be said the day it happened)."""
        day = datetime.fromtimestamp(event_seconds, tz=UTC).date()
        if self.side == "after":
            start = _day_start(day)
            return Window(start=start, end=start + ANCHOR_DAYS * 86400.0, words=self.words)
        end = _day_start(day + timedelta(days=1))
        return Window(start=end - (ANCHOR_DAYS + 1) * 86400.0, end=end, words=self.words)


def question_anchor(text: str) -> Anchor | None:
    """"before the wedding" → Anchor("before", "wedding"); None when the question names no such event."""
    match = _ANCHOR.search(text)
    if match is None:
        return None
    return Anchor(side=match.group("side").lower(), event=match.group("event").strip(), words=match.group(0))


def _day_start(day: date) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def _month_start(year: int, month: int) -> float:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=UTC).timestamp()


def _month_index(name: str) -> int:
    name = name.lower().rstrip(".")
    return next(i for i, month in enumerate(_MONTHS) if month.startswith(name)) + 1


def _span(kind: str, match: re.Match, now: datetime) -> tuple[float, float] | None:
    groups = match.groupdict()
    if kind == "day":
        try:
            day = date(int(groups["year"]), _month_index(groups["month"]), int(groups["day"]))
        except ValueError:  # "31 February"
            return None
        return _day_start(day), _day_start(day + timedelta(days=1))
    if kind == "month":
        year, month = int(groups["year"]), _month_index(groups["month"])
        return _month_start(year, month), _month_start(year, month + 1)
    if kind == "year":
        year = int(groups["year"])
        return _month_start(year, 1), _month_start(year + 1, 1)
    today = now.date()
    if kind == "yesterday":
        return _day_start(today - timedelta(days=1)), _day_start(today)
    if kind == "ago":
        number = count_value(groups["count"])
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[groups["unit"].lower()] * number
        centre = today - timedelta(days=days)
        slack = max(1, days // 4)  # "three weeks ago" is about then, not that very day
        return _day_start(centre - timedelta(days=slack)), _day_start(centre + timedelta(days=slack + 1))
    unit = groups["unit"].lower()
    days = {"week": 7, "weekend": 7, "month": 31, "year": 366}[unit]
    if groups["edge"].lower() == "this":  # "this week": the current period so far
        return _day_start(today - timedelta(days=days)), _day_start(today + timedelta(days=1))
    return _day_start(today - timedelta(days=2 * days)), _day_start(today + timedelta(days=1))


def question_window(text: str, *, now: datetime) -> Window | None:
    """The period `text` asks about, or None. The first, most specific expression wins."""
    for kind, pattern in _PATTERNS:
        match = pattern.search(text)
        if match is not None:
            if kind == "month_any":
                return Window(start=0.0, end=0.0, words=match.group(0), month=_month_index(match.group("month")))
            span = _span(kind, match, now)
            if span is not None:
                return Window(start=span[0], end=span[1], words=match.group(0))
    return None
