"""The page tree of a segment: grown a leaf at a time it is the tree built whole, and an append
re-addresses one chunk a height."""

from __future__ import annotations

import hashlib

import pytest

from memory.engine.ipld import block_cid
from memory.engine.page_list import FANOUT, TreeError, bound, chunk_entries, tree_build, tree_entries, tree_grow


def entries(count: int) -> list[tuple[float, str]]:
    return [(1.0, block_cid(hashlib.sha256(str(n).encode()).digest())) for n in range(count)]


def grown(tree, all_entries, count):
    """The tree after appending entry `count - 1` to a tree of count - 1 entries."""
    first_leaf = (count - 2) // FANOUT if count > 1 else 0
    prefixes = {}
    for height in range(1, len(tree.widths)):
        index = first_leaf // FANOUT ** height
        prefixes[height] = chunk_entries(tree.chunks[(height, index)].block)[1]
    return tree_grow(first_leaf=first_leaf, tail=all_entries[first_leaf * FANOUT:count], prefixes=prefixes)


@pytest.mark.parametrize("count", [1, 2, 32, 33, 64, 1024, 1025, 2000])
def test_an_append_is_the_tree_built_whole_and_touches_one_chunk_a_height(count):
    every = entries(count)
    before = tree_build(every[:count - 1])
    after = grown(before, every, count)
    whole = tree_build(every)
    assert after.root == whole.root and after.widths == whole.widths
    for key, block in after.chunks.items():
        assert whole.chunks[key] == block
    readdressed = [key for key, block in after.chunks.items() if before.chunks.get(key) != block]
    assert len(readdressed) <= bound(count - 1)  # a full last leaf is made again as it was


def test_the_entries_come_back_in_order_and_a_missing_chunk_is_named():
    every = entries(1500)
    tree = tree_build(every)
    blocks = {block.cid: block.block for block in tree.chunks.values()}
    assert tree_entries(tree.root, blocks.get) == every
    for cid, block in blocks.items():
        assert block_cid(block) == cid
    leaf = tree.chunks[(0, 3)].cid
    with pytest.raises(TreeError, match=leaf):
        tree_entries(tree.root, {c: b for c, b in blocks.items() if c != leaf}.get)


def test_no_pages_no_tree_and_stored_chunks_that_do_not_fit_are_refused():
    assert tree_build([]).root == ""
    with pytest.raises(TreeError):
        tree_grow(first_leaf=40, tail=entries(3), prefixes={})
