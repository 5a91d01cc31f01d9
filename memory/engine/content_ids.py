"""Content ids for the memory graph (Memoria): every node is an IPLD block, its id a CIDv1.

A node is `{timestamp?, kind, data, dependencies: {name: (weight, CID)}}` encoded as DAG-CBOR
(engine/ipld.py); its id is the CIDv1 (sha2-256, base32) of that block. What a stored row puts in
`data` is fixed here, once, so that services and the data migration (0011_memoria_cids) agree:

    page          {"query", "response"}                      timestamp: when it was said
    segment       {"summary", "keywords"}                    no timestamp (a summary of its pages)
    fact          {"text"}                                   timestamp: the page it was stated in
    agent_trait   {"text"}                                   timestamp: the page it was stated in
    recollection  {"text", "prompt"}                          timestamp: when it was recollected
                  (its member pages are its "recollects" dependencies, weighted by their share)
    file          {"name", "media_type", "size", "content"}  timestamp: when it was uploaded
                  ("content" links to the bytes' own raw block; a page depends on its files, "attachment")

Sona membership, importance and repression are mutable annotations kept beside the node, never in it.
Dependencies come from the node's outgoing edges (services/graph.py): an edge's relation is the
dependency's name, suffixed "/1", "/2"... (in the order of the targets' CIDs) when a relation occurs
more than once, so that names are derived from content alone and an imported node keeps its CID.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from memory.engine.ipld import Dependency, Link, block_cid, node_build, node_encode, node_with_dependencies


class ContentBlock(NamedTuple):
    cid: str
    block: bytes


def content_block(*, kind: str, data: Any, timestamp: datetime | float | None = None,
                  dependencies: Mapping[str, Any] | None = None) -> ContentBlock:
    """The node's DAG-CBOR block and its CIDv1."""
    block = node_encode(node_build(kind=kind, data=data, dependencies=dependencies, timestamp=timestamp))
    return ContentBlock(block_cid(block), block)


def content_id(kind: str, data: Any, *, timestamp: datetime | float | None = None,
               dependencies: Mapping[str, Any] | None = None) -> str:
    """The CIDv1 of a node (content_block's cid)."""
    return content_block(kind=kind, data=data, timestamp=timestamp, dependencies=dependencies).cid


def dependency_map(edges: Iterable[tuple[str, float, str]]) -> dict[str, Dependency]:
    """Named dependencies from (relation, weight, target CID) edges; weights clamped into [0, 1]."""
    return {name: Dependency(weight, target) for name, (weight, target) in _named(edges).items()}


def _named(edges: Iterable[tuple[str, float, str]]) -> dict[str, tuple[float, str]]:
    """dependency_map's names and (weight, target CID) pairs, as plain tuples: a segment has one
    for every page it holds, and block_with_edges hands them on to the encoder as they are."""
    by_relation: dict[str, list[tuple[str, float]]] = {}
    for relation, weight, target in edges:
        targets = by_relation.get(relation)
        if targets is None:
            targets = by_relation[relation] = []
        if type(weight) is not float or not 0.0 <= weight <= 1.0:
            weight = min(max(float(weight), 0.0), 1.0)
        targets.append((target, weight))
    named: dict[str, tuple[float, str]] = {}
    for relation, targets in by_relation.items():
        if len(targets) == 1:
            named[relation] = (targets[0][1], targets[0][0])
            continue
        targets.sort()  # by CID, then weight: a node's names follow from its content alone
        named.update(zip(_numbered(relation, len(targets)), [(weight, target) for target, weight in targets],
                         strict=True))
    return named


def _numbered(relation: str, count: int) -> tuple[str, ...]:
    """"relation/1" .. "relation/<count>"."""
    return tuple(f"{relation}/{index}" for index in range(1, count + 1))


def row_content(kind: str, row: Any) -> tuple[dict[str, Any], datetime | None]:
    """(data, timestamp) of a stored memory row of a node kind (the table in the module docstring)."""
    if kind == "page":
        return {"query": row.query, "response": row.response}, row.timestamp
    if kind == "segment":
        return {"summary": row.summary, "keywords": sorted(row.keywords)}, None
    if kind in ("fact", "agent_trait"):
        return {"text": row.text}, row.timestamp
    if kind == "recollection":
        return {"text": row.text, "prompt": row.prompt}, row.created_at
    if kind == "file":
        return {"name": row.name, "media_type": row.media_type, "size": row.size,
                "content": Link(row.content_cid)}, row.created_at
    raise ValueError(f"no row content for a {kind!r} node")


def block_with_dependencies(block: bytes, dependencies: Mapping[str, Dependency]) -> ContentBlock:
    """The same node (kind, data, timestamp) with other dependencies: a node whose edges changed."""
    new_block = node_with_dependencies(block, dependencies)
    return ContentBlock(block_cid(new_block), new_block)


def block_with_edges(block: bytes, edges: Iterable[tuple[str, float, str]]) -> ContentBlock:
    """block_with_dependencies(block, dependency_map(edges)), without a Dependency per edge."""
    new_block = node_with_dependencies(block, _named(edges))
    return ContentBlock(block_cid(new_block), new_block)


def legacy_content_id(kind: str, content: dict[str, Any]) -> str:
    """The graph's ids before 0011_memoria_cids: sha256 over canonical JSON (kept for the benchmark)."""
    canonical = json.dumps({"kind": kind, "content": content}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


TRAIT_EVIDENCE_NAMESPACE = uuid.UUID("0c8f7a3e-5d1b-4f2a-9e6c-7b4d2a1f9e30")


def trait_evidence_object_id(key: str, page_id: str) -> str:
    """The graph node of one piece of trait evidence (a dimension, a page): a uuid5 keeps it
    within an object id's 64 characters."""
    return str(uuid.uuid5(TRAIT_EVIDENCE_NAMESPACE, f"{key}:{page_id}"))
