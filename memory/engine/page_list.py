"""A segment's pages as a Merkle tree of fixed-size chunk nodes, so that a page joining a segment
re-addresses one leaf and the right spine, not a block that lists every page.

The segment's block has one dependency for its pages, `"pages": (1.0, root)`. Each chunk is a
memory node of kind "page_list" with no dependencies of its own:

    data  {"height": h, "entries": [[weight, link], ...]}     at most FANOUT entries

At height 0 the entries are the pages, in the order they joined (the segment's "contains" edges
by id) with their edges' weights; at height h > 0 they are the chunks of height h - 1, weight
1.0. Chunks are filled left to right: leaf i holds entries FANOUT*i .. FANOUT*i + FANOUT - 1 and
node i of height h holds the nodes FANOUT*i .. of height h - 1, up to a single root, so the
tree is a function of the ordered entries alone. Appending re-addresses the last node of each
height: ceil(log_FANOUT(n)) + 1 chunks. A segment with no pages has no "pages" dependency.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from memory.engine.content_ids import ContentBlock, content_block
from memory.engine.ipld import Link, node_decode

FANOUT = 32
KIND = "page_list"
PAGES = "pages"  # the segment's dependency on its tree's root
CONTAINS = "contains"  # a segment's edge to a page it holds: an entry of its tree, not a dependency

Entry = tuple[float, str]  # (weight, CID)


class PageTree(NamedTuple):
    """The chunks made from the first changed leaf on: {(height, index): block}; how many nodes
    each height has now; the root's CID ("" when there are no entries)."""

    chunks: dict[tuple[int, int], ContentBlock]
    widths: tuple[int, ...]
    root: str


class TreeError(ValueError):
    """Stored chunks that do not fit the entries given (the tree must be built again)."""


def chunk_block(*, height: int, entries: Sequence[Entry]) -> ContentBlock:
    """One chunk node's block and CID."""
    return content_block(kind=KIND, data={"height": height,
                                          "entries": [[float(weight), Link(cid)] for weight, cid in entries]})


def chunk_entries(block: bytes) -> tuple[int, list[Entry]]:
    """(height, entries) of a chunk's block; ValueError when it is not one."""
    node = node_decode(block)
    data = node.data
    if node.kind != KIND or not isinstance(data, dict) or set(data) != {"height", "entries"} \
            or type(data["height"]) is not int or not isinstance(data["entries"], list):
        raise TreeError(f"not a {KIND} chunk: a {node.kind!r} node")
    entries = []
    for entry in data["entries"]:
        if not (isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is float and isinstance(entry[1], Link)):
            raise TreeError(f"a {KIND} entry is [weight, link], not {entry!r:.80}")
        entries.append((entry[0], entry[1].cid))
    if not 0 < len(entries) <= FANOUT:
        raise TreeError(f"a {KIND} chunk holds 1 to {FANOUT} entries, not {len(entries)}")
    return data["height"], entries


def tree_build(entries: Sequence[Entry]) -> PageTree:
    """The whole tree of these entries."""
    return tree_grow(first_leaf=0, tail=entries, prefixes={})


def tree_grow(*, first_leaf: int, tail: Sequence[Entry], prefixes: Mapping[int, Sequence[Entry]]) -> PageTree:
    """The tree again from leaf `first_leaf` on: `tail` is every entry from that leaf's first one to
    the last; `prefixes[h]` the entries of the stored node of height h that holds the first changed
    node of height h - 1 (those before it are kept). Nodes before the changed ones keep their CIDs."""
    chunks: dict[tuple[int, int], ContentBlock] = {}
    widths: list[int] = []
    level, start, height = list(tail), first_leaf, 0
    if not level and start == 0:
        return PageTree(chunks, (), "")
    while True:
        made = [chunk_block(height=height, entries=level[at:at + FANOUT]) for at in range(0, len(level), FANOUT)]
        for offset, block in enumerate(made):
            chunks[(height, start + offset)] = block
        widths.append(start + len(made))
        if widths[-1] == 1:
            return PageTree(chunks, tuple(widths), made[0].cid)
        parent = start // FANOUT
        kept = start - parent * FANOUT
        prefix = list(prefixes.get(height + 1, ()))[:kept]
        if len(prefix) != kept:
            raise TreeError(f"height {height + 1}: {len(prefix)} stored entries before the change, {kept} needed")
        level, start, height = prefix + [(1.0, block.cid) for block in made], parent, height + 1


def tree_entries(root: str, block_of: Callable[[str], bytes | None]) -> list[Entry]:
    """The leaves' entries, in order, of the tree under `root` (an archive's); TreeError when a
    chunk is missing or not one, or the heights do not step down by one."""
    entries: list[Entry] = []
    stack: list[tuple[str, int | None]] = [(root, None)]
    while stack:
        cid, expected = stack.pop()
        block = block_of(cid)
        if block is None:
            raise TreeError(f"chunk {cid} is missing")
        height, found = chunk_entries(block)
        if expected is not None and height != expected:
            raise TreeError(f"chunk {cid} has height {height}, its parent says {expected}")
        if height == 0:
            entries.extend(found)
        else:
            stack.extend((child, height - 1) for _weight, child in reversed(found))
    return entries


def with_page_tree(edges: Sequence[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
    """A segment's (relation, weight, target CID) edges, in the order they were made, as its block
    names them: the "contains" ones replaced by the root of their tree (a from-scratch check)."""
    root = tree_build([(weight, cid) for relation, weight, cid in edges if relation == CONTAINS]).root
    return [edge for edge in edges if edge[0] != CONTAINS] + ([(PAGES, 1.0, root)] if root else [])


def bound(count: int) -> int:
    """The most chunks an append to a tree of `count` entries re-addresses (one a height)."""
    height = 1
    while FANOUT ** height < count + 1:
        height += 1
    return height
