"""Archives whose every hash is right but whose content is wrong: each is refused with its reason and
nothing is written, in the database or the file storage; an import records where it came from, and
a memory that has something already is added to only when asked."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.storage import storages
from django.core.management import CommandError, call_command

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


def exported(user) -> bytes:
    out = io.BytesIO()
    memory_export(user=user, out=out)
    return out.getvalue()


@pytest.fixture
def archive(make_user) -> tuple[bytes, str]:
    """Alice's export (a sona, pages, a file, importance); her file's bytes are gone from this
    machine's storage, as on the machine the archive is imported into."""
    alice = make_user("alice")
    memory_add(user=alice, text="I collect antique maps of Lisbon.", sona="friend")
    memory_add(user=alice, text="My sister Lena plays the cello.")
    report = file_upload(user=alice, name="report.txt", data=b"Revenue grew by 12 percent.")
    MemoryNode.objects.filter(user=alice, kind="page").update(importance=7.5, importance_ratings=2)
    data = exported(alice)
    storages[STORAGE].delete(blob_path(report.content_cid))
    return data, report.content_cid


def rebuilt(data: bytes, change: Callable[[dict[str, Any], list, str], None], file_cid: str = "") -> bytes:
    """The archive with its root's data changed by `change(root data, extra blocks, the file's content
    id)`: every hash right."""
    car = car_decode(data)
    root_cid = car.roots[0]
    root = dict(node_verify(cid=root_cid, block=car.blocks[root_cid]).data)
    root["records"] = {name: list(links) for name, links in root["records"].items()}
    extra: list = []
    change(root, extra, file_cid)
    cid, block = content_block(kind=ROOT_KIND, data=root)
    return car_encode(roots=[cid], blocks=[(cid, block), *extra,
                                           *((c, b) for c, b in car.blocks.items() if c != root_cid)])


def record(data: bytes, name: str, number: int = 0) -> dict[str, Any]:
    car = car_decode(data)
    root = node_verify(cid=car.roots[0], block=car.blocks[car.roots[0]]).data
    link = root["records"][name][number]
    return dict(node_verify(cid=link.cid, block=car.blocks[link.cid]).data)


def with_record(name: str, /, **fields) -> Callable[[dict, list, str], None]:
    """A change that replaces the first `name` record by one with `fields` changed."""

    def change(root: dict, extra: list, file_cid: str) -> None:
        data = {**change.original, **fields}
        cid, block = content_block(kind=f"memoryos/{name}", data=data)
        extra.append((cid, block))
        root["records"][name][0] = Link(cid)

    change.record = name
    return change


def setter(key: str, value: Any) -> Callable[[dict, list, str], None]:
    """A change that sets the root's `key` to `value` (or to `value(root, the file's content id)`)."""

    def change(root: dict, extra: list, file_cid: str) -> None:
        root[key] = value(root, file_cid) if callable(value) else value
    return change


HOSTILE: dict[str, tuple[Callable, str]] = {
    "sonas not a list": (setter("sonas", "everyone"), "its sonas must be a list"),
    "sona entry too short": (setter("sonas", [[0, "x"]]), "sonas entry #0"),
    "sona unknown": (setter("sonas", [[0, "no-such-sona", "origin"]]), "unknown sona"),
    "sona node out of range": (setter("sonas", lambda r, f: [[999, r["sonas"][0][1], "origin"]]), "names node 999"),
    "importance not a number": (setter("importance", [[0, "very", 1]]), "must be a number"),
    "importance node negative": (setter("importance", [[-1, 1.0, 1]]), "names node -1"),
    "importance ratings negative": (setter("importance", [[0, 1.0, -4]]), "count of ratings"),
    "records not a map": (setter("records", ["page"]), "records must be a map"),
    "records of an unknown kind": (setter("records", lambda r, f: {**r["records"], "bogus": []}), "unknown kind"),
    "a record list not a list": (setter("records", lambda r, f: {**r["records"], "page": "x"}), "must be a list"),
    "a record that is a node": (setter("records", lambda r, f: {**r["records"], "page": [r["nodes"][0][2]]}),
                                "not a page record"),
    "duplicate record ids": (setter("records", lambda r, f: {**r["records"], "page": r["records"]["page"] * 2}),
                             "names two records"),
    "a node of kind <script>": (setter("nodes", lambda r, f: [["<script>", *r["nodes"][0][1:]], *r["nodes"][1:]]),
                                "unknown kind '<script>'"),
    "a node with a repeated id": (setter("nodes", lambda r, f: [*r["nodes"], r["nodes"][0]]), "repeated object id"),
    "a node naming file bytes": (setter("nodes", lambda r, f: [*r["nodes"], ["page", "x", Link(f)]]),
                                 "names no node block"),
    "aliases not pairs": (setter("aliases", [[0]]), "aliases entry #0"),
    "a page seq that is text": (with_record("page", seq="abc"), "page record #0: seq"),
    "a page tier of <script>": (with_record("page", tier="<script>"), "page record #0: tier"),
    "a page timestamp that is garbage": (with_record("page", created_at="yesterday"), "cannot be stored"),
    "a sona name too long": (with_record("sona", name="n" * 500), "sona record #0: name"),
    "a file without its bytes": (with_record("file", content_cid="bafkreinotthere"), "names bytes the archive"),
    # What no memory could reach (issue 35, finding 5): the first turn after such an import used to
    # work and every later one fail on the page number's uniqueness.
    "a next_seq at the counter's end": (with_record("state", next_seq=2**63 - 1),
                                        "state record #0: next_seq is 9223372036854775807; a memory holds 1 to"),
    "a page seq past any memory": (with_record("page", seq=2**62), "page record #0: seq is 4611686018427387904"),
    "a page seq below one": (with_record("page", seq=-3), "page record #0: seq is -3; a memory holds 1 to"),
    "a page version past any counter": (with_record("page", version=2**40), "page record #0: version"),
    "a file larger than any file": (with_record("file", size=2**50), "file record #0: size is 1125899906842624"),
    "a page from the future": (with_record("page", timestamp="2999-01-01T00:00:00+00:00"),
                               "page record #0: timestamp is 2999-01-01T00:00:00+00:00, in the future"),
    "a page time without its zone": (with_record("page", timestamp="2024-01-01T00:00:00"), "without its zone"),
    "a NUL in a page's words": (with_record("page", query="maps\x00of Lisbon"),
                                "page record #0: query holds a NUL character (U+0000) at character 5"),
    "a NUL in a sona's name": (with_record("sona", name="fri\x00end"), "sona record #0: name holds a NUL"),
    "a NUL in the root": (setter("exported_at", "2024\x00"), "its root: exported_at holds a NUL"),
}


def nothing_of(user, content_cid: str) -> None:
    for model in (DialoguePage, AttachedFile, MemoryNode, MemoryEdge, Sona, SonaMembership, KnowledgeFact,
                  AgentTrait, UserTrait, LifecycleEvent):
        assert not model.objects.filter(user=user).exists(), model.__name__
    assert not storages[STORAGE].exists(blob_path(content_cid))


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_an_archive_with_wrong_content_is_refused_and_nothing_is_written(make_user, archive, case):
    data, content_cid = archive
    change, reason = HOSTILE[case]
    if getattr(change, "record", None):
        change.original = record(data, change.record)
    bad = rebuilt(data, change, content_cid)
    bob = make_user("bob")
    with pytest.raises(MemoryInputError, match="refused") as refused:
        memory_import(user=bob, source=io.BytesIO(bad))
    assert reason in str(refused.value)
    nothing_of(bob, content_cid)


def test_a_refused_import_leaves_no_file_bytes_behind(make_user, archive):
    """The file's bytes used to be stored before the records were checked."""
    data, content_cid = archive
    bad = rebuilt(data, setter("records", lambda r, f: {**r["records"], "page": r["records"]["page"] * 2}))
    with pytest.raises(MemoryInputError):
        memory_import(user=make_user("bob"), source=io.BytesIO(bad))
    assert not storages[STORAGE].exists(blob_path(content_cid))


def test_an_import_records_where_it_came_from(client, make_user, archive):
    data, content_cid = archive
    bob = make_user("bob")
    summary = memory_import(user=bob, source=io.BytesIO(data))
    assert storages[STORAGE].exists(blob_path(content_cid))
    event = LifecycleEvent.objects.get(user=bob, kind=LifecycleEvent.Kind.MEMORY_IMPORTED)
    assert event.payload["archive"] == summary.root == car_decode(data).roots[0]
    assert event.payload["source_user"] == "alice" and event.payload["exported_at"].startswith("20")
    assert event.payload["into_existing"] is False and event.occurred_at
    client.force_login(bob)
    log = client.get("/inspector/bob/events/").content.decode()
    assert "memory imported from an archive" in log and "from alice's export" in log


def test_a_memory_with_something_in_it_is_added_to_only_when_asked(make_user, archive, tmp_path):
    data, _ = archive
    carol = make_user("carol")
    memory_add(user=carol, text="I grow tomatoes on my balcony.")
    with pytest.raises(MemoryInputError, match="already has memories"):
        memory_import(user=carol, source=io.BytesIO(data))
    assert DialoguePage.objects.filter(user=carol).count() == 1
    path = tmp_path / "alice.car"
    path.write_bytes(data)
    with pytest.raises(CommandError, match="--into-existing"):
        call_command("memory_import", str(path), user="carol", stdout=io.StringIO())
    warned = io.StringIO()
    call_command("memory_import", str(path), user="carol", into_existing=True, stdout=io.StringIO(), stderr=warned)
    assert "Warning: this archive is alice's export; it is now in carol's memory" in warned.getvalue()
    pages = list(DialoguePage.objects.filter(user=carol).order_by("seq"))
    assert [p.query for p in pages] == ["I grow tomatoes on my balcony.", "I collect antique maps of Lisbon.",
                                        "My sister Lena plays the cello."]
    assert len({p.seq for p in pages}) == 3
    event = LifecycleEvent.objects.get(user=carol, kind=LifecycleEvent.Kind.MEMORY_IMPORTED)
    assert event.payload["into_existing"] is True and event.payload["source_user"] == "alice"


def test_an_added_archive_without_its_state_record_still_leaves_room_for_the_next_turn(make_user, archive):
    """With --into-existing the archive's pages are shifted after the user's own; the next page
    number must follow them even when the archive carries no state record to say so."""
    data, file_cid = archive

    def no_state(root: dict, extra: list, cid: str) -> None:
        root["records"]["state"] = []

    carol = make_user("carol")
    memory_add(user=carol, text="I grow tomatoes on my balcony.")
    memory_import(user=carol, source=io.BytesIO(rebuilt(data, no_state, file_cid)), into_existing=True)
    memory_add(user=carol, text="My cat is called Miso.")  # an IntegrityError on the page seq before
    seqs = list(DialoguePage.objects.filter(user=carol).order_by("seq").values_list("seq", flat=True))
    assert len(seqs) == len(set(seqs)) == 4
    assert DialoguePage.objects.get(user=carol, seq=seqs[-1]).query == "My cat is called Miso."


def test_importing_ones_own_export_warns_of_nothing(make_user, tmp_path):
    alice = make_user("alice")
    memory_add(user=alice, text="The old maps of Lisbon show the city before 1755.")  # no fact of the person
    path = tmp_path / "alice.car"
    path.write_bytes(exported(alice))
    DialoguePage.objects.filter(user=alice).delete()
    MemoryNode.objects.filter(user=alice).delete()
    warned = io.StringIO()
    call_command("memory_import", str(path), user="alice", stdout=io.StringIO(), stderr=warned)
    assert warned.getvalue() == ""
