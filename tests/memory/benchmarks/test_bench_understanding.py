"""`bench understanding`'s scoring of a change: the old value must be out of the answer's claims,
not out of the day the answer says it was told."""

from __future__ import annotations

from memory.benchmarks.understanding import _without_provenance


def test_the_day_an_answer_was_told_is_no_claim_of_an_old_value():
    assert "29" not in _without_provenance("You're 30 (you told me on 29 November 2026).")
    assert "29" in _without_provenance("You're 29 (you told me on 29 November 2026).")
    quoted = _without_provenance("Here's what I remember: On 29 November 2026 (today) you told me: “I'm 29.”")
    assert "I'm 29" in quoted and "November" not in quoted
    assert _without_provenance("Your flight is on 29 November 2026.") == "Your flight is on 29 November 2026."
