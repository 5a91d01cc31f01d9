"""CARv1 archives of Memoria blocks: round trips, refusal of damaged archives naming the block, and
archives read by (and from) independent implementations: libipld's decoder and ipld-car."""

from __future__ import annotations

import ipld_car
import libipld
import pytest
from multiformats import CID

from memory.engine.ipld import CODEC_RAW, block_cid, cid_bytes, node_build, node_cid, node_encode, node_verify
from memory.formats.car import CarError, car_decode, car_encode, car_read, car_write


def three_nodes():
    first = node_build(kind="page", data={"query": "I adopted a puppy.", "response": "Lovely!"}, timestamp=1.0e9)
    second = node_build(kind="page", data={"query": "Her name is Biscuit.", "response": "Cute name."},
                        timestamp=1.0e9 + 60, dependencies={"previous": (1.0, node_cid(first))})
    segment = node_build(kind="segment", data={"summary": "Ana's puppy Biscuit"},
                         dependencies={"page-1": (0.5, node_cid(first)), "page-2": (0.5, node_cid(second))})
    return [first, second, segment]


def blocks_of(nodes):
    return [(node_cid(node), node_encode(node)) for node in nodes]


def section_offsets(archive: bytes) -> list[int]:
    """Where each section starts, found by walking the varints independently of the reader."""
    def varint(position):
        value = shift = 0
        while True:
            byte = archive[position]
            value |= (byte & 0x7F) << shift
            position += 1
            shift += 7
            if not byte & 0x80:
                return value, position
    length, position = varint(0)
    offsets, position = [], position + length
    while position < len(archive):
        offsets.append(position)
        length, after = varint(position)
        position = after + length
    return offsets


def test_round_trip():
    nodes = three_nodes()
    blocks = blocks_of(nodes)
    archive = car_decode(car_encode(roots=[blocks[-1][0]], blocks=blocks))
    assert archive.roots == (blocks[-1][0],)
    assert list(archive.blocks.items()) == blocks
    assert [node_verify(cid=cid, block=data) for cid, data in archive.blocks.items()] == nodes


def test_a_file_block_travels_as_a_raw_block(tmp_path):
    picture = bytes(range(256)) * 10
    picture_cid = block_cid(picture, codec=CODEC_RAW)
    note = node_build(kind="file", data={"name": "biscuit.png"}, dependencies={"content": (1.0, picture_cid)})
    path = tmp_path / "memory.car"
    with path.open("wb") as out:
        written = car_write(out=out, roots=[node_cid(note)], blocks=[(picture_cid, picture), *blocks_of([note])])
    assert written == path.stat().st_size
    with path.open("rb") as source:
        archive = car_read(source)
    assert archive.blocks[picture_cid] == picture
    assert node_verify(cid=node_cid(note), block=archive.blocks[node_cid(note)]) == note


def test_libipld_reads_our_archive():
    blocks = blocks_of(three_nodes())
    header, decoded = libipld.decode_car(car_encode(roots=[blocks[-1][0]], blocks=blocks))
    assert header == {"version": 1, "roots": [cid_bytes(blocks[-1][0])]}
    assert list(decoded) == [cid_bytes(cid) for cid, _ in blocks]
    assert decoded[cid_bytes(blocks[0][0])]["data"]["query"] == "I adopted a puppy."


def test_ipld_car_reads_our_archive_and_we_read_its():
    nodes = three_nodes()
    blocks = blocks_of(nodes) + [(block_cid(b"raw file", codec=CODEC_RAW), b"raw file")]
    roots, theirs = ipld_car.decode(car_encode(roots=[blocks[0][0], blocks[2][0]], blocks=blocks))
    assert [str(root.encode("base32")) for root in roots] == [blocks[0][0], blocks[2][0]]
    assert [(cid.encode("base32"), bytes(data)) for cid, data in theirs] == blocks
    # the other way: an archive ipld-car wrote (its header by dag-cbor) is read and verified by ours
    written = bytes(ipld_car.encode([CID.decode(blocks[2][0])], [(CID.decode(cid), data) for cid, data in blocks]))
    archive = car_decode(written)
    assert archive.roots == (blocks[2][0],)
    assert list(archive.blocks.items()) == blocks


def test_a_tampered_archive_is_refused_naming_the_first_bad_block():
    blocks = blocks_of(three_nodes())
    encoded = car_encode(roots=[blocks[-1][0]], blocks=blocks)
    offsets = section_offsets(encoded)
    # change a byte inside the second and the third block: the second is named
    tampered = bytearray(encoded)
    tampered[encoded.index(b"Biscuit.")] ^= 0x20
    tampered[encoded.index(b"Ana's puppy")] ^= 0x20
    with pytest.raises(CarError) as caught:
        car_decode(bytes(tampered))
    error = caught.value
    assert (error.block, error.cid, error.offset) == (2, blocks[1][0], offsets[1])
    assert f"block #2 at byte {offsets[1]}" in str(error) and blocks[1][0] in str(error)
    assert "content does not match" in str(error)


def test_a_block_under_another_blocks_cid_is_refused():
    blocks = blocks_of(three_nodes())
    swapped = [blocks[0], (blocks[1][0], blocks[2][1]), blocks[2]]
    raw = bytearray(car_encode(roots=[blocks[0][0]], blocks=[blocks[0]]))
    for cid, data in swapped[1:]:  # written by hand: car_write itself refuses such a pair
        section = cid_bytes(cid) + data
        raw += bytes([len(section)]) if len(section) < 0x80 else bytes([len(section) & 0x7F | 0x80, len(section) >> 7])
        raw += section
    with pytest.raises(CarError, match=rf"block #2 at byte \d+ is not what its CID names: block {blocks[1][0]}"):
        car_decode(bytes(raw))


def test_truncated_and_malformed_archives_are_refused():
    blocks = blocks_of(three_nodes())
    encoded = car_encode(roots=[blocks[0][0]], blocks=blocks)
    offsets = section_offsets(encoded)
    with pytest.raises(CarError, match=rf"block #3 at byte {offsets[2]}: the archive ends after \d+ of its"):
        car_decode(encoded[:-5])
    with pytest.raises(CarError, match="ends inside a varint"):
        car_decode(encoded[: offsets[1]] + b"\x80")
    with pytest.raises(CarError, match=r"block #2 .* claims 281474976710656 bytes \(the limit is"):
        car_decode(encoded[: offsets[1]] + b"\x80\x80\x80\x80\x80\x80\x40" + b"\x00" * 16)  # 2**48
    with pytest.raises(CarError, match="no valid CID"):
        car_decode(encoded[: offsets[1]] + b"\x03\x01\x71\x12")
    with pytest.raises(CarError, match="empty file"):
        car_decode(b"")


def test_bad_headers_are_refused():
    cid = blocks_of(three_nodes())[0][0]
    def with_header(header):
        raw = libipld.encode_dag_cbor(header)
        return bytes([len(raw)]) + raw
    with pytest.raises(CarError, match="only CARv1"):
        car_decode(with_header({"version": 2, "roots": [cid_bytes(cid)]}))
    with pytest.raises(CarError, match="non-empty list of links"):
        car_decode(with_header({"version": 1, "roots": []}))
    with pytest.raises(CarError, match=r"must be \{version, roots\}"):
        car_decode(with_header({"version": 1}))
    with pytest.raises(CarError, match="not DAG-CBOR"):
        car_decode(b"\x02\xff\xff")


def test_roots_must_be_in_the_archive_unless_allowed():
    blocks = blocks_of(three_nodes())
    partial = car_encode(roots=[blocks[0][0]], blocks=blocks[:1])
    header_only = partial[: section_offsets(partial)[0]]
    with pytest.raises(CarError, match=f"root {blocks[0][0]} is not among the archive's 0 blocks"):
        car_decode(header_only)
    assert car_decode(header_only, require_roots=False).roots == (blocks[0][0],)


def test_the_writer_refuses_what_it_could_not_read_back():
    blocks = blocks_of(three_nodes())
    with pytest.raises(CarError, match=rf"block #2 cannot be written: block {blocks[1][0]}: content does not match"):
        car_encode(roots=[blocks[0][0]], blocks=[blocks[0], (blocks[1][0], blocks[2][1])])
    with pytest.raises(CarError, match="is not among the archive's blocks"):
        car_encode(roots=[blocks[2][0]], blocks=blocks[:2])
    with pytest.raises(CarError, match="at least one root"):
        car_encode(roots=[], blocks=blocks)


def test_a_repeated_block_is_kept_once():
    blocks = blocks_of(three_nodes())
    archive = car_decode(car_encode(roots=[blocks[0][0]], blocks=[blocks[0], blocks[1], blocks[0]]))
    assert list(archive.blocks) == [blocks[0][0], blocks[1][0]]
