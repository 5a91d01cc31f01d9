from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory.engine.sparse import (
    STOPWORDS,
    bm25_tf,
    sparse_query,
    sparse_terms,
    stem,
    term_index,
    tokenize,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_tokenize_lowercases_drops_stopwords_and_splits_underscores() -> None:
    assert tokenize("The cats were RUNNING to 2 new_york cafés; Tea_Time!") == [
        "cat", "run", "2", "new", "york", "cafés", "tea", "tim"]


def test_tokenize_keeps_digits_and_other_scripts() -> None:
    assert tokenize("Flight LH400 at 09:45 to 東京") == ["flight", "lh400", "09", "45", "東京"]


def test_tokenize_empty_and_stopword_only_text() -> None:
    assert tokenize("") == []
    assert tokenize("it is what it is, and so was I") == []


def test_negations_are_not_stopwords() -> None:
    assert "not" not in STOPWORDS and "no" not in STOPWORDS
    assert tokenize("I do not like tea") == ["not", "lik", "tea"]


@pytest.mark.parametrize(("word", "expected"), [
    ("hike", "hik"), ("hikes", "hik"), ("hiking", "hik"), ("hiked", "hik"),
    ("running", "run"), ("runs", "run"), ("stopped", "stop"),
    ("memories", "memory"), ("studied", "study"), ("tried", "try"),
    ("classes", "class"), ("boxes", "box"), ("watches", "watch"), ("trees", "tree"),
    ("falling", "fall"), ("passed", "pass"),
    # endings that are part of the word stay
    ("status", "status"), ("analysis", "analysis"), ("string", "string"), ("bring", "bring"),
    ("need", "need"), ("speed", "speed"), ("used", "used"),
    # short, numeric and non-ASCII words are left alone
    ("cat", "cat"), ("covid19", "covid19"), ("2024", "2024"), ("cafés", "cafés"),
])
def test_stem(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_term_index_is_fixed_31_bit_blake2b() -> None:
    assert term_index("memory") == 1862377753
    assert term_index("tea") == 532194854
    assert all(0 <= term_index(word) < 2**31 for word in ["", "a", "東京", "x" * 1000])


def test_term_index_does_not_depend_on_hash_seed() -> None:
    code = "from memory.engine.sparse import term_index; print(term_index('memory'))"
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, check=True, cwd=REPO_ROOT)
        outputs.add(result.stdout.strip())
    assert outputs == {"1862377753"}


@pytest.mark.parametrize(("tf", "doc_len", "avg_len", "expected"), [
    (1, 30, 30.0, 1.0),                 # 2.2 / (1 + 1.2·1)
    (2, 30, 30.0, 1.375),               # 4.4 / (2 + 1.2)
    (1, 15, 30.0, 2.2 / 1.75),          # 2.2 / (1 + 1.2·(0.25 + 0.375))
    (3, 60, 30.0, 6.6 / 5.1),           # 6.6 / (3 + 1.2·(0.25 + 1.5))
    (1, 10, 10.0, 1.0),
])
def test_bm25_tf_by_hand(tf: int, doc_len: int, avg_len: float, expected: float) -> None:
    assert bm25_tf(tf, doc_len, avg_len=avg_len) == pytest.approx(expected, rel=1e-12)


def test_bm25_tf_saturates() -> None:
    weights = [bm25_tf(tf, 30) for tf in (1, 2, 5, 50)]
    assert weights == sorted(weights)
    assert weights[-1] < 2.2  # the k1 + 1 ceiling


def test_sparse_terms_by_hand() -> None:
    # tokens: cat, cat, dog -> len 3; length factor 1.2·(0.25 + 0.75·3/30) = 0.39
    assert sparse_terms("Cats, cats and a dog") == pytest.approx({
        term_index("cat"): 4.4 / 2.39,
        term_index("dog"): 2.2 / 1.39,
    })


def test_sparse_terms_avg_len_changes_length_normalisation() -> None:
    [short_norm] = sparse_terms("tea", avg_len=1.0).values()
    [long_norm] = sparse_terms("tea", avg_len=100.0).values()
    assert short_norm == pytest.approx(1.0)
    assert long_norm == pytest.approx(2.2 / (1 + 1.2 * (0.25 + 0.0075)))


def test_sparse_terms_empty_and_invalid() -> None:
    assert sparse_terms("the and of") == {}
    with pytest.raises(ValueError):
        sparse_terms("tea", avg_len=0)


def test_sparse_query_marks_each_distinct_term_once() -> None:
    assert sparse_query("Hiking, hikes and the hike!") == {term_index("hik"): 1.0}
    assert sparse_query("tea dog") == {term_index("tea"): 1.0, term_index("dog"): 1.0}
    assert sparse_query("") == {}


def test_query_and_document_share_indices() -> None:
    assert set(sparse_query("went hiking")) <= set(sparse_terms("I like long hikes; I went"))


def test_sparse_imports_nothing_heavy() -> None:
    code = ("import sys, memory.engine.sparse; "
            "print(sorted(m for m in ('django', 'qdrant_client', 'qdrant_edge', 'numpy') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=REPO_ROOT)
    assert result.stdout.strip() == "[]"
