"""`bench understanding`'s scoring of a change: the old value must be out of the answer's claims,
not out of the day the answer says it was told. The provenance is written by the product's own
formatters, so that a change in how replies say when something was told fails here."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.benchmarks.understanding import _without_provenance
from memory.engine.fact_answers import KnownFact, _when
from memory.engine.replies import when_said

TOLD = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def test_the_day_an_answer_was_told_is_no_claim_of_an_old_value():
    from_facts = "You're 30" + _when(KnownFact(text="User is 30", said_at=TOLD)) + "."
    assert "29" in from_facts and "29" not in _without_provenance(from_facts)
    assert "29" in _without_provenance("You're 29" + _when(KnownFact(text="User is 29", said_at=TOLD)) + ".")
    quoted = f"Here's what I remember: {when_said(TOLD, TOLD)} you told me: “I'm 29.”"
    assert "November" in quoted
    assert "I'm 29" in _without_provenance(quoted) and "November" not in _without_provenance(quoted)
    assert _without_provenance("Your flight is on 29 November 2026.") == "Your flight is on 29 November 2026."
