"""Ports: the small interfaces the engine and services talk to.

Real adapters live in memory/adapters/ (vectors.py, embeddings.py, llm.py);
small fakes for mechanics tests live in tests/fakes.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

Vector = Sequence[float]


@dataclass(frozen=True)
class VectorPoint:
    """One point in the vector index; `payload` always carries `user_id` and `kind`.

    `text`, when set, is indexed as a sparse vector too, for keyword search."""

    id: str
    vector: Vector
    payload: dict[str, Any]
    text: str | None = None


class VectorHit(NamedTuple):
    """A NamedTuple, not a dataclass: a hybrid query builds over a thousand of them."""

    id: str
    score: float
    payload: dict[str, Any] = {}  # noqa: RUF012 - never mutated; adapters always pass their own


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class ChatResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ModelError(RuntimeError):
    """Raised by a ChatModel or Embedder adapter when the backend fails or answers garbage."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-normalised embeddings, one per text, in order."""
        ...


@runtime_checkable
class VectorIndex(Protocol):
    """Qdrant behind a port. Every call is scoped to one owner (`user_id`)."""

    def upsert(self, points: Sequence[VectorPoint]) -> None: ...

    def delete(self, *, user_id: str, ids: Sequence[str]) -> None: ...

    def delete_user(self, *, user_id: str) -> None: ...

    def search(
        self,
        *,
        user_id: str,
        vector: Vector,
        limit: int,
        kind: str | None = None,
        match: dict[str, Any] | None = None,
        match_any: dict[str, Sequence[str]] | None = None,
    ) -> list[VectorHit]:
        """Cosine search restricted to `user_id`; `kind`, `match` (field == value) and
        `match_any` (field in values) narrow the filter further."""
        ...

    def search_text(
        self,
        *,
        user_id: str,
        text: str,
        limit: int,
        kind: str | None = None,
        match: dict[str, Any] | None = None,
        match_any: dict[str, Sequence[str]] | None = None,
    ) -> list[VectorHit]:
        """BM25 keyword search over the points' text, restricted to `user_id`."""
        ...

    def set_payload(self, *, user_id: str, ids: Sequence[str], payload: dict[str, Any]) -> None: ...

    def get_vectors(self, *, user_id: str, ids: Sequence[str]) -> dict[str, list[float]]: ...

    def get_payloads(self, *, user_id: str, ids: Sequence[str],
                     fields: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Selected payload fields of the user's points among `ids`; other users' are left out."""
        ...

    def count(self, *, user_id: str | None = None, kind: str | None = None) -> int: ...

    def prepare(self, *, user_id: str) -> None:
        """Ready what the user's searches will read, ahead of their first (the embedded index
        counts the user's words once a process: 0.16 s at 10,000 pages, 2.2 s at 100,000)."""
        ...

    def clear(self) -> None:
        """Drop every point (used by `reindex`)."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    name: str
    offline: bool

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None,
                 json_mode: bool = False) -> ChatResult: ...

    def stream(self, messages: Sequence[ChatMessage], *,
               max_tokens: int | None = None) -> Iterator[str]: ...
