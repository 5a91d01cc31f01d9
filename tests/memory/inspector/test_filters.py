"""The inspector's template filters: a recall's score parts as a person reads them."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.templatetags.inspector import breakdown_value


def test_a_moment_in_a_score_shows_as_its_date_not_unix_seconds():
    """Issue 50, finding 6: a recall search showed "until 1795916864.279051"."""
    moment = datetime(2026, 11, 29, 12, 30, tzinfo=UTC).timestamp() + 0.279051
    assert breakdown_value(moment, "until") == "29 Nov 2026"


def test_other_score_parts_read_as_short_numbers():
    assert breakdown_value(0.4567891, "relevance") == "0.457"
    assert breakdown_value(0.5, "superseded") == "0.5"
    assert breakdown_value(3, "hits") == "3"
    assert breakdown_value("dense", "via") == "dense"
