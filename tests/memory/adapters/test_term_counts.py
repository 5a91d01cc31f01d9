"""The per-user document frequencies the embedded index keeps for keyword search's IDF."""

from __future__ import annotations

import math

import pytest

from memory.adapters.term_counts import DocumentFrequencies, UserTerms, idf


def test_idf_is_qdrants_modifier() -> None:
    # ln(1 + (N − n + 0.5) / (n + 0.5)): N 4, n 1 -> ln(1 + 3.5 / 1.5); n 4 -> ln(1 + 0.5 / 4.5).
    assert idf(4, 1) == pytest.approx(math.log(1 + 3.5 / 1.5))
    assert idf(4, 4) == pytest.approx(math.log(1 + 0.5 / 4.5))
    assert idf(4, 1) > idf(4, 2) > idf(4, 4) > 0.0


def test_user_terms_count_documents_and_the_terms_they_hold() -> None:
    terms = UserTerms()
    terms.add([1, 2])
    terms.add([2, 3])
    terms.add([])  # a point without text is no document
    assert terms.documents == 2
    assert terms.weights([1, 2, 9]) == {1: pytest.approx(idf(2, 1)), 2: pytest.approx(idf(2, 2))}
    terms.remove([2, 3])
    terms.remove([])
    assert terms.documents == 1
    assert dict(terms.holding) == {1: 1, 2: 1}  # a term nobody holds any more is gone, not zero
    assert terms.weights([3]) == {}


def test_counts_are_built_once_and_the_least_recently_used_user_is_dropped() -> None:
    frequencies = DocumentFrequencies(max_users=2)
    reads: list[str] = []

    def documents(user: str):
        reads.append(user)
        yield [1]

    frequencies.built("a", documents("a"))
    frequencies.built("b", documents("b"))
    frequencies.built("a", documents("a"))  # held: not read again, and now the most recent
    assert reads == ["a", "b"]
    frequencies.built("c", documents("c"))
    assert "b" not in frequencies and "a" in frequencies and "c" in frequencies
    assert frequencies.held("b") is None
    frequencies.forget("a")
    assert frequencies.held("a") is None
    frequencies.clear()
    assert not frequencies
