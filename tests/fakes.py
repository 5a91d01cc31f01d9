"""In-memory stand-ins for the embedder, the vector index and the chat model, on their ports.

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
- FakeVectorIndex: the VectorIndex port's methods over a dict instead of a Qdrant client, checking
  their arguments with the adapters' public helpers (memory/adapters/vector_points.py: validation,
  user scoping, filters, ids): exact cosine search, and BM25 with Qdrant's IDF over the user's
  points that have text.
- FakeChatModel: the ChatModel port without a server, for tests of what the services ask a model
  and do with its answers (the `chat_model` fixture of tests/conftest.py), held to the OpenAI
  adapter by tests/memory/adapters/test_chat_model_contract.py. Tests of the OpenAI client adapter
  itself, of timeouts and broken streams, talk to tests/openai_server.py instead.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.adapters.vector_points import (
    NO_PAYLOAD,
    Scope,
    SparseQuery,
    call_scope,
    checked_payload,
    dense_values,
    prepare_point,
    sparse_pairs,
    vector_hit,
)
from memory.engine.ports import ChatMessage, ChatResult, Vector, VectorHit, VectorPoint
from memory.engine.sparse import sparse_query, tokenize

FAKE_EMBEDDER_NAME = "fake-hashed-bag-of-words"
FAKE_CHAT_MODEL_NAME = "fake-chat-model"
FAKE_DEFAULT_REPLY = "Hello from the fake chat model."
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
    semantic = False  # its vectors carry words, not meaning: nothing judges a statement by them

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
    sparse: SparseQuery | None
    payload: dict[str, Any]


class FakeVectorIndex:
    """The VectorIndex port over a dict, checking its arguments with the adapters' own helpers
    (memory/adapters/vector_points.py: validation, user scoping, filters, ids).

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

    # -- the VectorIndex port ----------------------------------------------------------------

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        prepared = [prepare_point(point, self.dimension) for point in points]
        if not prepared:
            return
        with self._lock:
            stored = self._live()
            for item in prepared:
                stored[item.id] = _Stored(_unit(item.dense), item.sparse, _as_json(item.payload))

    def delete(self, *, user_id: str, ids: Sequence[str]) -> None:
        self._delete(call_scope(user_id, ids=ids))

    def delete_user(self, *, user_id: str) -> None:
        self._delete(call_scope(user_id))

    def prepare(self, *, user_id: str) -> None:
        """Nothing to ready: every keyword search counts IDF over the user's points."""
        call_scope(user_id)

    def set_payload(self, *, user_id: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        scope, payload = _plain(call_scope(user_id, ids=ids)), _as_json(checked_payload(payload))
        if not payload:
            return
        with self._lock:
            for item in self._in_scope(scope):
                item.payload.update(payload)

    def search(self, *, user_id: str, vector: Vector, limit: int, kind: str | None = None,
               match: dict[str, Any] | None = None, match_any: dict[str, Sequence[str]] | None = None,
               fields: Sequence[str] | None = None) -> list[VectorHit]:
        scope = _plain(call_scope(user_id, kind=kind, match=match, match_any=match_any))
        query = _unit(dense_values(vector, self.dimension)).astype(np.float64)
        if limit <= 0 or scope.matches_nothing:
            return []
        with self._lock:
            found = list(self._in_scope_with_ids(scope))
        if not found:
            return []
        # In float64, then rounded as Qdrant's float32 scores: the same pair scores the same
        # whatever else is in the matrix (a float32 product's rounding depends on its shape).
        matrix = np.stack([item.dense for _, item in found]).astype(np.float64)
        scores = (matrix @ query).astype(np.float32)
        return _ranked([(float(score), key, item) for score, (key, item) in zip(scores, found, strict=True)],
                       limit, fields)

    def search_text(self, *, user_id: str, text: str, limit: int, kind: str | None = None,
                    match: dict[str, Any] | None = None, match_any: dict[str, Sequence[str]] | None = None,
                    fields: Sequence[str] | None = None) -> list[VectorHit]:
        """BM25 with the IDF of this user's points only, as the adapters ask Qdrant for."""
        scope = _plain(call_scope(user_id, kind=kind, match=match, match_any=match_any))
        weights = sparse_query(text)
        if limit <= 0 or scope.matches_nothing or not weights:
            return []
        query = sparse_pairs(weights)
        with self._lock:
            found = list(self._in_scope_with_ids(scope))
            corpus = [item.sparse[0] for _, item in self._in_scope_with_ids(_plain(call_scope(user_id)))
                      if item.sparse is not None]
        idf = _idf(query[0], corpus)
        return _ranked([(score, key, item) for key, item in found
                        if item.sparse is not None and (score := _bm25(query, item.sparse, idf)) > 0.0],
                       limit, fields)

    def get_vectors(self, *, user_id: str, ids: Sequence[str]) -> dict[str, list[float]]:
        scope = _plain(call_scope(user_id, ids=ids))
        with self._lock:
            return {str(key): item.dense.tolist() for key, item in self._named(scope)}

    def get_payloads(self, *, user_id: str, ids: Sequence[str],
                     fields: Sequence[str]) -> dict[str, dict[str, Any]]:
        scope = _plain(call_scope(user_id, ids=ids))
        with self._lock:
            return {str(key): {field: item.payload[field] for field in fields if field in item.payload}
                    for key, item in self._named(scope)}

    def count(self, *, user_id: str | None = None, kind: str | None = None) -> int:
        scope = _plain(call_scope(user_id, kind=kind, any_user=True))
        with self._lock:
            return sum(1 for _ in self._in_scope(scope))

    def clear(self) -> None:
        with self._lock:
            self._live().clear()

    # -- what the adapters have beyond the port ------------------------------------------------

    def optimize(self) -> bool:
        """Nothing to build: every search is exact."""
        self._live()
        return False

    def flush(self) -> None:
        self._live()

    def close(self) -> None:
        self._closed = True

    # -- the dict ------------------------------------------------------------------------------

    def _live(self) -> dict[str | int, _Stored]:
        if self._closed:
            raise RuntimeError("vector index is closed")
        return self._points

    def _in_scope_with_ids(self, scope: Scope) -> Iterator[tuple[str | int, _Stored]]:
        """The stored points the scope matches (in insertion order); the caller holds the lock."""
        if scope.matches_nothing:
            return
        yield from ((key, item) for key, item in self._live().items() if _matches(key, item.payload, scope))

    def _named(self, scope: Scope) -> Iterator[tuple[str | int, _Stored]]:
        """The scope's points in the order its ids name them (each once), as the adapters retrieve them."""
        points = self._live()
        for key in dict.fromkeys(scope.ids or ()):
            if key in points and _matches(key, points[key].payload, scope):
                yield key, points[key]

    def _in_scope(self, scope: Scope) -> Iterator[_Stored]:
        return (item for _, item in self._in_scope_with_ids(scope))

    def _delete(self, scope: Scope) -> None:
        scope = _plain(scope)
        with self._lock:
            points = self._live()
            for key in [key for key, _ in self._in_scope_with_ids(scope)]:
                del points[key]


def _ranked(scored: list[tuple[float, str | int, _Stored]], limit: int,
            fields: Sequence[str] | None) -> list[VectorHit]:
    scored.sort(key=lambda row: (-row[0], _id_order(row[1])))
    return [vector_hit(key, score, _selected(item.payload, fields)) for score, key, item in scored[:limit]]


@dataclass(frozen=True)
class ChatCall:
    """One call a FakeChatModel answered, as the service made it."""

    messages: tuple[ChatMessage, ...]
    max_tokens: int | None
    json_mode: bool
    stream: bool

    @property
    def prompt(self) -> str:
        """The last message's text: what the call asked."""
        return self.messages[-1].content if self.messages else ""


class FakeChatModel:
    """The ChatModel port answering queued replies in order, then FAKE_DEFAULT_REPLY; every call is
    kept in `calls`. Tokens are whitespace-separated words, as tests/openai_server.py counts them, and
    a stream sends each word with its trailing space, at most `max_tokens` of them."""

    offline = False

    def __init__(self, name: str = FAKE_CHAT_MODEL_NAME) -> None:
        self.name = name
        self.calls: list[ChatCall] = []
        self._replies: deque[str] = deque()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FakeChatModel(name={self.name!r})"

    def reply(self, *texts: str) -> None:
        """Queue reply texts: each call takes the next one."""
        with self._lock:
            self._replies.extend(texts)

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None,
                 json_mode: bool = False) -> ChatResult:
        text = self._answer(messages, max_tokens=max_tokens, json_mode=json_mode, stream=False)
        return ChatResult(text=text, model=self.name, prompt_tokens=sum(len(m.content.split()) for m in messages),
                          completion_tokens=len(text.split()))

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Iterator[str]:
        """Like the OpenAI adapter's, the call is made (and recorded) on the first `next()`."""
        text = self._answer(messages, max_tokens=max_tokens, json_mode=False, stream=True)
        pieces = re.findall(r"\s*\S+\s*", text) or [text]
        yield from pieces[:max_tokens] if max_tokens is not None else pieces

    def _answer(self, messages: Sequence[ChatMessage], *, max_tokens: int | None, json_mode: bool,
                stream: bool) -> str:
        with self._lock:
            self.calls.append(ChatCall(tuple(messages), max_tokens, json_mode, stream))
            return self._replies.popleft() if self._replies else FAKE_DEFAULT_REPLY


# ---------------------------------------------------------------- Qdrant's semantics, spelled out


def _plain(scope: Scope) -> Scope:
    """The filter's values as the client sends them: JSON (a str enum member is its string)."""
    return Scope(tuple((field, json.loads(json.dumps(value))) for field, value in scope.equals),
                  tuple((field, tuple(json.loads(json.dumps(list(values))))) for field, values in scope.any_of),
                  scope.ids)


def _matches(key: str | int, payload: dict[str, Any], scope: Scope) -> bool:
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


def _bm25(query: SparseQuery, document: tuple[list[int], list[float]], idf: dict[int, float]) -> float:
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
