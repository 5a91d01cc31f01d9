"""What every VectorIndex implementation shares, before any client's classes: the point layout,
the validation of points and arguments, and the scope of a call.

memory/adapters/vectors.py spells these for Qdrant Edge and a Qdrant server; tests/fakes.py's
in-memory index uses them too, so all three refuse the same bad input and scope every call to
one user the same way (the contract tests in tests/memory/adapters/test_vectors.py check it).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from memory.engine.ports import Vector, VectorHit, VectorPoint
from memory.engine.sparse import sparse_terms

DENSE = "dense"
SPARSE = "text"
TENANT_FIELD = "user_id"
KEYWORD_FIELDS = (TENANT_FIELD, "kind", "segment_id", "tier")

# A keyword query or a point's text as a sparse vector: (sorted term indices, their weights).
SparseQuery = tuple[list[int], list[float]]

# The payload of hits that asked for none; read-only, since every such hit shares it.
NO_PAYLOAD: Any = MappingProxyType({})


@dataclass(frozen=True)
class Scope:
    """The points one call may touch, before it is spelled in one client's filter classes."""

    equals: tuple[tuple[str, Any], ...] = ()
    any_of: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    ids: tuple[str | int, ...] | None = None

    @property
    def matches_nothing(self) -> bool:
        # An empty "field in ()" or id list can match no point: answer without a round trip.
        return any(not values for _, values in self.any_of) or self.ids == ()


def call_scope(user_id: str | None, *, kind: str | None = None, match: dict[str, Any] | None = None,
               match_any: dict[str, Sequence[Any]] | None = None,
               ids: Sequence[str] | None = None, any_user: bool = False) -> Scope:
    """`user_id` None means every user only where `any_user` says so (count): a read or write
    that names no owner is an error, never a reach into all users' points."""
    equals: list[tuple[str, Any]] = []
    if user_id is not None or not any_user:
        equals.append((TENANT_FIELD, checked_user(user_id)))
    if kind is not None:
        equals.append(("kind", kind))
    equals.extend((match or {}).items())
    any_of = tuple((key, tuple(values)) for key, values in (match_any or {}).items())
    point_ids = None if ids is None else tuple(point_id(raw) for raw in ids)
    return Scope(tuple(equals), any_of, point_ids)


def point_id(raw: str | int) -> str | int:
    """An unsigned 64-bit integer (given as decimal digits) or a canonical UUID string: the two
    kinds of id Qdrant accepts. Hits carry either back as a string."""
    text = str(raw)
    if text.isascii() and text.isdigit() and len(text) <= 20:  # a UUID without dashes has 32
        value = int(text)
        if value < 1 << 64:
            return value
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise ValueError(f"vector point id must be a UUID or an unsigned 64-bit integer, got {raw!r}") from None


def checked_user(user_id: Any) -> str:
    if not isinstance(user_id, str) or not user_id:
        raise ValueError(f"user_id must be a non-empty string, got {user_id!r}")
    return user_id


def dense_values(vector: Vector, dimension: int) -> list[float]:
    """The vector as floats, refused unless it has the index's dimension."""
    values = [float(x) for x in vector]
    if len(values) != dimension:
        raise ValueError(f"vector has {len(values)} dimensions, the index expects {dimension}")
    return values


def sparse_pairs(weights: dict[int, float]) -> SparseQuery:
    indices = sorted(weights)
    return indices, [weights[index] for index in indices]


@dataclass(frozen=True)
class PreparedPoint:
    """A point checked and in the index's terms: its id, dense vector, sparse text vector, payload."""

    id: str | int
    dense: list[float]
    sparse: SparseQuery | None
    payload: dict[str, Any]


def prepare_point(point: VectorPoint, dimension: int) -> PreparedPoint:
    """Validate a whole batch before writing any of it."""
    checked_user(point.payload.get(TENANT_FIELD))
    if "kind" not in point.payload:
        raise ValueError(f"point {point.id} has no 'kind' in its payload")
    weights = sparse_terms(point.text) if point.text else {}
    return PreparedPoint(
        id=point_id(point.id),
        dense=dense_values(point.vector, dimension),
        sparse=sparse_pairs(weights) if weights else None,
        payload=dict(point.payload),
    )


def checked_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The fields `set_payload` may change: never the owner."""
    if TENANT_FIELD in payload:
        raise ValueError("set_payload cannot move points to another user")
    return dict(payload)


def vector_hit(raw_id: Any, score: float, payload: dict[str, Any] | None) -> VectorHit:
    return VectorHit(str(raw_id), float(score), payload if isinstance(payload, dict) else dict(payload or {}))
