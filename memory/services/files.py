"""Files attached to turns: uploaded, checked, stored by content id, attached to a turn's page.

An upload is checked whole before anything is kept (its size against MEMORYOS_MAX_FILE_BYTES, its
type from its bytes, its text extracted: memory/adapters/file_text.py, a PDF's in a worker
process within MEMORYOS_FILE_READ_*: memory/adapters/file_reader.py). Its bytes are stored
once per content in the "memory_files" storage under their CID (CIDv1, raw codec, sha2-256, so any
IPLD tool names them the same), and an AttachedFile row with a graph node {name, media_type, size,
content: link} records that this user has them. A turn then names its files by content id; they are
attached in the transaction that stores the message (memory/services/pages.py page_start): the page
node depends on each file node ("attachment"), the files' text joins what the page is indexed and
recalled by (`attachment_text`), and the model sees the text in the turn that carries them.

Bytes are read back only through a user's own row, so a content id alone opens nothing of another
user's. When the last row naming a content is deleted (a page, a pending upload, a forgotten user),
its bytes are deleted after the commit.
"""

from __future__ import annotations

import logging
import posixpath
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import transaction
from django.db.models import Q

from memory.adapters.file_reader import OVER_TIME_CHOICES, ReadBudget, file_text_within
from memory.adapters.file_text import FileTypeError
from memory.engine.ipld import CODEC_RAW, BlockError, NodeError, block_cid, block_verify, cid_normalise
from memory.models import AttachedFile, DialoguePage, LifecycleEvent, MemoryNode
from memory.services import graph
from memory.services.common import MemoryInputError, MemoryNotFound
from memory.services.events import event_record
from memory.services.turn_input import validate_files

log = logging.getLogger(__name__)

STORAGE = "memory_files"
NAME_MAX_CHARS = 255


@dataclass(frozen=True)
class PreparedFile:
    content_cid: str
    name: str
    media_type: str
    size: int
    text: str
    extraction: str


def _limits() -> dict:
    return settings.MEMORYOS


def file_name_clean(name: str) -> str:
    """The last part of a path, without control characters, at most 255 characters."""
    base = posixpath.basename(str(name or "").replace("\\", "/")).strip()
    base = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C")
    return base[:NAME_MAX_CHARS] or "file"


def read_budget() -> ReadBudget:
    """What reading one file may take (MEMORYOS_FILE_READ_*)."""
    limits = _limits()
    over_time = limits["FILE_READ_OVER_TIME"]
    if over_time not in OVER_TIME_CHOICES:
        raise ImproperlyConfigured(f"MEMORYOS_FILE_READ_OVER_TIME is {over_time!r}; it may be "
                                   f"{' or '.join(OVER_TIME_CHOICES)}.")
    return ReadBudget(seconds=limits["FILE_READ_SECONDS"], memory_bytes=limits["FILE_READ_MEMORY_BYTES"],
                      over_time=over_time, readers=limits["FILE_READERS"], wait_seconds=limits["FILE_READERS_WAIT_S"])


def file_prepare(*, name: str, data: bytes, declared_type: str = "", owner: str | None = None) -> PreparedFile:
    """Check a file and read its text; MemoryInputError (naming the file) when it cannot be kept.
    `owner`, whose file it is: a person holds one PDF reader at a time (memory/adapters/file_reader.py)."""
    name = file_name_clean(name)
    limit = _limits()["MAX_FILE_BYTES"]
    if len(data) > limit:
        raise MemoryInputError(f"{name} is {len(data)} bytes; a file may be at most {limit} bytes.")
    limits = _limits()
    try:
        found = file_text_within(data, declared_type=declared_type, max_chars=limits["FILE_TEXT_MAX_CHARS"],
                                 max_pixels=limits["MAX_IMAGE_PIXELS"], budget=read_budget(), owner=owner)
    except FileTypeError as error:
        raise MemoryInputError(f"{name}: {error}") from None
    return PreparedFile(content_cid=block_cid(data, codec=CODEC_RAW), name=name, media_type=found.media_type,
                        size=len(data), text=found.text, extraction=found.extraction)


# ------------------------------------------------------------------ the bytes, by content id

def _storage():
    return storages[STORAGE]


def blob_path(content_cid: str) -> str:
    """Where a content is stored: under the last two characters of its CID (every CID here begins
    "bafkrei"), so that no folder holds more than a small share of them."""
    return f"{content_cid[-2:]}/{content_cid}"


def blob_put(content_cid: str, data: bytes) -> None:
    storage, path = _storage(), blob_path(content_cid)
    if storage.exists(path):
        return
    saved = storage.save(path, ContentFile(data))
    if saved != path:  # a concurrent upload of the same content got there first; keep one copy
        storage.delete(saved)


def blob_read(content_cid: str) -> bytes:
    """The stored bytes, checked against their CID (a changed file on disk is an error, not content)."""
    with _storage().open(blob_path(content_cid), "rb") as handle:
        data = handle.read()
    block_verify(cid=content_cid, block=data)
    return data


def blobs_release(content_cids: Iterable[str]) -> None:
    """Delete the bytes no row names any more (called after the commit that deleted the rows)."""
    storage = _storage()
    for content_cid in set(content_cids):
        if not AttachedFile.objects.filter(content_cid=content_cid).exists():
            path = blob_path(content_cid)
            if storage.exists(path):
                storage.delete(path)


def blobs_release_on_commit(content_cids: Iterable[str]) -> None:
    cids = list(content_cids)
    if cids:
        transaction.on_commit(lambda: blobs_release(cids))


# ------------------------------------------------------------------ rows

def _row_put(*, user, prepared: PreparedFile, page: DialoguePage | None = None) -> AttachedFile:
    row = AttachedFile.objects.create(
        user=user, page=page, content_cid=prepared.content_cid, name=prepared.name,
        media_type=prepared.media_type, size=prepared.size, text=prepared.text, extraction=prepared.extraction)
    graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.FILE, row=row)
    row.save(update_fields=["cid"])
    return row


def file_upload(*, user, name: str, data: bytes, declared_type: str = "") -> AttachedFile:
    """Keep an uploaded file for a turn to come; the same content is stored once."""
    prepared = file_prepare(name=name, data=data, declared_type=declared_type, owner=str(user.pk))
    blob_put(prepared.content_cid, data)
    with transaction.atomic():
        return _row_put(user=user, prepared=prepared)


def file_of(*, user, cid: str) -> AttachedFile | None:
    """The user's file named by its content id or its node's id (the latest upload of that content)."""
    try:
        cid = cid_normalise(cid)
    except (NodeError, ValueError, TypeError):
        return None
    return (AttachedFile.objects.filter(user=user).filter(Q(content_cid=cid) | Q(cid=cid))
            .order_by("-created_at").first())


def _pending_of(*, user, cid: str) -> AttachedFile | None:
    try:
        cid = cid_normalise(cid)
    except (NodeError, ValueError, TypeError):
        return None
    return (AttachedFile.objects.filter(user=user, page__isnull=True).filter(Q(content_cid=cid) | Q(cid=cid))
            .order_by("created_at").first())


def file_open(*, user, cid: str) -> tuple[AttachedFile, bytes]:
    """A user's file and its bytes; MemoryInputError when this user has no such file."""
    row = file_of(user=user, cid=cid)
    if row is None:
        raise MemoryNotFound(f"No file with content id {cid!r} here.")
    try:
        return row, blob_read(row.content_cid)
    except FileNotFoundError:
        raise MemoryInputError(f"The bytes of {row.name} ({row.content_cid}) are missing from storage.") from None
    except BlockError as error:
        raise MemoryInputError(f"The stored bytes of {row.name} are damaged: {error}") from None


def files_for_turn(*, user, cids: Sequence[str]) -> list[AttachedFile]:
    """The files a turn names (content ids checked by turn_input.validate_files), looked up before
    its message is stored: each one this user uploaded, each once. A file already attached to
    another turn is attached again as a new row (the bytes are shared)."""
    unique = list(dict.fromkeys(validate_files(cids)))
    found = []
    for cid in unique:
        row = _pending_of(user=user, cid=cid) or file_of(user=user, cid=cid)
        if row is None:
            raise MemoryInputError(f"No uploaded file with content id {cid!r} here; "
                                   "upload it first (POST /api/memory/files).")
        if row.page_id is not None:
            row = AttachedFile(user=user, content_cid=row.content_cid, name=row.name, media_type=row.media_type,
                               size=row.size, text=row.text, extraction=row.extraction)
        found.append(row)
    return found


def attachment_index_text(files: Sequence[AttachedFile]) -> str:
    """What the files add to their page's index: "[name] text" each, cut to ATTACHMENT_INDEX_CHARS."""
    parts = [f"[{f.name}] {f.text}".strip() if f.text else f"[{f.name}] ({f.media_type})" for f in files]
    return " ".join(parts)[:_limits()["ATTACHMENT_INDEX_CHARS"]]


def attachment_prompt_text(files: Sequence[AttachedFile]) -> str:
    """The files as the model reads them in the turn that carries them (their text, cut to
    ATTACHMENT_PROMPT_CHARS in all); "" without files."""
    if not files:
        return ""
    budget = _limits()["ATTACHMENT_PROMPT_CHARS"]
    blocks = []
    for f in files:
        text = f.text[:max(budget, 0)]
        budget -= len(text)
        head = f"[Attached file: {f.name}, {f.media_type}, {f.size} bytes]"
        blocks.append(f"{head}\n{text}" if text else f"{head} (no text could be read from it)")
    return "\n\n" + "\n\n".join(blocks)


def _names(files: Sequence[AttachedFile]) -> str:
    names = [f.name for f in files]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def attachment_note(files: Sequence[AttachedFile]) -> str:
    """What the offline engine says of a turn's files (a model reads their text itself); "" without."""
    readable = [f for f in files if f.text]
    unreadable = [f for f in files if not f.text]
    notes = []
    if readable:
        notes.append(f"I have kept {_names(readable)} and will remember what "
                     f"{'it says' if len(readable) == 1 else 'they say'}.")
    if unreadable:
        notes.append(f"I have kept {_names(unreadable)} too, but {'it holds' if len(unreadable) == 1 else 'they hold'}"
                     f" no text I can read, so I will know {'it' if len(unreadable) == 1 else 'them'} by name only.")
    return " ".join(notes)


def files_attach(*, user, page: DialoguePage, files: Sequence[AttachedFile]) -> None:
    """Attach checked files (files_for_turn) to a page being stored: inside page_start's transaction."""
    if not files:
        return
    page_node = graph.node_of(user_id=user.pk, obj=page, kind=MemoryNode.Kind.PAGE)
    for row in files:
        if row.pk is None or row._state.adding:
            row.save()
        row.page = page
        file_node = graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.FILE, row=row)
        row.save(update_fields=["page", "cid"])
        graph.edge_put(user_id=user.pk, source=page_node, target=file_node, relation="attachment", weight=1.0)
        event_record(user_id=user.pk, kind=LifecycleEvent.Kind.FILE_ATTACHED, subject_id=page.id,
                     file=row.content_cid, name=row.name, media_type=row.media_type, size=row.size)
    page.attachment_text = attachment_index_text(files)
    page.save(update_fields=["attachment_text"])
    page.refresh_from_db(fields=["cid"])


def file_delete(*, user, cid: str) -> AttachedFile:
    """Delete an upload no turn carries yet (an attached file goes with its page: memory_delete)."""
    row = file_of(user=user, cid=cid)
    if row is None:
        raise MemoryNotFound(f"No file with content id {cid!r} here.")
    pending = AttachedFile.objects.filter(user=user, page__isnull=True, content_cid=row.content_cid)
    if not pending.exists():
        raise MemoryInputError(f"{row.name} is attached to a turn; delete that page to delete it.")
    with transaction.atomic():
        rows = list(pending)
        MemoryNode.objects.filter(user=user, kind=MemoryNode.Kind.FILE,
                                  object_id__in=[str(r.pk) for r in rows]).delete()
        pending.delete()
        blobs_release_on_commit([row.content_cid])
    return row


def page_files_delete(*, user, page_ids: Iterable) -> None:
    """The files of pages being deleted (inside the delete's transaction): rows, nodes, then bytes."""
    rows = list(AttachedFile.objects.filter(user=user, page_id__in=list(page_ids)))
    if not rows:
        return
    MemoryNode.objects.filter(user=user, kind=MemoryNode.Kind.FILE,
                              object_id__in=[str(r.pk) for r in rows]).delete()
    AttachedFile.objects.filter(pk__in=[r.pk for r in rows]).delete()
    blobs_release_on_commit(r.content_cid for r in rows)
