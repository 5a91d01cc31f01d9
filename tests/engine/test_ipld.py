"""Memoria's node blocks and CIDs (libipld), checked against an independent IPLD implementation
(dag-cbor + multiformats, pure Python)."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta, timezone

import dag_cbor
import pytest
from multiformats import CID, multihash

from memory.engine.ipld import (
    BlockError,
    Dependency,
    Link,
    MemoryNode,
    NodeError,
    block_cid,
    block_verify,
    cid_bytes,
    node_build,
    node_cid,
    node_decode,
    node_encode,
    node_verify,
)

# The fixture's CIDs as dag-cbor + multiformats computed them (tests below recompute them too).
FIRST_CID = "bafyreid44tfu5osu4w4gvadl7pkeo3ztcg5aqt2e7pvteioj4sl372sbde"
SEGMENT_CID = "bafyreibvjm7fag2gqdqnplbwkc6gdmbwkhaxxu3c4mshqln6g2ihxe5fra"
SECOND_CID = "bafyreifnu6e6nqjwclooo3vnc4hfcuho5dxl4vlbqqhle6gl3dqnjnnoxu"


def reference_cid(block: bytes) -> str:
    """CIDv1 by multiformats: dag-cbor codec, sha2-256, base32."""
    return str(CID("base32", 1, "dag-cbor", multihash.digest(block, "sha2-256")))


def first_page() -> MemoryNode:
    return node_build(kind="page", data={"query": "I adopted a puppy named Biscuit.", "response": "Congratulations!"},
                      timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=UTC))


def second_page(*, previous_weight: float = 1.0) -> MemoryNode:
    return node_build(
        kind="page",
        data={"query": "How old is Biscuit now?", "response": "Four months.", "speakers": ("Ana", "assistant")},
        dependencies={"previous": (previous_weight, FIRST_CID), "segment": Dependency(0.25, SEGMENT_CID)},
        timestamp=1683557760.5,
    )


def test_fixture_cids_equal_the_independent_implementation():
    segment = node_build(kind="segment", data={"summary": "pets"})
    assert node_cid(first_page()) == FIRST_CID
    assert node_cid(segment) == SEGMENT_CID
    assert node_cid(second_page()) == SECOND_CID
    # the same node written by dag-cbor, links as multiformats CIDs: the same bytes and CID
    independent = dag_cbor.encode({
        "kind": "page",
        "data": {"query": "How old is Biscuit now?", "response": "Four months.", "speakers": ["Ana", "assistant"]},
        "dependencies": {"previous": [1.0, CID.decode(FIRST_CID)], "segment": [0.25, CID.decode(SEGMENT_CID)]},
        "timestamp": 1683557760.5,
    })
    assert node_encode(second_page()) == independent
    assert reference_cid(independent) == SECOND_CID == block_cid(independent)


def test_independent_decoder_reads_links_and_float_weights():
    decoded = dag_cbor.decode(node_encode(second_page()))
    assert set(decoded) == {"kind", "data", "dependencies", "timestamp"}
    weight, target = decoded["dependencies"]["previous"]
    assert isinstance(target, CID) and target == CID.decode(FIRST_CID)  # CBOR tag 42
    assert isinstance(weight, float) and weight == 1.0
    assert decoded["dependencies"]["segment"][0] == 0.25
    assert decoded["data"]["speakers"] == ["Ana", "assistant"]
    # no timestamp: the key is absent, not null
    assert "timestamp" not in dag_cbor.decode(node_encode(node_build(kind="segment", data={})))


def test_round_trip():
    node = second_page()
    block = node_encode(node)
    assert node_decode(block) == node
    assert node_verify(cid=block_cid(block), block=block) == node
    assert node.dependencies["previous"] == Dependency(1.0, FIRST_CID)
    assert node.data["speakers"] == ["Ana", "assistant"]  # a tuple comes back as a list
    assert first_page().timestamp == 1683554160.0


def test_dependencies_are_part_of_the_content():
    base = node_cid(second_page())
    assert node_cid(second_page(previous_weight=0.9)) != base
    same_data = dict(kind="page", data=second_page().data, timestamp=1683557760.5)
    assert node_cid(node_build(**same_data, dependencies={"previous": (1.0, FIRST_CID)})) != base
    assert node_cid(node_build(**same_data, dependencies={"earlier": (1.0, FIRST_CID),
                                                          "segment": (0.25, SEGMENT_CID)})) != base
    assert node_cid(node_build(**same_data, dependencies={"previous": (1.0, SEGMENT_CID),
                                                          "segment": (0.25, FIRST_CID)})) != base


def test_tampered_block_fails_verification():
    block = node_encode(second_page())
    tampered = block.replace(b"Four months.", b"Five months.")
    with pytest.raises(BlockError, match="content does not match") as caught:
        node_verify(cid=SECOND_CID, block=tampered)
    assert caught.value.cid == SECOND_CID
    # a weight changed in the block: the CID no longer matches either
    with pytest.raises(BlockError, match="content does not match"):
        node_verify(cid=SECOND_CID, block=block.replace(bytes.fromhex("fb3fd0000000000000"),
                                                        bytes.fromhex("fb3fd8000000000000")))


def test_verification_names_a_wrong_cid():
    block = node_encode(first_page())
    raw_cid = str(CID("base32", 1, "raw", multihash.digest(block, "sha2-256")))
    with pytest.raises(BlockError, match="not DAG-CBOR"):
        node_verify(cid=raw_cid, block=block)
    v0 = str(CID("base58btc", 0, "dag-pb", multihash.digest(block, "sha2-256")))
    with pytest.raises(BlockError, match="CID version 0"):
        node_verify(cid=v0, block=block)
    blake = str(CID("base32", 1, "dag-cbor", multihash.digest(block, "blake2b-256")))
    with pytest.raises(BlockError, match="cannot be checked"):
        block_verify(cid=blake, block=block)
    with pytest.raises(BlockError, match="not a CID"):
        node_verify(cid="bafy-not-a-cid", block=block)


def test_a_matching_block_that_is_not_canonical_or_not_a_node_is_refused():
    # the weight as a 32-bit float: valid CBOR, hashed correctly, but not DAG-CBOR's one encoding
    node = dag_cbor.encode({"kind": "seg", "data": {}, "dependencies": {"a": [0.5, CID.decode(FIRST_CID)]}})
    f32 = node.replace(bytes.fromhex("fb3fe0000000000000"), bytes.fromhex("fa3f000000"))
    with pytest.raises(BlockError, match="not canonical"):
        node_verify(cid=block_cid(f32), block=f32)
    extra = dag_cbor.encode({"kind": "seg", "data": {}, "dependencies": {}, "owner": "ana"})
    with pytest.raises(BlockError, match="keys"):
        node_verify(cid=block_cid(extra), block=extra)
    int_weight = dag_cbor.encode({"kind": "seg", "data": {}, "dependencies": {"a": [1, CID.decode(FIRST_CID)]}})
    with pytest.raises(BlockError, match=r"dependencies/a: expected \[float weight, link\]"):
        node_verify(cid=block_cid(int_weight), block=int_weight)
    not_cbor = b"\xff\x00"
    with pytest.raises(BlockError, match="not DAG-CBOR"):
        node_verify(cid=block_cid(not_cbor), block=not_cbor)


def test_python_values_map_to_dag_cbor():
    when = datetime(2023, 5, 8, 15, 56, tzinfo=timezone(timedelta(hours=2)))
    node = node_build(kind="k", data={"when": when, "day": date(2023, 5, 8), "pair": (1, 2.5), "none": None,
                                      "flag": True, "raw": b"\x00\x01", "zero": -0.0, "file": Link(FIRST_CID)})
    assert node.data["when"] == "2023-05-08T13:56:00Z"
    assert node.data["day"] == "2023-05-08"
    assert node.data["pair"] == [1, 2.5]
    assert node.data["zero"] == 0.0
    assert node.data["file"] == Link(FIRST_CID)
    assert node_decode(node_encode(node)) == node
    independent = dag_cbor.decode(node_encode(node))["data"]
    assert independent["file"] == CID.decode(FIRST_CID)  # a Link is a real IPLD link
    assert independent["raw"] == b"\x00\x01"
    micro = node_build(kind="k", data=datetime(2023, 5, 8, 13, 56, 0, 120, tzinfo=UTC))
    assert micro.data == "2023-05-08T13:56:00.000120Z"


@pytest.mark.parametrize(("data", "message"), [
    ({"x": float("nan")}, r"data/x: nan is not allowed"),
    ({"x": [1, float("inf")]}, r"data/x/1: inf"),
    ({"x": datetime(2023, 5, 8)}, r"data/x: a naive datetime"),
    ({"x": {1, 2}}, r"data/x: set has no DAG-CBOR form"),
    ({1: "one"}, r"data: map key 1 is not a string"),
    ({"x": 2**64}, r"outside DAG-CBOR's 64-bit range"),
    ({"x": "\ud800"}, r"data/x: text is not valid UTF-8"),
    ({"x": cid_bytes(FIRST_CID)}, r"data/x: these bytes begin like a binary CID"),
])
def test_values_without_a_dag_cbor_form_are_refused(data, message):
    with pytest.raises(NodeError, match=message):
        node_build(kind="k", data=data)


@pytest.mark.parametrize(("dependencies", "message"), [
    ({"a": (1.5, FIRST_CID)}, r"dependencies/a: the weight 1.5 is outside \[0, 1\]"),
    ({"a": (float("nan"), FIRST_CID)}, r"dependencies/a/weight: nan"),
    ({"a": ("heavy", FIRST_CID)}, r"the weight must be a number"),
    ({"a": (0.5, "bafy-nope")}, r"dependencies/a: not a CID"),
    ({"a": (0.5, "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG")}, r"not a CIDv1"),
    ({"": (0.5, FIRST_CID)}, r"non-empty string"),
    ({"a": FIRST_CID}, r"expected \(weight, CID\)"),
])
def test_bad_dependencies_are_refused(dependencies, message):
    with pytest.raises(NodeError, match=message):
        node_build(kind="k", data={}, dependencies=dependencies)


def test_equal_values_give_one_cid():
    # an int timestamp or weight is the float it equals; a CID in another multibase is the same link
    as_int = node_build(kind="k", data={}, dependencies={"a": (1, FIRST_CID)}, timestamp=1683554160)
    as_float = node_build(kind="k", data={}, dependencies={"a": (1.0, FIRST_CID)}, timestamp=1683554160.0)
    base58 = CID.decode(FIRST_CID).encode("base58btc")
    other_base = node_build(kind="k", data={}, dependencies={"a": (1.0, base58)}, timestamp=1683554160.0)
    assert node_cid(as_int) == node_cid(as_float) == node_cid(other_base)
    assert other_base.dependencies["a"].cid == FIRST_CID
    # dict order never matters: DAG-CBOR sorts the keys
    assert node_cid(node_build(kind="k", data={"b": 1, "a": 2, "aa": 3})) == \
        node_cid(node_build(kind="k", data={"aa": 3, "a": 2, "b": 1}))


def test_block_cid_is_sha256_of_the_bytes():
    block = node_encode(first_page())
    assert CID.decode(block_cid(block)).digest == multihash.wrap(hashlib.sha256(block).digest(), "sha2-256")
    assert block_cid(b"hello", codec=0x55) == str(CID("base32", 1, "raw", multihash.digest(b"hello", "sha2-256")))
