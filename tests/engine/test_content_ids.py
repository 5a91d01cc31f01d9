"""A node's block made again from its edges (engine/content_ids.py): re-addressing a segment that
lists every page it holds must give the bytes and CID a block built from scratch gives."""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime

import dag_cbor
import pytest
from multiformats import CID, multihash

from memory.engine.content_ids import block_with_dependencies, block_with_edges, content_block, dependency_map
from memory.engine.ipld import Link, NodeError, block_cid

DATA = {"summary": "Gardening in Lisbon.", "keywords": ["garden", "lisbon"], "score": 0.5, "count": 3,
        "raw": b"\x00plain", "file": Link(block_cid(b"a file"))}


def targets(count: int) -> list[str]:
    return [block_cid(hashlib.sha256(str(n).encode()).digest()) for n in range(count)]


def edges_of_a_segment(count: int) -> list[tuple[str, float, str]]:
    """Many pages, a relation that occurs once, and weights to clamp, in no particular order."""
    pages = targets(count + 3)
    edges = [("contains", 1.0, cid) for cid in pages[:count]]
    edges += [("merged_from", 0.4, pages[count]), ("evidence", 1.5, pages[count + 1]),
              ("evidence", -0.25, pages[count + 2]), ("evidence", 0.5, pages[0])]
    random.Random(7).shuffle(edges)
    return edges


@pytest.mark.parametrize("timestamp", [None, datetime(2023, 5, 8, 13, 56, 0, 250000, tzinfo=UTC)])
@pytest.mark.parametrize("old_count", [0, 5, 60])
def test_a_block_given_its_edges_is_the_block_built_from_scratch(timestamp, old_count):
    edges = edges_of_a_segment(60)
    _, old = content_block(kind="segment", data=DATA, timestamp=timestamp,
                           dependencies=dependency_map(edges[:old_count]))
    scratch = content_block(kind="segment", data=DATA, timestamp=timestamp, dependencies=dependency_map(edges))
    assert block_with_edges(old, edges) == scratch
    assert block_with_dependencies(old, dependency_map(edges)) == scratch
    assert block_with_edges(old, []) == content_block(kind="segment", data=DATA, timestamp=timestamp)


def test_a_block_given_its_edges_has_the_cid_an_independent_library_computes():
    edges = edges_of_a_segment(30)
    _, old = content_block(kind="segment", data={"summary": "s", "keywords": []}, dependencies={})
    node = {"kind": "segment", "data": {"summary": "s", "keywords": []},
            "dependencies": {name: [weight, CID.decode(cid)] for name, (weight, cid) in dependency_map(edges).items()}}
    independent = str(CID("base32", 1, "dag-cbor", multihash.digest(dag_cbor.encode(node), "sha2-256")))
    assert block_with_edges(old, edges).cid == independent
    first_page = min(cid for relation, _weight, cid in edges if relation == "contains")
    assert dependency_map(edges)["contains/1"] == (1.0, first_page)
    assert dependency_map(edges)["merged_from"].weight == 0.4


def test_a_block_that_is_not_a_canonical_node_is_refused_with_other_edges():
    first = targets(1)[0]
    node = dag_cbor.encode({"kind": "seg", "data": {"w": 0.5}, "dependencies": {"a": [0.5, CID.decode(first)]}})
    for bad in (node.replace(bytes.fromhex("fb3fe0000000000000"), bytes.fromhex("fa3f000000"), 1),  # data
                node.replace(bytes.fromhex("fb3fe0000000000000"), bytes.fromhex("fa3f000000"))):  # and weight
        with pytest.raises(NodeError, match="not canonical"):
            block_with_edges(bad, [("contains", 1.0, first)])
    with pytest.raises(NodeError, match="keys"):
        block_with_edges(dag_cbor.encode({"kind": "seg", "data": {}, "dependencies": {}, "owner": "ana"}), [])
    with pytest.raises(NodeError, match="not DAG-CBOR"):
        block_with_edges(b"\xff\x00", [])


@pytest.mark.parametrize("dependencies, message", [
    ({"a": (0.5, "Qmnot")}, "dependencies/a: not a CID"),
    ({"a": (float("nan"), targets(1)[0])}, "dependencies/a/weight"),
    ({"": (0.5, targets(1)[0])}, "non-empty string"),
])
def test_bad_dependencies_are_refused_by_name(dependencies, message):
    _, old = content_block(kind="segment", data={}, dependencies={})
    with pytest.raises(NodeError, match=message):
        block_with_dependencies(old, dependencies)
