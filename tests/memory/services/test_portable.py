"""Export one user's memory as a CAR archive and import it into another: every CID checked, a
tampered archive refused naming the first bad block with nothing changed, and recall over the
imported memory identical to recall over the original, in every policy."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from memory.engine.content_ids import content_block
from memory.formats.car import car_decode, car_encode
from memory.models import DialoguePage, MemoryEdge, MemoryNode, Segment, SonaMembership
from memory.recall.base import policy_names
from memory.selectors.export import export_data
from memory.services.common import MemoryInputError
from memory.services.export_bundle import memory_export_bundle
from memory.services.pages import page_start
from memory.services.portable import memory_export, memory_import
from memory.services.recall import recall_for_query
from memory.services.remember import memory_add
from memory.services.turns import page_complete
from memory.services.users import sona_get_or_create

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]
NOW = datetime(2026, 1, 1, tzinfo=UTC)
TALK = [
    ("I collect antique maps of Lisbon.", "What a lovely hobby."),
    ("My favourite map shows the harbour in 1750.", "Before the earthquake, then."),
    ("Sourdough bread needs a long proof.", "Patience pays off."),
    ("I bake every Sunday with rye flour.", "Rye gives a deep flavour."),
    ("My sister Lena plays the cello in Vienna.", "Music runs in the family."),
    ("Lena has a concert next Friday.", "I hope it goes well."),
]


def remembered(user):
    sona = sona_get_or_create(user=user, name="friend")
    for day, (query, response) in enumerate(TALK, start=1):
        page = page_start(user=user, query=query, sona=sona, timestamp=datetime(2025, 5, day, 12, tzinfo=UTC))
        page_complete(page=page, response=response, reply_model="test")
    first = DialoguePage.objects.get(user=user, seq=1)
    memory_add(user=user, text="Lena's concert is at the Musikverein.", sona="friend",
               dependencies={"about": [0.5, DialoguePage.objects.get(user=user, seq=6).cid], "maps": [0.25, first.cid]})


def recalled(user, query: str, policy: str) -> list[tuple]:
    found = recall_for_query(user=user, query=query, policy=policy, update_heat=False, record_trace=False, now=NOW)
    return [(item.kind, item.text, round(item.score, 9)) for item in found.items]


def graph_of(user) -> tuple[set, set]:
    nodes = {(n.kind, n.cid, bytes(n.block)) for n in MemoryNode.objects.filter(user=user)}
    edges = {(e.source.cid, e.target.cid, e.relation, e.weight)
             for e in MemoryEdge.objects.filter(user=user).select_related("source", "target")}
    return nodes, edges


def test_a_round_trip_into_another_user_recalls_the_same(make_user, memory_env):
    # pages move on into segments; the facts read at the turns get points as an import gives them
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 2, "TURN_FACTS_INDEXED": True}
    alice, bob = make_user("alice"), make_user("bob")
    remembered(alice)
    assert Segment.objects.filter(user=alice).exists()
    rated = MemoryNode.objects.get(user=alice, kind=MemoryNode.Kind.PAGE,
                                   object_id=str(DialoguePage.objects.get(user=alice, seq=1).pk))
    MemoryNode.objects.filter(pk=rated.pk).update(importance=8.2, importance_ratings=3)  # Memoria's annotation
    archive = io.BytesIO()
    exported = memory_export(user=alice, out=archive)
    assert exported.records["page"] == 7 and exported.nodes > 7

    imported = memory_import(user=bob, source=io.BytesIO(archive.getvalue()))

    assert imported.nodes == exported.nodes
    assert graph_of(bob) == graph_of(alice)  # the same CIDs, blocks and edges
    assert {p.sona.name for p in DialoguePage.objects.filter(user=bob)} == {"friend"}
    # beside the nodes, not in them: importance and the sonas every memory belongs to
    assert MemoryNode.objects.get(user=bob, cid=rated.cid).importance == 8.2
    assert sorted(SonaMembership.objects.filter(user=bob).values_list("node__cid", "sona__name")) \
        == sorted(SonaMembership.objects.filter(user=alice).values_list("node__cid", "sona__name")) != []
    for query in ("What instrument does Lena play?", "Where is Lena's concert?", "What do I bake on Sundays?"):
        for policy in policy_names():
            original = recalled(alice, query, policy)
            assert original and recalled(bob, query, policy) == original, (query, policy)
    with pytest.raises(MemoryInputError, match="already has memories"):
        memory_import(user=bob, source=io.BytesIO(archive.getvalue()))


def test_a_tampered_archive_is_refused_naming_the_first_bad_block(make_user, tmp_path):
    alice, bob = make_user("alice"), make_user("bob")
    memory_add(user=alice, text="I collect antique maps of Lisbon.")
    good = io.BytesIO()
    memory_export(user=alice, out=good)
    data = good.getvalue()
    at = data.index(b"Lisbon")
    tampered = data[:at] + b"Lisbox" + data[at + 6:]
    bad_cid = next(cid for cid, block in car_decode(data).blocks.items() if b"Lisbon" in block)

    with pytest.raises(MemoryInputError) as refused:
        memory_import(user=bob, source=io.BytesIO(tampered))
    assert "block #" in str(refused.value) and bad_cid in str(refused.value)
    assert not DialoguePage.objects.filter(user=bob).exists() and not MemoryNode.objects.filter(user=bob).exists()

    path = tmp_path / "tampered.car"
    path.write_bytes(tampered)
    with pytest.raises(CommandError, match=bad_cid):
        call_command("memory_import", str(path), user="bob")
    assert not MemoryNode.objects.filter(user=bob).exists()


def test_the_commands_round_trip_and_an_archive_of_something_else_is_refused(make_user, tmp_path):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    memory_add(user=alice, text="I collect antique maps of Lisbon.")
    out = tmp_path / "alice.car"
    call_command("memory_export", user="alice", out=str(out), stdout=io.StringIO())
    call_command("memory_import", str(out), user="bob", stdout=io.StringIO())
    assert DialoguePage.objects.get(user=bob).query == "I collect antique maps of Lisbon."
    cid, block = content_block(kind="note", data={"text": "not an export"})
    other = tmp_path / "other.car"
    other.write_bytes(car_encode(roots=[cid], blocks=[(cid, block)]))
    with pytest.raises(CommandError, match="Not a MemoryOS memory export"):
        call_command("memory_import", str(other), user="carol")
    assert not MemoryNode.objects.filter(user=carol).exists()


def test_the_zip_of_download_everything_imports_back_and_a_tampered_one_is_refused(make_user, tmp_path):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    memory_add(user=alice, text="I collect antique maps of Lisbon.")
    path = tmp_path / "memoryos-alice.zip"
    with path.open("wb") as out:
        memory_export_bundle(user=alice, out=out, data=export_data(user=alice))
    call_command("memory_import", str(path), user="bob", stdout=io.StringIO())
    assert DialoguePage.objects.get(user=bob).query == "I collect antique maps of Lisbon."
    with zipfile.ZipFile(path) as bundle:  # the same zip, its archive's text changed
        parts = {name: bundle.read(name) for name in bundle.namelist()}
    parts["memoryos.car"] = parts["memoryos.car"].replace(b"Lisbon", b"Lisbin")
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(tampered, "w") as bundle:
        for name, data in parts.items():
            bundle.writestr(name, data)
    with pytest.raises(CommandError):
        call_command("memory_import", str(tampered), user="carol")
    assert not DialoguePage.objects.filter(user=carol).exists()
