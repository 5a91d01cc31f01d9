"""Text to sparse vectors for keyword (BM25) search.

The vector store keeps one sparse vector per document. Its values are BM25's term-frequency
part; the IDF part comes in at query time, over the person's own points: the embedded index
gives each query term its IDF as the query's weight (memory/adapters/term_counts.py), a Qdrant
server multiplies it in itself (its IDF modifier). `sparse_query` only says which terms a query
contains.

Everything here is deterministic across processes and machines: term indices come from
blake2b, never from Python's salted `hash()`, because they are written to disk and must match
the indices a later process computes for its queries.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

BM25_K1 = 1.2
BM25_B = 0.75
DEFAULT_AVG_LEN = 30.0

# Letters and digits of any script; the underscore that `\w` also allows splits words.
_WORD_RE = re.compile(r"[^\W_]+")

# Short on purpose: words carrying no topic on their own. Negations ("not", "no") stay out of
# the list because "I do not like tea" must not match "like tea" as well as "tea" does.
STOPWORDS = frozenset(
    """
    a an and are as at be been being but by can could did do does doing for from had has have
    having he her here hers him his how i if in into is it its itself just me my of on or our
    ours she so than that the their theirs them then there these they this those to too was
    we were what when where which who whom why will with would you your yours
    """.split()
)

_VOWELS = frozenset("aeiouy")
_KEEP_DOUBLE = frozenset("lsz")  # "falling" -> "fall", "passed" -> "pass", not "fal", "pas"
_MIN_STEM = 3


def tokenize(text: str) -> list[str]:
    """Lowercased, stemmed words of `text` in order, stopwords removed."""
    words = _WORD_RE.findall(text.lower())
    return [stem(word) for word in words if word not in STOPWORDS]


def stem(word: str) -> str:
    """A light suffix stemmer: plurals, then -ing/-ed, then a trailing silent e.

    Far simpler than Porter's; it only has to send "hikes", "hiking", "hiked" and "hike" to
    one term. Words with digits or non-ASCII letters are left alone.
    """
    if not (word.isascii() and word.isalpha()) or len(word) <= _MIN_STEM:
        return word
    word = _strip_plural(word)
    word = _strip_verb_ending(word)
    return _strip_silent_e(word)


def _strip_plural(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ches", "shes", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _strip_verb_ending(word: str) -> str:
    if word.endswith("ing"):
        return _verb_stem(word, word[:-3])
    # "eed" stays: "need", "speed" and "agreed" have no -ed to take off.
    if word.endswith("ed") and not word.endswith("eed"):
        if word.endswith("ied") and len(word) > 4:
            return word[:-3] + "y"
        return _verb_stem(word, word[:-2])
    return word


def _verb_stem(word: str, candidate: str) -> str:
    # A stem with no vowel means the ending was part of the word: "string", "bring", "red".
    if len(candidate) < _MIN_STEM or not _VOWELS.intersection(candidate):
        return word
    last = candidate[-1]
    if candidate[-2] == last and last not in _VOWELS and last not in _KEEP_DOUBLE:
        return candidate[:-1]  # "running" -> "run"
    return candidate


def _strip_silent_e(word: str) -> str:
    # Drops the e that -ing/-ed already dropped ("hike" ~ "hiking"); "ee" stays ("tree").
    if word.endswith("e") and not word.endswith("ee") and len(word) > _MIN_STEM:
        return word[:-1]
    return word


def term_index(term: str) -> int:
    """Stable 31-bit index of a term (sparse indices are unsigned 32-bit in Qdrant)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF


def bm25_tf(tf: int, doc_len: int, *, avg_len: float = DEFAULT_AVG_LEN,
            k1: float = BM25_K1, b: float = BM25_B) -> float:
    """BM25's saturated term frequency: tf·(k1+1) / (tf + k1·(1 − b + b·len/avg_len))."""
    return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * doc_len / avg_len))


def sparse_terms(text: str, *, avg_len: float = DEFAULT_AVG_LEN) -> dict[int, float]:
    """Document vector: term index -> BM25 tf weight; the length counts kept tokens."""
    if avg_len <= 0:
        raise ValueError("avg_len must be positive")
    tokens = tokenize(text)
    # Counting by index (not by term) merges the rare hash collision into one term.
    counts = Counter(term_index(token) for token in tokens)
    return {index: bm25_tf(tf, len(tokens), avg_len=avg_len) for index, tf in counts.items()}


def sparse_query(text: str) -> dict[int, float]:
    """Query vector: 1.0 per distinct term; with each term's IDF in place of its 1.0 (or the
    server's modifier), the score is the sum of matched document weights times IDF."""
    return {term_index(token): 1.0 for token in tokenize(text)}
