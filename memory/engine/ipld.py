"""Memoria's memory node as an IPLD block: DAG-CBOR bytes addressed by a CIDv1.

A node is `{timestamp?, kind, data, dependencies: {name: (weight, CID)}}` (the seed's `Memory`).
Its block is the DAG-CBOR encoding (codec 0x71) of this IPLD schema:

    type Memory struct {
      timestamp optional Float       # seconds since 1970-01-01 UTC; the key is absent when unknown
      kind String
      data Any
      dependencies {String: Dependency}
    }
    type Dependency struct {
      weight Float                   # 0 <= weight <= 1, always a float (1 is written 1.0)
      target Link                    # CBOR tag 42, a binary CIDv1
    } representation tuple           # i.e. the list [weight, link]

and its id is the CIDv1 of that block: sha2-256 multihash, written in base32 lower case ("bafyrei...").
A dependency is a list rather than a map because the seed's dependency is a tuple and IPLD's tuple
representation is how a schema says "positional"; any DAG-CBOR decoder reads it as a float and a link.
Map keys are in DAG-CBOR's canonical order (shorter first, then bytewise), floats are 64-bit, and
NaN, infinities and `undefined` never occur, so one node has one encoding and one CID.

Python values in `data` map to the IPLD data model as follows (anything else is refused):

    None, bool, str           null, true/false, text (valid UTF-8 only)
    int                       integer, -2**64 .. 2**64 - 1
    float                     64-bit float, finite only; -0.0 is written 0.0
    bytes, bytearray          bytes, unless libipld would read them as a link (see below)
    Link                      a link (tag 42): how a node points at a file or node without an edge weight
    list, tuple               list (a tuple comes back as a list)
    dict with str keys        map
    aware datetime            text, RFC 3339 in UTC: "2023-05-08T13:56:00Z" (microseconds only when set)
    date                      text, "2023-05-08"

The encoder is libipld (Rust, maintained for the AT Protocol SDK). It has no CID type: it writes any
`bytes` that begin like a binary CID as a link, and reads links back as bytes. So plain bytes that
libipld would take for a link are refused here (put such a payload in a file and `Link` to it), and
on decoding every link-shaped byte string is a `Link`. Decoding then re-encodes the node and demands
the same bytes, which also refuses what libipld's reader lets through but is not canonical DAG-CBOR
(32-bit floats, integers in more bytes than needed).

JavaScript implementations (@ipld/dag-cbor) read these blocks and their CIDs check out, but having
one number type they decode an integral float (weight 1.0, a whole-second timestamp) as an integer
and would re-encode it as one: a node rebuilt in JS from decoded values need not keep its CID.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, NamedTuple

import libipld

CODEC_DAG_CBOR = 0x71
CODEC_RAW = 0x55  # files: a block of plain bytes
SHA2_256 = 0x12
NODE_KEYS = frozenset({"timestamp", "kind", "data", "dependencies"})
REQUIRED_KEYS = frozenset({"kind", "data", "dependencies"})
_LINK_TAG = b"\xd8\x2a"  # CBOR tag 42 as libipld writes it
NOT_CANONICAL = ("not canonical DAG-CBOR (re-encoding the node gives other bytes: a 32-bit float, "
                 "a long-form integer, or plain bytes that look like a link)")


class NodeError(ValueError):
    """A value that cannot be (part of) a memory node; the message names where."""


class BlockError(ValueError):
    """A block that does not match its CID or is not a memory node."""

    def __init__(self, cid: str, reason: str) -> None:
        super().__init__(f"block {cid}: {reason}")
        self.cid = cid
        self.reason = reason


class CidParts(NamedTuple):
    version: int
    codec: int
    hash_code: int
    digest: bytes


@dataclass(frozen=True)
class Link:
    """A link to another block, by CID (kept in canonical base32 form)."""

    cid: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "cid", cid_normalise(self.cid))


class Dependency(NamedTuple):
    """The seed's `(weight, CID)`: how much of a recall budget flows to `cid`."""

    weight: float
    cid: str


@dataclass(frozen=True)
class MemoryNode:
    kind: str
    data: Any
    dependencies: Mapping[str, Dependency] = field(default_factory=dict)
    timestamp: float | None = None


# ------------------------------------------------------------------ CIDs

def varint_encode(value: int) -> bytes:
    """Unsigned LEB128, as multiformats and CAR use it."""
    if value < 0:
        raise ValueError(f"varint of a negative number: {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def cid_parse(cid: str | bytes) -> CidParts:
    """The parts of a CID (string in any multibase, or binary). NodeError when it is not one."""
    try:
        parts = libipld.decode_cid(cid)
    except ValueError as error:
        raise NodeError(f"not a CID: {cid!r} ({error})") from None
    return CidParts(parts["version"], parts["codec"], parts["hash"]["code"], parts["hash"]["digest"])


def cid_from_parts(parts: CidParts) -> bytes:
    """The binary form of a CIDv1."""
    return (varint_encode(parts.version) + varint_encode(parts.codec) + varint_encode(parts.hash_code)
            + varint_encode(len(parts.digest)) + parts.digest)


def cid_bytes(cid: str) -> bytes:
    """Binary CIDv1 of a CID string; CIDv0 ("Qm...") is refused: every Memoria id is a CIDv1."""
    return _cid_bytes_of_text(cid) if isinstance(cid, str) else _cid_bytes(cid)


def _cid_bytes(cid: str) -> bytes:
    parts = cid_parse(cid)
    if parts.version != 1:
        raise NodeError(f"not a CIDv1: {cid!r} (version {parts.version})")
    return cid_from_parts(parts)


# A segment's block lists every page it holds: re-addressing it after one page joined converted the
# same few hundred CIDs again (a third of a write's own work on a 100,000-page store). A CID's
# binary and canonical forms are functions of its text, so they are remembered (a refused one is
# not: the error is raised again).
_cid_bytes_of_text = functools.lru_cache(maxsize=1 << 16)(_cid_bytes)


def cid_string(raw: bytes) -> str:
    """Base32 string of a binary CIDv1."""
    try:
        return libipld.encode_cid(raw)
    except ValueError as error:
        raise NodeError(f"not a binary CID: {raw.hex()} ({error})") from None


def cid_normalise(cid: str) -> str:
    """The canonical base32 string of a CIDv1 given in any multibase."""
    if not isinstance(cid, str):
        raise NodeError(f"a CID must be a string, not {type(cid).__name__}: {cid!r}")
    return _normalised(cid)


@functools.lru_cache(maxsize=1 << 16)
def _normalised(cid: str) -> str:
    return cid_string(cid_bytes(cid))


def block_cid(block: bytes, *, codec: int = CODEC_DAG_CBOR) -> str:
    """CIDv1 (sha2-256) of a block's bytes."""
    return cid_string(cid_from_parts(CidParts(1, codec, SHA2_256, hashlib.sha256(block).digest())))


def block_verify(*, cid: str, block: bytes) -> CidParts:
    """Check that `block` is the content `cid` names (sha2-256 CIDv1, any codec); BlockError otherwise."""
    try:
        parts = cid_parse(cid)
    except NodeError as error:
        raise BlockError(str(cid), str(error)) from None
    if parts.version != 1:
        raise BlockError(cid, f"CID version {parts.version}; Memoria blocks are CIDv1")
    if parts.hash_code != SHA2_256:
        raise BlockError(cid, f"multihash 0x{parts.hash_code:x} cannot be checked; Memoria uses sha2-256 (0x12)")
    actual = hashlib.sha256(block).digest()
    if actual != parts.digest:
        raise BlockError(cid, f"content does not match: sha2-256 of the {len(block)} bytes is {actual.hex()}, "
                              f"the CID says {parts.digest.hex()}")
    return parts


# ------------------------------------------------------------------ Python values -> IPLD

def _reads_as_link(raw: bytes) -> bool:
    return libipld.encode_dag_cbor(raw)[:2] == _LINK_TAG


def _float(value: float, path: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise NodeError(f"{path}: {number} is not allowed in DAG-CBOR (finite floats only)")
    return number + 0.0  # -0.0 + 0.0 == 0.0: DAG-CBOR has no negative zero


def _text(value: str, path: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise NodeError(f"{path}: text is not valid UTF-8 (a lone surrogate)") from None
    return str(value)


def _datetime_text(value: datetime, path: str) -> str:
    if value.tzinfo is None or value.utcoffset() is None:
        raise NodeError(f"{path}: a naive datetime has no defined instant; give it a timezone")
    utc = value.astimezone(UTC)
    spec = "seconds" if utc.microsecond == 0 else "microseconds"
    return utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def dag_value(value: Any, path: str = "data") -> Any:
    """`value` as the Python form of its IPLD value (the table in the module docstring)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -(2**64) <= value < 2**64:
            raise NodeError(f"{path}: integer {value} is outside DAG-CBOR's 64-bit range")
        return int(value)
    if isinstance(value, float):
        return _float(value, path)
    if isinstance(value, str):
        return _text(value, path)
    if isinstance(value, Link):
        return cid_bytes(value.cid)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if _reads_as_link(raw):
            raise NodeError(f"{path}: these bytes begin like a binary CID and would be read as a link; "
                            "store the payload as a file and Link to it")
        return raw
    if isinstance(value, datetime):
        return _datetime_text(value, path)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [dag_value(item, f"{path}/{index}") for index, item in enumerate(value)]
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise NodeError(f"{path}: map key {key!r} is not a string (DAG-CBOR keys are text)")
        return {_text(key, f"{path}/{key}"): dag_value(item, f"{path}/{key}") for key, item in value.items()}
    raise NodeError(f"{path}: {type(value).__name__} has no DAG-CBOR form")


def python_value(value: Any) -> Any:
    """The inverse of `dag_value` on decoded data: link-shaped bytes become `Link`s."""
    if isinstance(value, bytes):
        return Link(cid_string(value)) if _reads_as_link(value) else value
    if isinstance(value, list):
        return [python_value(item) for item in value]
    if isinstance(value, dict):
        return {key: python_value(item) for key, item in value.items()}
    return value


# ------------------------------------------------------------------ nodes

def _timestamp(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise NodeError("timestamp: a naive datetime has no defined instant; give it a timezone")
        return _float(value.timestamp(), "timestamp")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NodeError(f"timestamp: expected seconds since the epoch or a datetime, not {type(value).__name__}")
    return _float(value, "timestamp")


def _dependency(name: Any, value: Any) -> Dependency:
    path = f"dependencies/{name}"
    if not isinstance(name, str) or not name:
        raise NodeError(f"dependencies: a dependency's name must be a non-empty string, not {name!r}")
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise NodeError(f"{path}: expected (weight, CID), got {value!r}")
    weight, target = value
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise NodeError(f"{path}: the weight must be a number, not {weight!r}")
    weight = _float(weight, f"{path}/weight")
    if not 0.0 <= weight <= 1.0:
        raise NodeError(f"{path}: the weight {weight} is outside [0, 1]")
    cid = target.cid if isinstance(target, Link) else target
    try:
        return Dependency(weight, cid_normalise(cid))
    except NodeError as error:
        raise NodeError(f"{path}: {error}") from None


def _wire(node: MemoryNode) -> dict[str, Any]:
    """The node as libipld encodes it (links as binary CIDs), checked on the way."""
    if not isinstance(node.kind, str) or not node.kind:
        raise NodeError(f"kind: a node's kind must be a non-empty string, not {node.kind!r}")
    if not isinstance(node.dependencies, Mapping):
        raise NodeError(f"dependencies: expected a mapping of name -> (weight, CID), not {node.dependencies!r}")
    dependencies = _dependencies_wire(node.dependencies)
    wire = {"kind": _text(node.kind, "kind"), "data": dag_value(node.data), "dependencies": dependencies}
    timestamp = _timestamp(node.timestamp)
    if timestamp is not None:
        wire["timestamp"] = timestamp
    return wire


def node_build(*, kind: str, data: Any, dependencies: Mapping[str, Any] | None = None,
               timestamp: datetime | float | None = None) -> MemoryNode:
    """A node with every value in its canonical form (what decoding its block gives back).

    `dependencies` maps a name to `(weight, cid)` (a `Dependency`, a tuple, or a `Link` as the cid)."""
    wire = _wire(MemoryNode(kind=kind, data=data, dependencies=dependencies or {}, timestamp=timestamp))
    return _from_wire(wire)


def node_encode(node: MemoryNode) -> bytes:
    """The node's DAG-CBOR block."""
    wire = _wire(node)
    try:
        return libipld.encode_dag_cbor(wire)
    except ValueError as error:  # the checks above should leave nothing for libipld to refuse
        raise NodeError(f"libipld refused the node: {error}") from None


def node_cid(node: MemoryNode) -> str:
    """The node's content id."""
    return block_cid(node_encode(node))


def _from_wire(wire: Any) -> MemoryNode:
    if not isinstance(wire, dict):
        raise NodeError(f"a memory node is a map, not {type(wire).__name__}")
    keys = set(wire)
    if keys - NODE_KEYS or REQUIRED_KEYS - keys:
        raise NodeError(f"a memory node has the keys {sorted(REQUIRED_KEYS)} and optionally 'timestamp'; "
                        f"this one has {sorted(keys)}")
    kind, timestamp, dependencies = wire["kind"], wire.get("timestamp"), wire["dependencies"]
    if not isinstance(kind, str):
        raise NodeError(f"kind: expected text, found {type(kind).__name__}")
    if timestamp is not None and type(timestamp) is not float:
        raise NodeError(f"timestamp: expected a float, found {type(timestamp).__name__}")
    if not isinstance(dependencies, dict):
        raise NodeError(f"dependencies: expected a map, found {type(dependencies).__name__}")
    parsed = {}
    for name, value in dependencies.items():
        if not (isinstance(value, list) and len(value) == 2 and type(value[0]) is float
                and isinstance(value[1], bytes) and _reads_as_link(value[1])):
            raise NodeError(f"dependencies/{name}: expected [float weight, link], found {value!r}")
        parsed[name] = Dependency(value[0], cid_string(value[1]))
    return MemoryNode(kind=kind, data=python_value(wire["data"]), dependencies=parsed, timestamp=timestamp)


def node_decode(block: bytes) -> MemoryNode:
    """The node a block holds; NodeError when it is not canonical DAG-CBOR of a memory node."""
    try:
        wire = libipld.decode_dag_cbor(block)
    except (ValueError, RecursionError) as error:
        raise NodeError(f"not DAG-CBOR: {error}") from None
    node = _from_wire(wire)
    if node_encode(node) != bytes(block):
        raise NodeError(NOT_CANONICAL)
    return node


def node_with_dependencies(block: bytes, dependencies: Mapping[str, Any]) -> bytes:
    """The block of the node `block` holds (its kind, data, timestamp) with other dependencies:
    node_encode's bytes for that node, without turning the old block's dependencies into Python
    values and back (a segment's block lists every page it holds, and all of them are replaced).

    The block is checked as node_decode checks it, but for the shape of each old dependency (it
    is not kept): canonical DAG-CBOR, and the node without its dependencies a memory node."""
    try:
        wire = libipld.decode_dag_cbor(block)
    except (ValueError, RecursionError) as error:
        raise NodeError(f"not DAG-CBOR: {error}") from None
    if not isinstance(wire, dict) or not isinstance(wire.get("dependencies"), dict):
        return node_encode(node_decode(block))  # not a node: node_decode says why
    if libipld.encode_dag_cbor(wire) != bytes(block):
        node_decode(block)  # names what is wrong
        raise NodeError(NOT_CANONICAL)
    wire["dependencies"] = {}
    if node_encode(_from_wire(wire)) != libipld.encode_dag_cbor(wire):
        raise NodeError(NOT_CANONICAL)
    wire["dependencies"] = _dependencies_wire(dependencies)
    return libipld.encode_dag_cbor(wire)


def _dependencies_wire(dependencies: Mapping[str, Any]) -> dict[str, list]:
    """`_wire`'s dependencies: (weight, CID) pairs of a float in [0, 1] and a CID string under a
    plain name (what content_ids names edges) taken as they are, anything else checked."""
    wire = {}
    for name, value in dependencies.items():
        if ((type(value) is Dependency or type(value) is tuple) and len(value) == 2 and type(value[0]) is float
                and 0.0 <= value[0] <= 1.0 and type(name) is str and name and name.isascii()
                and type(value[1]) is str):
            try:
                wire[name] = [value[0] + 0.0, cid_bytes(value[1])]
                continue
            except NodeError:
                pass  # raised again below, with the dependency's name
        dependency = _dependency(name, value)
        wire[_text(name, f"dependencies/{name}")] = [dependency.weight, cid_bytes(dependency.cid)]
    return wire


def node_verify(*, cid: str, block: bytes) -> MemoryNode:
    """The node of a block checked against its CID; BlockError names what is wrong."""
    parts = block_verify(cid=cid, block=block)
    if parts.codec != CODEC_DAG_CBOR:
        raise BlockError(cid, f"codec 0x{parts.codec:x} is not DAG-CBOR (0x71): not a memory node")
    try:
        node = node_decode(block)
    except NodeError as error:
        raise BlockError(cid, str(error)) from None
    return node
