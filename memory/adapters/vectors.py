"""Qdrant behind the VectorIndex port: embedded (Qdrant Edge) by default, a server when configured.

Both adapters keep the same layout: a dense named vector "dense" (cosine) for semantic search, a
sparse named vector "text" for keyword search (the BM25 tf part comes from memory.engine.sparse;
IDF over the user's own points comes from memory.adapters.term_counts on the embedded shard, from
the server's IDF modifier on a server), and keyword payload indexes on `user_id` (the tenant), `kind`,
`segment_id` and `tier`. Every read and write that names points is filtered by `user_id`, so one
user can neither see nor change another's points, even by guessing ids.

Point ids are UUID strings (the row's UUID). They come back in canonical lowercase form.
Cosine vectors are stored normalised, so `get_vectors` returns unit vectors.
The layout's names, the validation of points and the scope of a call are in
memory/adapters/vector_points.py, which the test suite's in-memory index uses too.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import qdrant_edge as edge
from qdrant_client import QdrantClient, models

from memory.adapters.term_counts import DocumentFrequencies, UserTerms
from memory.adapters.vector_points import (
    DENSE,
    KEYWORD_FIELDS,
    NO_PAYLOAD,
    SPARSE,
    TENANT_FIELD,
    PreparedPoint,
    Scope,
    SparseQuery,
    call_scope,
    checked_payload,
    dense_values,
    prepare_point,
    sparse_pairs,
    vector_hit,
)
from memory.engine.ports import Vector, VectorHit, VectorIndex, VectorPoint
from memory.engine.sparse import sparse_query

log = logging.getLogger(__name__)

UPSERT_BATCH = 256
# Edge has no flush timer of its own; its WAL already survives a crash, flushing bounds how much
# WAL a restart has to replay.
FLUSH_INTERVAL_S = 5.0


# ---------------------------------------------------------------- helpers of the two clients


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _dense_of(vectors: Any) -> list[float]:
    """The dense part of a record's named vectors, as floats (qdrant-client returns a dict by name)."""
    return [float(x) for x in vectors[DENSE]]


# ---------------------------------------------------------------- the contract, written once

# The searches' own time on this thread, for a benchmark's serial floor: Edge holds the GIL through
# a search, so a recall's searches run one after another and their sum is what it cannot go under.
_clock = threading.local()


def search_ms_taken() -> float:
    """The milliseconds this thread has spent inside the index's searches since it last asked."""
    taken, _clock.ms = getattr(_clock, "ms", 0.0), 0.0
    return taken


@contextmanager
def _searching() -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        _clock.ms = getattr(_clock, "ms", 0.0) + (time.perf_counter() - started) * 1000.0



class _ScopedIndex:
    """The VectorIndex contract; each adapter only spells the primitive calls for its client."""

    dimension: int

    def upsert(self, points: Sequence[VectorPoint]) -> None:
        prepared = [prepare_point(point, self.dimension) for point in points]
        for batch in _batches(prepared, UPSERT_BATCH):
            self._upsert(batch)

    def delete(self, *, user_id: str, ids: Sequence[str]) -> None:
        scope = call_scope(user_id, ids=ids)
        if not scope.matches_nothing:
            self._delete(scope)

    def delete_user(self, *, user_id: str) -> None:
        """Every point of the user's, gone: their vectors first overwritten where the index keeps
        them in place (_blank), so that no copy of them lingers in its files."""
        scope = call_scope(user_id)
        self._blank(scope)
        self._delete(scope)
        self.flush()

    def set_payload(self, *, user_id: str, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Change payload fields (a page's `tier`, `segment_id`) without re-sending vectors."""
        scope, payload = call_scope(user_id, ids=ids), checked_payload(payload)
        if not scope.matches_nothing and payload:
            self._set_payload(scope, payload)

    def search(self, *, user_id: str, vector: Vector, limit: int, kind: str | None = None,
               match: dict[str, Any] | None = None,
               match_any: dict[str, Sequence[str]] | None = None,
               fields: Sequence[str] | None = None) -> list[VectorHit]:
        """`fields` limits the payload returned (hundreds of hits convert faster); () returns none."""
        scope = call_scope(user_id, kind=kind, match=match, match_any=match_any)
        query = dense_values(vector, self.dimension)
        if limit <= 0 or scope.matches_nothing:
            return []
        with _searching():
            return self._search(query, DENSE, scope, limit, None, fields)

    def search_text(self, *, user_id: str, text: str, limit: int, kind: str | None = None,
                    match: dict[str, Any] | None = None,
                    match_any: dict[str, Sequence[str]] | None = None,
                    fields: Sequence[str] | None = None) -> list[VectorHit]:
        """Keyword (BM25) search; IDF is computed over this user's points only."""
        scope = call_scope(user_id, kind=kind, match=match, match_any=match_any)
        weights = sparse_query(text)
        if limit <= 0 or scope.matches_nothing or not weights:
            return []
        with _searching():
            return self._search_text(user_id, list(weights), scope, limit, fields)

    def get_vectors(self, *, user_id: str, ids: Sequence[str]) -> dict[str, list[float]]:
        scope = call_scope(user_id, ids=ids)
        if scope.matches_nothing:
            return {}
        return self._owned_vectors(scope)

    def get_payloads(self, *, user_id: str, ids: Sequence[str],
                     fields: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The named payload fields of the user's points among `ids` (others are left out)."""
        scope = call_scope(user_id, ids=ids)
        if scope.matches_nothing:
            return {}
        wanted = [TENANT_FIELD, *fields]
        return {found_id: {key: payload[key] for key in fields if key in payload}
                for found_id, payload in self._retrieve_payloads(list(scope.ids or ()), wanted)
                if payload.get(TENANT_FIELD) == user_id}

    def count(self, *, user_id: str | None = None, kind: str | None = None) -> int:
        scope = call_scope(user_id, kind=kind, any_user=True)
        return self._count(scope if scope.equals else None)

    def prepare(self, *, user_id: str) -> None:
        """Nothing to ready by default (a server counts IDF itself)."""
        call_scope(user_id)

    # Primitives, called with validated arguments.
    def _upsert(self, batch: Sequence[PreparedPoint]) -> None:
        raise NotImplementedError

    def _delete(self, scope: Scope) -> None:
        raise NotImplementedError

    def _set_payload(self, scope: Scope, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    def _blank(self, scope: Scope) -> None:
        """Overwrite the vectors of the points in `scope` before they are deleted (nothing by default)."""

    def _search(self, query: list[float] | SparseQuery, using: str, scope: Scope, limit: int,
                idf_corpus: Scope | None, fields: Sequence[str] | None = None) -> list[VectorHit]:
        raise NotImplementedError

    def _search_text(self, user_id: str, terms: list[int], scope: Scope, limit: int,
                     fields: Sequence[str] | None) -> list[VectorHit]:
        """BM25 over `scope`, IDF counted over all the user's points (here by the index's modifier)."""
        query = sparse_pairs(dict.fromkeys(terms, 1.0))
        return self._search(query, SPARSE, scope, limit, call_scope(user_id), fields)

    def _owned_vectors(self, scope: Scope) -> dict[str, list[float]]:
        """Id -> dense vector of the points among `scope.ids` that belong to its user: looked up
        by id, then checked against the owner."""
        owner = dict(scope.equals)[TENANT_FIELD]
        return {found_id: vector for found_id, found_owner, vector in self._retrieve(list(scope.ids or ()))
                if found_owner == owner}

    def _retrieve(self, ids: list[str]) -> list[tuple[str, Any, list[float]]]:
        """(id, payload user_id, dense vector) of the points that exist."""
        raise NotImplementedError

    def _retrieve_payloads(self, ids: list[str], fields: list[str]) -> list[tuple[str, dict[str, Any]]]:
        """(id, payload limited to `fields`) of the points that exist."""
        raise NotImplementedError

    def _count(self, scope: Scope | None) -> int:
        raise NotImplementedError


# ---------------------------------------------------------------- Qdrant Edge (embedded)


def _edge_config(dimension: int, *, idf_modifier: bool = False) -> edge.EdgeConfig:
    """The shard's layout. Text vectors carry no IDF modifier: a query brings its IDF weights
    (memory.adapters.term_counts). `idf_modifier` opens a shard written before that."""
    sparse = edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf) if idf_modifier else edge.EdgeSparseVectorParams()
    return edge.EdgeConfig(
        vectors={DENSE: edge.EdgeVectorParams(size=dimension, distance=edge.Distance.Cosine)},
        sparse_vectors={SPARSE: sparse},
    )


def _has_idf_modifier(shard_dir: Path) -> bool:
    config = json.loads((shard_dir / "edge_config.json").read_text())
    return (config.get("sparse_vectors", {}).get(SPARSE) or {}).get("modifier") == "idf"


def _copy_points(source: edge.EdgeShard, target: edge.EdgeShard) -> int:
    """Every point of `source` written into `target` as it is; the number copied."""
    copied, offset = 0, None
    while True:
        records, offset = source.scroll(edge.ScrollRequest(offset=offset, limit=UPSERT_BATCH, with_payload=True,
                                                           with_vector=True))
        if records:
            target.update(edge.UpdateOperation.upsert_points([
                edge.Point(record.id, dict(record.vector), dict(record.payload or {})) for record in records]))
            copied += len(records)
        if offset is None:
            return copied


def _swap_paths(shard_dir: Path) -> tuple[Path, Path]:
    return shard_dir.with_name(shard_dir.name + ".next"), shard_dir.with_name(shard_dir.name + ".legacy")


def _rewrite_without_idf_modifier(shard_dir: Path, dimension: int) -> None:
    """Re-index a shard whose text vectors carry Edge's IDF modifier into today's layout.

    Edge refuses to open a shard under a config with another modifier, so the points are copied
    into a new shard beside it, which then takes the old one's place. A crash before the first
    rename leaves the old shard (the copy is done again); after it, `_finish_swap` completes."""
    fresh, legacy = _swap_paths(shard_dir)
    shutil.rmtree(fresh, ignore_errors=True)
    log.info("vectors.reindex_without_idf_modifier.start", extra={"shard": str(shard_dir)})
    old = edge.EdgeShard.load(str(shard_dir), _edge_config(dimension, idf_modifier=True))
    fresh.mkdir(parents=True)
    new = edge.EdgeShard.create(str(fresh), _edge_config(dimension))
    try:
        copied = _copy_points(old, new)
        if copied:
            new.optimize()
        new.flush()
    finally:
        new.close()
        old.close()
    shard_dir.rename(legacy)
    fresh.rename(shard_dir)
    shutil.rmtree(legacy)
    log.info("vectors.reindex_without_idf_modifier.done", extra={"shard": str(shard_dir), "points": copied})


def _finish_swap(shard_dir: Path) -> None:
    """Complete a re-index that stopped between its renames."""
    fresh, legacy = _swap_paths(shard_dir)
    if legacy.exists() and not shard_dir.exists():
        (fresh if fresh.exists() else legacy).rename(shard_dir)
    shutil.rmtree(legacy, ignore_errors=True)


def _edge_filter(scope: Scope) -> edge.Filter:
    must: list[Any] = [edge.FieldCondition(key, match=edge.MatchValue(value)) for key, value in scope.equals]
    must += [edge.FieldCondition(key, match=edge.MatchAny(list(values))) for key, values in scope.any_of]
    if scope.ids is not None:
        must.append(edge.HasIdCondition(set(scope.ids)))
    return edge.Filter(must=must)


def _edge_point(prepared: PreparedPoint) -> edge.Point:
    vectors: dict[str, Any] = {DENSE: prepared.dense}
    if prepared.sparse is not None:
        vectors[SPARSE] = edge.SparseVector(*prepared.sparse)
    return edge.Point(prepared.id, vectors, prepared.payload)


def _ensure_edge_indexes(shard: edge.EdgeShard) -> None:
    existing = shard.info().payload_schema
    for field in KEYWORD_FIELDS:
        if field in existing:
            continue
        # is_tenant keeps each user's points together on disk, which filtered search reads.
        schema = edge.KeywordIndexParams(is_tenant=True) if field == TENANT_FIELD else (
            edge.PayloadSchemaType.Keyword)
        shard.update(edge.UpdateOperation.create_field_index(field, schema))


def _close_shard(box: list[edge.EdgeShard | None], lock: threading.Lock) -> None:
    with lock:
        shard, box[0] = box[0], None
        if shard is not None:
            shard.flush()
            shard.close()


class EdgeVectorIndex(_ScopedIndex):
    """An embedded Qdrant Edge shard in `path/shard-<dimension>d`.

    One process only may open a shard directory (Edge locks its WAL). The shard is shared by the
    web server's threads and the maintenance thread, so every call holds `_lock`. Edge's calls
    also hold the GIL: a long `optimize()` stalls every Python thread of the process.
    The dimension is part of the directory name so that switching embedders starts an empty
    index for `reindex` to fill instead of failing on the old shard.
    """

    def __init__(self, path: Path, *, dimension: int) -> None:
        self.dimension = dimension
        self.shard_dir = Path(path) / f"shard-{dimension}d"
        self._lock = threading.Lock()
        self._terms = DocumentFrequencies()
        self._box: list[edge.EdgeShard | None] = [self._open()]
        self._last_flush = time.monotonic()
        # Flushes and releases the directory lock at interpreter exit if nobody called close().
        self._finalizer = weakref.finalize(self, _close_shard, self._box, self._lock)

    def _open(self) -> edge.EdgeShard:
        config = _edge_config(self.dimension)
        _finish_swap(self.shard_dir)
        if (self.shard_dir / "edge_config.json").exists():
            if _has_idf_modifier(self.shard_dir):
                _rewrite_without_idf_modifier(self.shard_dir, self.dimension)
            shard = edge.EdgeShard.load(str(self.shard_dir), config)
        else:
            self.shard_dir.mkdir(parents=True, exist_ok=True)
            shard = edge.EdgeShard.create(str(self.shard_dir), config)
        _ensure_edge_indexes(shard)
        return shard

    @contextmanager
    def _shard(self) -> Iterator[edge.EdgeShard]:
        with self._lock:
            shard = self._box[0]
            if shard is None:
                raise RuntimeError(f"vector index {self.shard_dir} is closed")
            yield shard

    def _write(self, operation: edge.UpdateOperation) -> None:
        with self._shard() as shard:
            shard.update(operation)
            self._flush_when_due(shard)

    def _flush_when_due(self, shard: edge.EdgeShard) -> None:
        if time.monotonic() - self._last_flush >= FLUSH_INTERVAL_S:
            self._flush(shard)

    def _flush(self, shard: edge.EdgeShard) -> None:
        shard.flush()
        self._last_flush = time.monotonic()

    def _old_texts(self, shard: edge.EdgeShard, ids: Sequence[str | int],
                   owner: str | None = None) -> list[tuple[str, list[int]]]:
        """(owner, term indices) of the points among `ids` that have text and whose owner's
        document frequencies are held in memory (and who is `owner`, when given)."""
        if not ids or not self._terms:
            return []
        return [(found_owner, text.indices)
                for record in shard.retrieve(list[Any](ids), [TENANT_FIELD], [SPARSE])
                if (found_owner := (record.payload or {}).get(TENANT_FIELD)) in self._terms
                and owner in (None, found_owner) and (text := record.vector.get(SPARSE)) is not None]

    def _counted_update(self, shard: edge.EdgeShard, operation: edge.UpdateOperation,
                        gone: list[tuple[str, list[int]]], added: Sequence[PreparedPoint] = ()) -> None:
        """Apply `operation`, then move the held document frequencies: the `gone` texts leave
        them and the `added` points' texts join them, in one critical section with the write."""
        shard.update(operation)
        for owner, terms in gone:
            self._terms.held(owner).remove(terms)
        for item in added:
            held = self._terms.held(item.payload[TENANT_FIELD])
            if held is not None and item.sparse is not None:
                held.add(item.sparse[0])
        self._flush_when_due(shard)

    def _upsert(self, batch: Sequence[PreparedPoint]) -> None:
        operation = edge.UpdateOperation.upsert_points([_edge_point(item) for item in batch])
        with self._shard() as shard:
            self._counted_update(shard, operation, self._old_texts(shard, [item.id for item in batch]), batch)

    def _delete(self, scope: Scope) -> None:
        operation = edge.UpdateOperation.delete_points_by_filter(_edge_filter(scope))
        owner = dict(scope.equals)[TENANT_FIELD]
        with self._shard() as shard:
            if scope.ids is None:  # the whole user (delete_user): counted again on their next search
                self._terms.forget(owner)
                self._counted_update(shard, operation, [])
            else:
                self._counted_update(shard, operation, self._old_texts(shard, scope.ids, owner))

    def _blank(self, scope: Scope) -> None:
        """A deleted point's vector stays in its segment's file until the segment is rebuilt, and
        Edge rebuilds none on its own; an upsert of the same id rewrites an appendable segment's
        vector in place. So an erase first writes one blank vector, and no text, over each of the
        user's points, then deletes them and flushes. (A segment sealed by `optimize_vectors`
        keeps its copy until a later optimize rebuilds it: README, "Erasing".)"""
        owner = dict(scope.equals)[TENANT_FIELD]
        blank = [1.0 / math.sqrt(self.dimension)] * self.dimension
        offset = None
        while True:
            request = edge.ScrollRequest(offset=offset, limit=UPSERT_BATCH, filter=_edge_filter(scope),
                                         with_payload=False, with_vector=False)
            with self._shard() as shard:
                records, offset = shard.scroll(request)
                if records:
                    shard.update(edge.UpdateOperation.upsert_points([
                        edge.Point(record.id, {DENSE: blank}, {TENANT_FIELD: owner, "kind": "erased"})
                        for record in records]))
                if offset is None:
                    self._flush(shard)
                    return

    def _set_payload(self, scope: Scope, payload: dict[str, Any]) -> None:
        self._write(edge.UpdateOperation.set_payload_by_filter(_edge_filter(scope), payload))

    def _search(self, query: list[float] | SparseQuery, using: str, scope: Scope, limit: int,
                idf_corpus: Scope | None, fields: Sequence[str] | None = None) -> list[VectorHit]:
        vector = edge.SparseVector(*query) if isinstance(query, tuple) else query
        params = None if idf_corpus is None else edge.SearchParams(
            idf=edge.IdfParams(corpus=_edge_filter(idf_corpus)))
        request = edge.QueryRequest(limit=limit, query=edge.Query.Nearest(vector, using=using),
                                    filter=_edge_filter(scope), params=params,
                                    with_payload=True if fields is None
                                    else edge.PayloadSelector.Include(list(fields)) if fields else False,
                                    with_vector=False)
        with self._shard() as shard:
            found = shard.query(request)
        if fields is not None and not fields:
            # tuple.__new__ skips the NamedTuple's Python-level constructor: a hybrid recall
            # builds 1,200 of these (0.4 ms through the constructor, 0.1 ms this way).
            return [tuple.__new__(VectorHit, (str(point.id), point.score, NO_PAYLOAD)) for point in found]
        return [vector_hit(point.id, point.score, point.payload) for point in found]

    def prepare(self, *, user_id: str) -> None:
        """Count the user's words now if this process has not (one scroll of their text vectors),
        so that their first keyword search does not."""
        call_scope(user_id)
        with self._shard() as shard:
            self._user_terms(shard, user_id)

    def _search_text(self, user_id: str, terms: list[int], scope: Scope, limit: int,
                     fields: Sequence[str] | None) -> list[VectorHit]:
        """The query carries the IDF of its terms from the user's held document frequencies, so
        the shard only sums weight x BM25 tf (no count over the user's points per search)."""
        with self._shard() as shard:
            weights = self._user_terms(shard, user_id).weights(terms)
        if not weights:
            return []  # no point of the user's holds any of the terms
        return self._search(sparse_pairs(weights), SPARSE, scope, limit, None, fields)

    def _user_terms(self, shard: edge.EdgeShard, user_id: str) -> UserTerms:
        """The user's document frequencies, counted from their points if this process holds none."""
        return self._terms.built(user_id, self._texts_of(shard, user_id))

    def _texts_of(self, shard: edge.EdgeShard, user_id: str) -> Iterator[list[int]]:
        """The term indices of each of the user's points that has text: one scroll, read once
        when the user's document frequencies are first needed in this process."""
        offset = None
        text_filter = _edge_filter(call_scope(user_id))
        while True:
            records, offset = shard.scroll(edge.ScrollRequest(offset=offset, limit=4096, filter=text_filter,
                                                              with_payload=False, with_vector=[SPARSE]))
            for record in records:
                text = record.vector.get(SPARSE)
                if text is not None:
                    yield text.indices
            if offset is None:
                return

    def _owned_vectors(self, scope: Scope) -> dict[str, list[float]]:
        """One scroll filtered by owner and ids, reading no payload: a retrieve by id that reads
        each point's `user_id` to check it took 8 ms for 100 points at 10,000 pages, the payload
        read 5 ms of it; this takes 3 ms (load 7-10, BENCHMARKS.md "Recall near its floor, one
        pass"). The filter keeps other users' points out as the check did."""
        request = edge.ScrollRequest(limit=len(scope.ids or ()), filter=_edge_filter(scope), with_payload=False,
                                     with_vector=[DENSE])
        with self._shard() as shard:
            records, _ = shard.scroll(request)
        # The binding builds a fresh list of Python floats on each `.vector` read: taken as it is,
        # since a float() pass over it doubled the cost of reading 100 vectors (1.5 -> 0.6 ms).
        return {str(record.id): record.vector[DENSE] for record in records}

    def _retrieve_payloads(self, ids: list[str], fields: list[str]) -> list[tuple[str, dict[str, Any]]]:
        with self._shard() as shard:
            records = shard.retrieve(list[Any](ids), fields, [])
        return [(str(record.id), dict(record.payload or {})) for record in records]

    def _count(self, scope: Scope | None) -> int:
        request = edge.CountRequest(exact=True, filter=None if scope is None else _edge_filter(scope))
        with self._shard() as shard:
            return shard.count(request)

    def clear(self) -> None:
        """Drop every point by starting a fresh shard, which also gives the disk space back."""
        with self._shard() as shard:
            shard.close()
            self._box[0] = None
            shutil.rmtree(self.shard_dir)
            self._terms.clear()
            self._box[0] = self._open()

    def optimize(self) -> bool:
        """Build HNSW indexes and merge segments (Edge never does this on its own).

        Blocking and GIL-holding: about 90 s at 100k 384-d points on 2 cores. Run it from a
        management command or at a quiet time, never from a request."""
        with self._shard() as shard:
            changed = shard.optimize()
            self._flush(shard)
            return changed

    def flush(self) -> None:
        with self._shard() as shard:
            self._flush(shard)

    def close(self) -> None:
        self._finalizer()


# ---------------------------------------------------------------- Qdrant server (qdrant-client)


def _server_filter(scope: Scope) -> models.Filter:
    must: list[Any] = [models.FieldCondition(key=key, match=models.MatchValue(value=value))
                       for key, value in scope.equals]
    must += [models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))
             for key, values in scope.any_of]
    if scope.ids is not None:
        must.append(models.HasIdCondition(has_id=list(scope.ids)))
    return models.Filter(must=must)


def _server_point(prepared: PreparedPoint) -> models.PointStruct:
    vectors: dict[str, Any] = {DENSE: prepared.dense}
    if prepared.sparse is not None:
        indices, values = prepared.sparse
        vectors[SPARSE] = models.SparseVector(indices=indices, values=values)
    return models.PointStruct(id=prepared.id, vector=vectors, payload=prepared.payload)


class ServerVectorIndex(_ScopedIndex):
    """A collection on a Qdrant server or cluster; created with its indexes if missing.

    `tenant_idf=False` falls back to collection-wide IDF for servers older than 1.19, which
    reject the per-user IDF corpus."""

    def __init__(self, url: str, *, dimension: int, collection: str = "memoryos",
                 api_key: str | None = None, tenant_idf: bool = True) -> None:
        self._setup(QdrantClient(url=url, api_key=api_key, timeout=30), dimension=dimension,
                    collection=collection, tenant_idf=tenant_idf)

    @classmethod
    def from_client(cls, client: QdrantClient, *, dimension: int, collection: str = "memoryos",
                    tenant_idf: bool = True) -> ServerVectorIndex:
        """Wrap an existing client (tests run the adapter against qdrant-client's local mode)."""
        index = cls.__new__(cls)
        index._setup(client, dimension=dimension, collection=collection, tenant_idf=tenant_idf)
        return index

    def _setup(self, client: QdrantClient, *, dimension: int, collection: str,
               tenant_idf: bool) -> None:
        self.client, self.dimension, self.collection = client, dimension, collection
        self.tenant_idf = tenant_idf
        if self.client.collection_exists(collection):
            self._check_layout()
        else:
            self._create()

    def _create(self) -> None:
        self.client.create_collection(
            self.collection,
            vectors_config={DENSE: models.VectorParams(size=self.dimension, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        for field in KEYWORD_FIELDS:
            schema = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD,
                                               is_tenant=field == TENANT_FIELD)
            self.client.create_payload_index(self.collection, field, field_schema=schema, wait=True)

    def _check_layout(self) -> None:
        params = self.client.get_collection(self.collection).config.params
        dense = params.vectors.get(DENSE) if isinstance(params.vectors, dict) else None
        if dense is None or dense.size != self.dimension or SPARSE not in (params.sparse_vectors or {}):
            raise ValueError(f"collection {self.collection!r} does not hold {self.dimension}-d "
                             f"{DENSE!r} and sparse {SPARSE!r} vectors; pick another collection name")

    def _upsert(self, batch: Sequence[PreparedPoint]) -> None:
        self.client.upsert(self.collection, points=[_server_point(item) for item in batch], wait=True)

    def _delete(self, scope: Scope) -> None:
        selector = models.FilterSelector(filter=_server_filter(scope))
        self.client.delete(self.collection, points_selector=selector, wait=True)

    def _set_payload(self, scope: Scope, payload: dict[str, Any]) -> None:
        self.client.set_payload(self.collection, payload=payload, points=_server_filter(scope), wait=True)

    def _search(self, query: list[float] | SparseQuery, using: str, scope: Scope, limit: int,
                idf_corpus: Scope | None, fields: Sequence[str] | None = None) -> list[VectorHit]:
        vector: Any = query
        if isinstance(query, tuple):
            vector = models.SparseVector(indices=query[0], values=query[1])
        params = None
        if idf_corpus is not None and self.tenant_idf:
            params = models.SearchParams(idf=models.IdfCorpusParams(corpus=_server_filter(idf_corpus)))
        response = self.client.query_points(
            self.collection, query=vector, using=using, query_filter=_server_filter(scope),
            search_params=params, limit=limit,
            with_payload=True if fields is None else list(fields) if fields else False,
            with_vectors=False)
        return [vector_hit(point.id, point.score, point.payload) for point in response.points]

    def _retrieve(self, ids: list[str]) -> list[tuple[str, Any, list[float]]]:
        records = self.client.retrieve(self.collection, ids, with_payload=[TENANT_FIELD],
                                       with_vectors=[DENSE])
        return [(str(record.id), (record.payload or {}).get(TENANT_FIELD), _dense_of(record.vector))
                for record in records]

    def _retrieve_payloads(self, ids: list[str], fields: list[str]) -> list[tuple[str, dict[str, Any]]]:
        records = self.client.retrieve(self.collection, ids, with_payload=fields, with_vectors=False)
        return [(str(record.id), dict(record.payload or {})) for record in records]

    def _count(self, scope: Scope | None) -> int:
        flt = None if scope is None else _server_filter(scope)
        return self.client.count(self.collection, count_filter=flt, exact=True).count

    def clear(self) -> None:
        self.client.delete_collection(self.collection)
        self._create()

    def optimize(self) -> bool:
        """The server optimises in the background; nothing to do."""
        return False

    def flush(self) -> None:
        """The server flushes on its own timer."""

    def close(self) -> None:
        self.client.close()


def open_vector_index(*, url: str | None, path: Path, dimension: int, collection: str = "memoryos",
                      api_key: str | None = None) -> VectorIndex:
    """The server adapter when `url` is set (QDRANT_URL), else the embedded shard under `path`."""
    if url:
        return ServerVectorIndex(url, dimension=dimension, collection=collection, api_key=api_key)
    return EdgeVectorIndex(path, dimension=dimension)


def dir_size_mb(path: Path | str) -> float:
    """Disk space the files under `path` take (allocated blocks, as `du`: Edge preallocates sparse files)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:  # a file removed while walking (WAL rotation)
                pass
    return round(total / 2**20, 2)
