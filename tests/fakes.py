"""In-memory stand-ins for the embedder and the vector index, for the fast test tier.

`make test-fast` (pytest --fakes) runs engine, architecture and service tests on these instead of
MiniLM and a Qdrant Edge shard. They honour the ports in memory/engine/ports.py, and the contract
tests run the very same assertions against them and the real adapters
(tests/memory/adapters/test_vectors.py, tests/memory/adapters/test_embedder_contract.py), so a fake
that drifts from what the real adapters do fails there.

- FakeEmbedder: a hashed bag of the words memory.engine.sparse keeps (lowercased, stemmed, no
  stopwords; longer words weigh more), plus a small direction of the whole text's own,
  unit-normalised. Identical texts embed identically, texts that share words are closer than
  texts that share none, and two unrelated texts are not exactly orthogonal (no exact ties where
  MiniLM would have none).
- FakeVectorIndex: the adapters' own contract code (validation, user scoping, filters, ids) over a
  dict instead of a Qdrant client: exact cosine search and BM25 with Qdrant's IDF over the user's
  points that have text.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.adapters.vectors import (
    DENSE,
    NO_PAYLOAD,
    TENANT_FIELD,
    _hit,
    _Prepared,
    _Scope,
    _ScopedIndex,
    _SparseQuery,
)
from memory.engine.ports import VectorHit
from memory.engine.sparse import tokenize

FAKE_EMBEDDER_NAME = "fake-hashed-bag-of-words"
FAKE_DIMENSION = 384  # MiniLM's, so that every size computed from `dimension` stays the same
# How much of a vector is the text's own direction rather than its words: small enough that a
# shared word outweighs it, large enough that unrelated texts never tie at exactly 0.
TEXT_WEIGHT = 0.15
# Each word lands in this many buckets, with a sign each: fewer collisions decide a similarity.
BUCKETS_PER_WORD = 2


def word_weight(word: str) -> float:
    """Longer words weigh more: a cheap stand-in for rarity, which a model learns and a fake cannot.
    Without it two texts that share only "noted" or "week" look as close as two on one topic."""
    return float(max(len(word) - 2, 1))


class FakeEmbedder:
    """The Embedder port without a model: deterministic across processes, well under a millisecond a text."""

    name = FAKE_EMBEDDER_NAME

    def __init__(self, dimension: int = FAKE_DIMENSION) -> None:
        if dimension < 8:
            raise ValueError(f"a fake embedding needs at least 8 dimensions, got {dimension}")
        self.dimension = dimension

    def __repr__(self) -> str:
        return f"FakeEmbedder(dimension={self.dimension})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        words = np.zeros(self.dimension)
        for word in tokenize(text):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=4 * BUCKETS_PER_WORD).digest()
            weight = word_weight(word)
            for n in range(BUCKETS_PER_WORD):
                bucket = int.from_bytes(digest[4 * n:4 * n + 3], "big") % self.dimension
                words[bucket] += weight if digest[4 * n + 3] & 1 else -weight
        # The text's own direction: every text has one, so a text without words still gets a unit vector.
        own = np.frombuffer(hashlib.shake_256(text.encode("utf-8")).digest(self.dimension), dtype=np.uint8) - 127.5
        own /= np.linalg.norm(own)
        norm = np.linalg.norm(words)
        vector = words / norm + TEXT_WEIGHT * own if norm else own
        vector /= np.linalg.norm(vector)
        return vector.tolist()


@dataclass
class _Stored:
    dense: np.ndarray
    sparse: tuple[list[int], list[float]] | None
    payload: dict[str, Any]


class FakeVectorIndex(_ScopedIndex):
    """The VectorIndex port over a dict, with the adapters' contract code (`_ScopedIndex`).

    Scores: cosine of the normalised vectors (Qdrant stores cosine vectors normalised), and for
    keyword search sum(query weight · document weight · IDF), IDF = ln(1 + (N − n + 0.5)/(n + 0.5))
    over the user's points that have text. Ties keep no promised order in Qdrant; here they come in
    id order."""

    def __init__(self, path: Any = None, *, dimension: int = FAKE_DIMENSION) -> None:
        self.dimension = dimension
        self._points: dict[str | int, _Stored] = {}
        self._lock = threading.Lock()
        self._closed = False

    def __len__(self) -> int:
        return len(self._points)

    def _live(self) -> dict[str | int, _Stored]:
        if self._closed:
            raise RuntimeError("vector index is closed")
        return self._points

    def _upsert(self, batch: Sequence[_Prepared]) -> None:
        with self._lock:
            points = self._live()
            for item in batch:
                points[item.id] = _Stored(_unit(item.dense), item.sparse, _as_json(item.payload))

    def _delete(self, scope: _Scope) -> None:
        scope = _plain(scope)
        with self._lock:
            points = self._live()
            for key in [key for key, item in points.items() if _matches(key, item.payload, scope)]:
                del points[key]

    def _set_payload(self, scope: _Scope, payload: dict[str, Any]) -> None:
        scope = _plain(scope)
        with self._lock:
            for key, item in self._live().items():
                if _matches(key, item.payload, scope):
                    item.payload.update(_as_json(payload))

    def _search(self, query: list[float] | _SparseQuery, using: str, scope: _Scope, limit: int,
                idf_corpus: _Scope | None, fields: Sequence[str] | None = None) -> list[VectorHit]:
        scope, idf_corpus = _plain(scope), idf_corpus and _plain(idf_corpus)
        with self._lock:
            found = [(key, item) for key, item in self._live().items() if _matches(key, item.payload, scope)]
            if not found:
                return []
            if using == DENSE:
                assert isinstance(query, list)
                # In float64, then rounded as Qdrant's float32 scores: the same pair scores the same
                # whatever else is in the matrix (a float32 product's rounding depends on its shape).
                matrix = np.stack([item.dense for _, item in found]).astype(np.float64)
                scores = (matrix @ _unit(query).astype(np.float64)).astype(np.float32)
                scored = [(float(score), key, item) for score, (key, item) in zip(scores, found, strict=True)]
            else:
                assert isinstance(query, tuple)
                corpus = [item.sparse[0] for key, item in self._points.items()
                          if item.sparse is not None
                          and (idf_corpus is None or _matches(key, item.payload, idf_corpus))]
                idf = _idf(query[0], corpus)
                scored = [(score, key, item) for key, item in found
                          if item.sparse is not None and (score := _bm25(query, item.sparse, idf)) > 0.0]
        scored.sort(key=lambda row: (-row[0], _id_order(row[1])))
        return [_hit(key, score, _selected(item.payload, fields)) for score, key, item in scored[:limit]]

    def _retrieve(self, ids: list[str]) -> list[tuple[str, Any, list[float]]]:
        with self._lock:
            points = self._live()
            return [(str(key), points[key].payload.get(TENANT_FIELD), points[key].dense.tolist())
                    for key in dict.fromkeys(ids) if key in points]

    def _retrieve_payloads(self, ids: list[str], fields: list[str]) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            points = self._live()
            return [(str(key), _selected(points[key].payload, fields))
                    for key in dict.fromkeys(ids) if key in points]

    def _count(self, scope: _Scope | None) -> int:
        scope = scope and _plain(scope)
        with self._lock:
            return sum(1 for key, item in self._live().items()
                       if scope is None or _matches(key, item.payload, scope))

    def clear(self) -> None:
        with self._lock:
            self._live().clear()

    def optimize(self) -> bool:
        """Nothing to build: every search is exact."""
        self._live()
        return False

    def flush(self) -> None:
        self._live()

    def close(self) -> None:
        self._closed = True


# ---------------------------------------------------------------- Qdrant's semantics, spelled out


def _plain(scope: _Scope) -> _Scope:
    """The filter's values as the client sends them: JSON (a str enum member is its string)."""
    return _Scope(tuple((field, json.loads(json.dumps(value))) for field, value in scope.equals),
                  tuple((field, tuple(json.loads(json.dumps(list(values))))) for field, values in scope.any_of),
                  scope.ids)


def _matches(key: str | int, payload: dict[str, Any], scope: _Scope) -> bool:
    if scope.ids is not None and key not in scope.ids:
        return False
    return (all(_has_value(payload.get(field), value) for field, value in scope.equals)
            and all(any(_has_value(payload.get(field), value) for value in values)
                    for field, values in scope.any_of))


def _has_value(stored: Any, wanted: Any) -> bool:
    """Qdrant's keyword/integer match: equal value and type; a list matches when any item does."""
    if isinstance(stored, list):
        return any(_has_value(item, wanted) for item in stored)
    if isinstance(stored, bool) or isinstance(wanted, bool):
        # The two real adapters disagree on booleans (Edge never matches them): nothing relies on it.
        return False
    return type(stored) is type(wanted) and stored == wanted


def _as_json(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as Qdrant keeps it: JSON (an enum member comes back as its value, a tuple as a list)."""
    return json.loads(json.dumps(payload))


def _unit(vector: Sequence[float]) -> np.ndarray:
    """Stored as Qdrant stores cosine vectors: float32, normalised (a zero vector stays zero)."""
    values = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(values))
    return values / np.float32(norm) if norm else values


def _idf(terms: Sequence[int], corpus: list[list[int]]) -> dict[int, float]:
    """Qdrant's IDF modifier over the corpus's documents: ln(1 + (N − n + 0.5) / (n + 0.5))."""
    documents = [set(indices) for indices in corpus]
    idf = {}
    for term in terms:
        with_term = sum(1 for document in documents if term in document)
        idf[term] = math.log(1.0 + (len(documents) - with_term + 0.5) / (with_term + 0.5))
    return idf


def _bm25(query: _SparseQuery, document: tuple[list[int], list[float]], idf: dict[int, float]) -> float:
    weights = dict(zip(*document, strict=True))
    return sum(query_weight * weights[index] * idf[index]
               for index, query_weight in zip(*query, strict=True) if index in weights)


def _selected(payload: dict[str, Any], fields: Sequence[str] | None) -> dict[str, Any]:
    if fields is None:
        return dict(payload)
    if not fields:
        return NO_PAYLOAD
    return {field: payload[field] for field in fields if field in payload}


def _id_order(key: str | int) -> tuple[int, str]:
    return (0, f"{key:020d}") if isinstance(key, int) else (1, key)
