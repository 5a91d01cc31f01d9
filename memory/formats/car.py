"""CARv1 archives: IPLD's Content Addressable aRchive, the portable form of a set of Memoria blocks.

An archive is a header and then one section per block (ipld.io/specs/transport/car/carv1):

    varint(len(header)) header              header = DAG-CBOR {"roots": [link, ...], "version": 1}
    varint(len(cid) + len(block)) cid block  cid = the block's binary CIDv1, block = its bytes

varints are unsigned LEB128. Any IPLD tool reads such a file (`ipfs dag import`, go-car, @ipld/car,
libipld.decode_car); the tests read ours with two independent decoders, libipld's and ipld-car's.

Written here rather than by a library: libipld only reads CAR, and ipld-car (the one Python writer,
0.0.1: a single release, its own dependencies undeclared) verifies nothing and builds the whole
archive in memory. The format is small; what matters is the checking around it:

- Writing checks every block against its CID before writing it, and that every root is among the
  blocks, so that an archive we write is one we (and anyone) can read back.
- Reading checks every block's sha2-256 against its CID and stops at the first that does not match
  with a CarError naming it: its CID, its place (block #n, counting from 1) and the byte offset of its
  section. Truncated sections, malformed varints and CIDs, a section longer than `max_section_bytes`
  (so a damaged length cannot make us allocate gigabytes), a header that is not {version: 1, roots}
  and, unless `require_roots=False`, roots missing from the blocks are refused the same way. Nothing
  of an archive is returned unless all of it is good.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import libipld

from memory.engine.ipld import BlockError, NodeError, block_verify, cid_bytes, cid_normalise, cid_string, varint_encode

MAX_SECTION_BYTES = 64 * 1024 * 1024
_MAX_VARINT_BYTES = 9  # multiformats' unsigned varints stop at 63 bits


class CarError(ValueError):
    """An archive that cannot be written or read; `block`/`cid`/`offset` say where when it is a block."""

    def __init__(self, message: str, *, block: int | None = None, cid: str | None = None,
                 offset: int | None = None) -> None:
        super().__init__(message)
        self.block = block
        self.cid = cid
        self.offset = offset


@dataclass(frozen=True)
class CarArchive:
    roots: tuple[str, ...]
    blocks: Mapping[str, bytes]  # by CID, in the order of the archive (a repeated block kept once)


def _header(roots: Sequence[str]) -> bytes:
    if not roots:
        raise CarError("a CARv1 archive needs at least one root")
    try:
        links = [cid_bytes(root) for root in roots]
    except NodeError as error:
        raise CarError(f"root: {error}") from None
    return libipld.encode_dag_cbor({"version": 1, "roots": links})


def car_write(*, out: BinaryIO, roots: Sequence[str], blocks: Iterable[tuple[str, bytes]]) -> int:
    """Write an archive of `blocks` ((CID, bytes) pairs, in that order) to `out`; the bytes written.

    CarError when a block does not match its CID or a root is not among the blocks: what was written
    to `out` by then is not an archive and must be thrown away (car_encode does that for you)."""
    header = _header(roots)
    written = out.write(varint_encode(len(header)) + header)
    seen: set[str] = set()
    for index, (cid, data) in enumerate(blocks, start=1):
        try:
            block_verify(cid=cid, block=data)
        except BlockError as error:
            raise CarError(f"block #{index} cannot be written: {error}", block=index, cid=cid) from None
        raw = cid_bytes(cid)
        written += out.write(varint_encode(len(raw) + len(data)) + raw + bytes(data))
        seen.add(cid_normalise(cid))
    missing = [root for root in roots if cid_normalise(root) not in seen]
    if missing:
        raise CarError(f"root {missing[0]} is not among the archive's blocks", cid=missing[0])
    return written


def car_encode(*, roots: Sequence[str], blocks: Iterable[tuple[str, bytes]]) -> bytes:
    """The archive as bytes (car_write into memory)."""
    buffer = io.BytesIO()
    car_write(out=buffer, roots=roots, blocks=blocks)
    return buffer.getvalue()


# ------------------------------------------------------------------ reading

def _read_varint(source: BinaryIO, what: str, offset: int) -> tuple[int, int] | None:
    """(value, bytes used) of the varint at the reader's position; None at a clean end of the stream."""
    value = 0
    for used in range(_MAX_VARINT_BYTES):
        byte = source.read(1)
        if not byte:
            if used == 0:
                return None
            raise CarError(f"{what} at byte {offset}: the archive ends inside a varint", offset=offset)
        value |= (byte[0] & 0x7F) << (7 * used)
        if not byte[0] & 0x80:
            if byte[0] == 0 and used > 0:
                raise CarError(f"{what} at byte {offset}: a varint in more bytes than needed", offset=offset)
            return value, used + 1
    raise CarError(f"{what} at byte {offset}: a varint longer than {_MAX_VARINT_BYTES} bytes", offset=offset)


def _varint_at(data: bytes, position: int) -> tuple[int, int]:
    """(value, next position) of a varint inside a section; ValueError when it does not fit."""
    value = 0
    for used in range(_MAX_VARINT_BYTES):
        if position + used >= len(data):
            raise ValueError("the section ends inside its CID")
        byte = data[position + used]
        value |= (byte & 0x7F) << (7 * used)
        if not byte & 0x80:
            return value, position + used + 1
    raise ValueError("a varint in the CID is too long")


def _split_cid(section: bytes) -> tuple[bytes, bytes]:
    """The binary CID at the start of a section, and the block after it."""
    if section[:2] == b"\x12\x20":  # a CIDv0 is a bare sha2-256 multihash
        end = 34
    else:
        position = 0
        for _ in range(3):  # version, codec, multihash code
            _, position = _varint_at(section, position)
        size, position = _varint_at(section, position)
        end = position + size
    if end > len(section):
        raise ValueError("the section ends inside its CID")
    return section[:end], section[end:]


def _read_exactly(source: BinaryIO, length: int, what: str, offset: int) -> bytes:
    data = source.read(length)
    if len(data) != length:
        raise CarError(f"{what} at byte {offset}: the archive ends after {len(data)} of its {length} bytes "
                       "(truncated)", offset=offset)
    return data


def _read_header(source: BinaryIO, max_section_bytes: int) -> tuple[tuple[str, ...], int]:
    """The roots, and the offset of the first section."""
    prefix = _read_varint(source, "the header", 0)
    if prefix is None:
        raise CarError("an empty file is not a CAR archive", offset=0)
    length, used = prefix
    if not 0 < length <= max_section_bytes:
        raise CarError(f"the header claims {length} bytes", offset=0)
    raw = _read_exactly(source, length, "the header", 0)
    try:
        header = libipld.decode_dag_cbor(raw)
    except ValueError as error:
        raise CarError(f"the header is not DAG-CBOR: {error}", offset=0) from None
    if not isinstance(header, dict) or set(header) != {"version", "roots"}:
        raise CarError(f"the header must be {{version, roots}}, not {header!r:.200}", offset=0)
    if header["version"] != 1:
        raise CarError(f"CAR version {header['version']!r}: only CARv1 is read", offset=0)
    roots = header["roots"]
    if not isinstance(roots, list) or not roots or libipld.encode_dag_cbor(header) != raw:
        raise CarError("the header's roots must be a non-empty list of links in canonical DAG-CBOR", offset=0)
    try:
        return tuple(cid_string(root) for root in roots), used + length
    except NodeError as error:
        raise CarError(f"the header's roots: {error}", offset=0) from None


def _sections(source: BinaryIO, offset: int, max_section_bytes: int) -> Iterator[tuple[int, int, str, bytes]]:
    """(block number, offset, CID, bytes) of each section, every block checked against its CID."""
    index = 0
    while True:
        index += 1
        what = f"block #{index}"
        prefix = _read_varint(source, what, offset)
        if prefix is None:
            return
        length, used = prefix
        if not 0 < length <= max_section_bytes:
            raise CarError(f"{what} at byte {offset}: its section claims {length} bytes "
                           f"(the limit is {max_section_bytes})", block=index, offset=offset)
        section = _read_exactly(source, length, what, offset)
        try:
            raw_cid, data = _split_cid(section)
            cid = cid_string(raw_cid)
        except (ValueError, NodeError) as error:
            raise CarError(f"{what} at byte {offset}: no valid CID ({error})", block=index, offset=offset) from None
        try:
            block_verify(cid=cid, block=data)
        except BlockError as error:
            raise CarError(f"{what} at byte {offset} is not what its CID names: {error}", block=index, cid=cid,
                           offset=offset) from None
        yield index, offset, cid, data
        offset += used + length


def car_read(source: BinaryIO, *, max_section_bytes: int = MAX_SECTION_BYTES,
             require_roots: bool = True) -> CarArchive:
    """Every block of an archive, each verified against its CID (module docstring); CarError otherwise."""
    roots, offset = _read_header(source, max_section_bytes)
    blocks: dict[str, bytes] = {}
    for _, _, cid, data in _sections(source, offset, max_section_bytes):
        blocks.setdefault(cid, data)
    missing = [root for root in roots if root not in blocks]
    if require_roots and missing:
        raise CarError(f"root {missing[0]} is not among the archive's {len(blocks)} blocks", cid=missing[0])
    return CarArchive(roots=roots, blocks=blocks)


def car_decode(data: bytes, *, max_section_bytes: int = MAX_SECTION_BYTES, require_roots: bool = True) -> CarArchive:
    """car_read over bytes in memory."""
    return car_read(io.BytesIO(data), max_section_bytes=max_section_bytes, require_roots=require_roots)
