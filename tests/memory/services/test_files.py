"""Files attached to turns: the type read from the bytes, text extracted from text and PDF, stored
once per content under a CIDv1 that an independent IPLD library computes the same, attached in
the transaction that stores the message, recalled by their words, read back only by their owner,
deleted with their page, carried by an export and checked on import."""

from __future__ import annotations

import io
import re

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import storages
from multiformats import CID, multihash

from memory.adapters.file_text import FileTypeError, file_text
from memory.benchmarks.files import pdf_document
from memory.engine.ipld import Link, node_verify
from memory.formats.car import car_decode
from memory.models import AttachedFile, DialoguePage, LifecycleEvent, MemoryEdge, MemoryNode
from memory.recall.base import policy_names
from memory.services.common import MemoryInputError
from memory.services.deletion import memory_delete, user_forget
from memory.services.files import blob_path, file_open, file_upload
from memory.services.portable import memory_export, memory_import
from memory.services.recall import recall_for_query
from memory.services.turns import turn_run
from tests.memory.hostile_files import BOMB_SIDE, IMAGE_BOMBS, pdf_inflation_bomb, pdf_many_pages, pdf_slow_pages

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]

NOTES = ("Itinerary for the trip: the ferry to Hvar leaves Split at 07:45 on the 3rd of August. "
         "The apartment in Stari Grad has the key box code 5521.")


def pdf_with_text(*lines: str) -> bytes:
    return pdf_document([lines])


def png(width: int = 4, height: int = 3) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def independent_raw_cid(data: bytes) -> str:
    """The CIDv1 of a raw block by the multiformats package (not the code under test)."""
    return str(CID("base32", 1, "raw", multihash.digest(data, "sha2-256")))


# ------------------------------------------------------------------ what a file is

def test_the_type_comes_from_the_bytes_and_the_text_is_extracted():
    pdf = file_text(pdf_with_text("Quarterly report", "Revenue grew by 12 percent"), max_chars=10_000)
    assert pdf.media_type == "application/pdf" and pdf.extraction == "pdf: 1 page"
    assert "Quarterly report" in pdf.text and "Revenue grew by 12 percent" in pdf.text
    image = file_text(png(4, 3), declared_type="text/plain", max_chars=10_000)  # the bytes win over the claim
    assert (image.media_type, image.text, image.extraction) == ("image/png", "", "image 4x3, no text")
    markdown = file_text("\ufeff# Plan\nBuy rye flour.".encode(), declared_type="text/markdown; charset=utf-8",
                         max_chars=10)
    assert (markdown.media_type, markdown.text) == ("text/markdown", "# Plan\nBuy")  # BOM dropped, cut to 10
    assert file_text(b"plain words", declared_type="application/x-evil", max_chars=99).media_type == "text/plain"
    for refused, reason in ((b"", "empty"), (b"\xff\xfe\x00\x01binary", "Only text"),
                            (b"%PDF-1.4 truncated", "PDF cannot be read"), (b"\x89PNG\r\n\x1a\nbroken", "image")):
        with pytest.raises(FileTypeError, match=reason):
            file_text(refused, max_chars=100)


def test_an_upload_is_stored_once_under_its_cid_and_refused_whole_when_it_cannot_be_kept(make_user, memory_env):
    ana = make_user("ana")
    data = NOTES.encode()
    first = file_upload(user=ana, name="../../etc/notes.txt", data=data, declared_type="text/plain")
    again = file_upload(user=ana, name="notes.txt", data=data)
    assert first.content_cid == again.content_cid == independent_raw_cid(data)
    assert first.content_cid.startswith("bafkrei") and first.name == "notes.txt"  # no path survives
    assert storages["memory_files"].exists(blob_path(first.content_cid))
    node = MemoryNode.objects.get(user=ana, kind=MemoryNode.Kind.FILE, object_id=str(first.pk))
    decoded = node_verify(cid=node.cid, block=bytes(node.block))
    assert node.cid == first.cid and decoded.kind == "file"
    assert decoded.data == {"name": "notes.txt", "media_type": "text/plain", "size": len(data),
                            "content": Link(first.content_cid)}

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "MAX_FILE_BYTES": 64}
    with pytest.raises(MemoryInputError, match=r"big.txt is 65 bytes; a file may be at most 64 bytes"):
        file_upload(user=ana, name="big.txt", data=b"x" * 65)
    with pytest.raises(MemoryInputError, match=r"tool.exe: Only text"):
        file_upload(user=ana, name="tool.exe", data=b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\xff\xff")
    assert AttachedFile.objects.filter(user=ana).count() == 2


# ------------------------------------------------------------------ hostile files

def stored_blobs() -> list[str]:
    storage = storages["memory_files"]
    folders, _files = storage.listdir("")
    return sorted(name for folder in folders for name in storage.listdir(folder)[1])


def test_bombs_are_refused_naming_the_file_and_the_limit_and_nothing_is_stored(make_user):
    ana = make_user("ana")
    blobs = stored_blobs()
    refusals = {name: (make(BOMB_SIDE, BOMB_SIDE), r"The image declares 3,600,000,000 pixels")
                for name, make in IMAGE_BOMBS.items()}
    refusals["inflates.pdf"] = (pdf_inflation_bomb(), r"The PDF is past a limit .*Limit reached while decompressing")
    refusals["pages.pdf"] = (pdf_many_pages(), r"The PDF is past a limit .*page tree entry limit")
    for name, (data, reason) in refusals.items():
        with pytest.raises(MemoryInputError, match=rf"^{name}: {reason}"):
            file_upload(user=ana, name=name, data=data)
    assert not AttachedFile.objects.filter(user=ana).exists()
    assert not MemoryNode.objects.filter(user=ana, kind=MemoryNode.Kind.FILE).exists()
    assert stored_blobs() == blobs


def test_a_slow_pdf_is_kept_with_the_pages_read_in_budget_or_refused_as_configured(make_user, memory_env):
    ana = make_user("ana")
    slow = pdf_slow_pages(quick_pages=2)
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "FILE_READ_SECONDS": 2.0, "FILE_READ_OVER_TIME": "refuse"}
    with pytest.raises(MemoryInputError, match=r"^slow.pdf: Reading it takes longer than the 2 s a file may take"):
        file_upload(user=ana, name="slow.pdf", data=slow)
    assert not AttachedFile.objects.filter(user=ana).exists()
    assert not storages["memory_files"].exists(blob_path(independent_raw_cid(slow)))

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "FILE_READ_OVER_TIME": "keep"}
    kept = file_upload(user=ana, name="slow.pdf", data=slow)
    assert kept.text.startswith("Quick page 1.\n\nQuick page 2.")  # and a slow page or so, on a quiet machine
    assert re.fullmatch(r"pdf: 14 pages, text of \d+ read \(reading stopped after 2 s\)", kept.extraction)
    assert storages["memory_files"].exists(blob_path(kept.content_cid))

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "FILE_READ_OVER_TIME": "truncate"}
    with pytest.raises(ImproperlyConfigured, match="MEMORYOS_FILE_READ_OVER_TIME is 'truncate'; it may be keep or"):
        file_upload(user=ana, name="slow.pdf", data=slow)


# ------------------------------------------------------------------ a turn that carries files

def test_a_turn_carries_its_files_and_they_are_recalled_later_by_their_words(make_user, memory_env):
    ana = make_user("ana")
    notes = file_upload(user=ana, name="trip.txt", data=NOTES.encode())
    report = file_upload(user=ana, name="report.pdf", data=pdf_with_text("Quarterly report",
                                                                         "Revenue grew by 12 percent"))
    photo = file_upload(user=ana, name="harbour.png", data=png())

    result = turn_run(user=ana, message="Here are my travel papers.",
                      files=[notes.content_cid, report.cid, photo.content_cid])  # bytes' or node's CID

    page = result.page
    attached = list(AttachedFile.objects.filter(page=page).order_by("name"))
    assert [f.name for f in attached] == ["harbour.png", "report.pdf", "trip.txt"]
    # the model read the files' text in the turn that carried them
    user_message = result.prompt.messages[-1].content
    assert "[Attached file: trip.txt, text/plain" in user_message and "key box code 5521" in user_message
    assert "Revenue grew by 12 percent" in user_message and "harbour.png, image/png" in user_message
    # the offline engine, which reads no files itself, says what it kept
    assert result.reply.startswith("I have kept trip.txt and report.pdf and will remember what they say. "
                                   "I have kept harbour.png too, but it holds no text I can read, so I will "
                                   "know it by name only.\n\n")
    # the page's node depends on each file's node, by content
    page_node = MemoryNode.objects.get(user=ana, kind=MemoryNode.Kind.PAGE, object_id=str(page.id))
    dependencies = node_verify(cid=page_node.cid, block=bytes(page_node.block)).dependencies
    assert sorted(dep.cid for name, dep in dependencies.items() if name.startswith("attachment")) \
        == sorted(f.cid for f in attached)
    assert LifecycleEvent.objects.filter(user=ana, kind=LifecycleEvent.Kind.FILE_ATTACHED,
                                         subject_id=str(page.id)).count() == 3
    for i in range(8):  # the page moves on into mid-term memory
        turn_run(user=ana, message=f"Unrelated note {i} about watering the tomato plants.")
    assert DialoguePage.objects.get(pk=page.pk).tier == "mtm"

    for policy in policy_names():
        found = recall_for_query(user=ana, query="What is the key box code of the apartment in Stari Grad?",
                                 policy=policy, update_heat=False, record_trace=False)
        assert any("5521" in item.text for item in found.items if item.kind != "stm_page"), policy


def test_unknown_or_foreign_files_refuse_the_turn_before_anything_is_stored(make_user):
    ana, bob = make_user("ana"), make_user("bob")
    secret = file_upload(user=bob, name="bob.txt", data=b"Bob's locker code is 4417.")
    for files in ([secret.content_cid], ["bafkreinotacid"], ["x"] * 1):
        with pytest.raises(MemoryInputError, match="No uploaded file with content id"):
            turn_run(user=ana, message="Look at this.", files=files)
    assert not DialoguePage.objects.filter(user=ana).exists()
    with pytest.raises(MemoryInputError, match="No file with content id"):
        file_open(user=ana, cid=secret.content_cid)  # the bytes exist, but not for Ana
    assert file_open(user=bob, cid=secret.content_cid)[1] == b"Bob's locker code is 4417."


def test_a_file_attached_again_shares_its_bytes_and_a_damaged_copy_on_disk_is_an_error(make_user):
    ana = make_user("ana")
    notes = file_upload(user=ana, name="trip.txt", data=NOTES.encode())
    first = turn_run(user=ana, message="My trip notes.", files=[notes.content_cid]).page
    second = turn_run(user=ana, message="The same notes again.", files=[notes.content_cid]).page
    rows = AttachedFile.objects.filter(user=ana, content_cid=notes.content_cid)
    assert sorted(str(r.page_id) for r in rows) == sorted([str(first.id), str(second.id)])

    with storages["memory_files"].open(blob_path(notes.content_cid), "wb") as handle:
        handle.write(NOTES.replace("5521", "0000").encode())
    with pytest.raises(MemoryInputError, match="trip.txt are damaged: .*content does not match"):
        file_open(user=ana, cid=notes.content_cid)


def test_deleting_the_page_deletes_its_files_bytes_and_words(make_user):
    ana = make_user("ana")
    notes = file_upload(user=ana, name="trip.txt", data=NOTES.encode())
    page = turn_run(user=ana, message="My trip notes.", files=[notes.content_cid]).page

    radius = memory_delete(user=ana, kind="page", ident=str(page.id), dry_run=True)
    assert radius.files_removed == [{"cid": notes.content_cid, "name": "trip.txt", "size": len(NOTES.encode())}]
    memory_delete(user=ana, kind="page", ident=str(page.id))

    assert not AttachedFile.objects.filter(user=ana).exists()
    assert not MemoryNode.objects.filter(user=ana, kind=MemoryNode.Kind.FILE).exists()
    assert not storages["memory_files"].exists(blob_path(notes.content_cid))
    for policy in policy_names():
        found = recall_for_query(user=ana, query="key box code Stari Grad 5521", policy=policy,
                                 update_heat=False, record_trace=False)
        assert not any("5521" in item.text for item in found.items), policy


def test_bytes_another_user_still_has_survive_a_forgotten_user(make_user):
    ana, bob = make_user("ana"), make_user("bob")
    shared = NOTES.encode()
    turn_run(user=ana, message="My notes.", files=[file_upload(user=ana, name="a.txt", data=shared).content_cid])
    kept = file_upload(user=bob, name="b.txt", data=shared)
    only_ana = file_upload(user=ana, name="only.txt", data=b"Only Ana has this.")

    counts = user_forget(user=ana)

    assert counts["files"] == 2 and not AttachedFile.objects.filter(user=ana).exists()
    assert storages["memory_files"].exists(blob_path(kept.content_cid))  # Bob's upload of the same bytes
    assert not storages["memory_files"].exists(blob_path(only_ana.content_cid))
    assert file_open(user=bob, cid=kept.content_cid)[1] == shared


# ------------------------------------------------------------------ export and import

def test_an_export_carries_the_files_and_a_tampered_file_block_is_refused(make_user):
    ana, bob, carol = make_user("ana"), make_user("bob"), make_user("carol")
    notes = file_upload(user=ana, name="trip.txt", data=NOTES.encode())
    turn_run(user=ana, message="My trip notes.", files=[notes.content_cid])
    archive = io.BytesIO()
    memory_export(user=ana, out=archive)
    blocks = car_decode(archive.getvalue()).blocks
    assert blocks[notes.content_cid] == NOTES.encode()  # the bytes are a raw block of the archive

    storages["memory_files"].delete(blob_path(notes.content_cid))  # the import brings the bytes back
    memory_import(user=bob, source=io.BytesIO(archive.getvalue()))
    imported = AttachedFile.objects.get(user=bob)
    assert (imported.name, imported.content_cid, imported.cid) == ("trip.txt", notes.content_cid, notes.cid)
    assert file_open(user=bob, cid=notes.content_cid)[1] == NOTES.encode()
    page_node = MemoryNode.objects.get(user=bob, kind=MemoryNode.Kind.PAGE, object_id=str(imported.page_id))
    assert MemoryEdge.objects.filter(source=page_node, target__cid=notes.cid, relation="attachment").exists()
    found = recall_for_query(user=bob, query="What is the key box code?", update_heat=False, record_trace=False)
    assert any("5521" in item.text for item in found.items)

    data = archive.getvalue()
    at = data.index(NOTES.encode())  # the raw block comes before the records that quote the text
    forged = data[:at] + NOTES.replace("5521", "0000").encode() + data[at + len(NOTES):]
    with pytest.raises(MemoryInputError, match=f"refused.*{notes.content_cid}.*content does not match"):
        memory_import(user=carol, source=io.BytesIO(forged))
    assert not AttachedFile.objects.filter(user=carol).exists() and not DialoguePage.objects.filter(user=carol)
