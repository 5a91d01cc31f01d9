"""Property-based (hypothesis): archives whose blocks all hash right but whose root holds anything at
all, and archives of arbitrary bytes, are imported or refused with a MemoryInputError; never another
exception, and a refused one writes nothing (the database, the file storage)."""

from __future__ import annotations

import io
from itertools import count

import pytest
from django.core.files.storage import storages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.engine.content_ids import content_block
from memory.engine.ipld import Link, node_verify
from memory.formats.car import car_decode, car_encode
from memory.models import AttachedFile, DialoguePage, LifecycleEvent, MemoryEdge, MemoryNode, Sona, SonaMembership
from memory.services.common import MemoryInputError
from memory.services.files import STORAGE, blob_path, file_upload
from memory.services.portable import ROOT_KIND, memory_export, memory_import
from memory.services.remember import memory_add
from persona.models import AgentTrait, KnowledgeFact, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")
# Modest: the suite runs twice in CI on two cores.
PROPERTY = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
ROOT_KEYS = ("records", "nodes", "aliases", "importance", "sonas", "version", "user", "exported_at")


@pytest.fixture
def source(make_user):
    alice = make_user("alice")
    memory_add(user=alice, text="I collect antique maps of Lisbon.", sona="friend")
    memory_add(user=alice, text="My sister Lena plays the cello.")
    report = file_upload(user=alice, name="report.txt", data=b"Revenue grew by 12 percent.")
    MemoryNode.objects.filter(user=alice, kind="page").update(importance=7.5, importance_ratings=2)
    out = io.BytesIO()
    memory_export(user=alice, out=out)
    storages[STORAGE].delete(blob_path(report.content_cid))  # as on another machine
    car = car_decode(out.getvalue())
    root = dict(node_verify(cid=car.roots[0], block=car.blocks[car.roots[0]]).data)
    blocks = {cid: block for cid, block in car.blocks.items() if cid != car.roots[0]}
    return out.getvalue(), root, blocks, report.content_cid, (f"user{n}" for n in count())


def values(links: list[Link]):
    """Any IPLD data model value, links to the archive's own blocks among them."""
    leaves = (st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1)
              | st.floats(allow_nan=False, allow_infinity=False)
              | st.text(max_size=40) | st.binary(max_size=16) | st.sampled_from(links)
              | st.sampled_from(["page", "segment", "fact", "<script>", "origin", "memoryos/page"]))
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)


def unchanged(user, content_cid: str) -> None:
    for model in (DialoguePage, AttachedFile, MemoryNode, MemoryEdge, Sona, SonaMembership, KnowledgeFact,
                  AgentTrait, UserTrait, LifecycleEvent):
        assert not model.objects.filter(user=user).exists(), model.__name__
    assert not storages[STORAGE].exists(blob_path(content_cid))


def import_or_refuse(make_user, names, archive: bytes, content_cid: str) -> None:
    user = make_user(next(names))
    try:
        memory_import(user=user, source=io.BytesIO(archive))
    except MemoryInputError:
        unchanged(user, content_cid)
    else:
        storages[STORAGE].delete(blob_path(content_cid))  # the next example starts without the bytes


def replaced(value, path: list[int], new):
    """`value` with the entry `path` leads to (keys in sorted order, list positions) replaced by `new`."""
    if not path:
        return new
    step, rest = path[0], path[1:]
    if isinstance(value, dict) and value:
        key = sorted(value)[step % len(value)]
        return {**value, key: replaced(value[key], rest, new)}
    if isinstance(value, list) and value:
        at = step % len(value)
        return [*value[:at], replaced(value[at], rest, new), *value[at + 1:]]
    return new


def test_a_root_with_anything_in_it_is_imported_or_refused_cleanly(make_user, source):
    _, root, blocks, content_cid, names = source
    links = [Link(cid) for cid in blocks]

    @PROPERTY
    @given(key=st.sampled_from(ROOT_KEYS), path=st.lists(st.integers(0, 7), max_size=3), data=st.data())
    def check(key, path, data):
        changed = {**root, key: replaced(root.get(key), path, data.draw(values(links)))}
        cid, block = content_block(kind=ROOT_KIND, data=changed)
        archive = car_encode(roots=[cid], blocks=[(cid, block), *blocks.items()])
        import_or_refuse(make_user, names, archive, content_cid)

    check()


def test_arbitrary_or_damaged_bytes_are_imported_or_refused_cleanly(make_user, source):
    archive, _, _, content_cid, names = source

    @PROPERTY
    @given(cut=st.integers(0, len(archive)), junk=st.binary(max_size=64), at=st.integers(0, len(archive)))
    def check(cut, junk, at):
        damaged = (archive[:at] + junk + archive[at:])[:cut] if junk else archive[:cut]
        if damaged != archive:
            import_or_refuse(make_user, names, damaged, content_cid)

    check()
