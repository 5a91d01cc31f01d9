"""One user's whole memory as a CAR archive (memory/formats/car.py), and back into another user.

Every block of the archive is a Memoria node (engine/ipld.py), so any IPLD tool decodes it:

- the graph's own nodes, byte for byte as stored: {timestamp?, kind, data, dependencies};
- the bytes of every attached file as a raw block (codec 0x55), which its file node links to
  ("content") and its "file" record names (`content_cid`);
- one record per row (sona, segment, page, attached file, KB fact, agent trait, recollection,
  user trait, profile, the page counter), kind "memoryos/<name>", `data` the row's fields (ids as
  text, times as ISO 8601, embeddings as base64), a `node` dependency on the row's graph node when
  it has one;
- the chunks of every segment's page tree (engine/page_list.py), which its block links to ("pages");
- the root, kind "memoryos/export": {format, version, user, exported_at, records: {name: [link]},
  nodes: [[kind, object id, link]], aliases: [[node number, old id]], and Memoria's annotations kept
  beside the nodes, never in them: importance: [[node number, EWMA, ratings]], sonas: [[node number,
  sona id, via]]}.

Import reads the archive with every block checked against its CID (car_read) and decoded as a node
(node_verify); the first bad block is named and nothing is written. Rows get new ids (the graph's
CIDs do not change: no id is part of a node's content); edges are rebuilt from the nodes'
dependencies, a segment's "contains" edges from its page tree. Version 1 (before the page trees: a
segment's block named every page) is read too: its segments are re-addressed into the tree format
on the way in, their archived CIDs kept as aliases. The full-text index is filled in the same
transaction and the vectors are rebuilt after the commit, so recall over the imported memory (in
every policy) gives what it gave over the original.
"""

from __future__ import annotations

import base64
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, BinaryIO

from django.core.exceptions import ValidationError
from django.db import DatabaseError, models, transaction
from django.db.models import Max
from django.utils import timezone

from memory.engine.content_ids import content_block, trait_evidence_object_id
from memory.engine.ipld import CODEC_RAW, BlockError, Link, NodeError, block_verify, cid_parse, node_verify
from memory.engine.page_list import PAGES, TreeError, tree_entries
from memory.formats.car import CarError, car_read, car_write
from memory.models import (
    AttachedFile,
    DialoguePage,
    LifecycleEvent,
    MemoryAlias,
    MemoryChunk,
    MemoryEdge,
    MemoryNode,
    Recollection,
    Segment,
    Sona,
    SonaMembership,
    UserMemoryState,
)
from memory.services import graph
from memory.services.common import MemoryInputError, TextRefused, lock_user_state, texts_check
from memory.services.events import event_record
from memory.services.files import blob_put, blob_read, blobs_release
from memory.services.reindex import reindex_user
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

FORMAT = "memoryos-export"
VERSION = 2  # 2: segments' pages as page trees (engine/page_list.py); 1 is read as well
READABLE = (1, 2)
ROOT_KIND = "memoryos/export"
# In the order an import creates them (what a row points at comes first).
RECORDS: tuple[tuple[str, type[models.Model]], ...] = (
    ("sona", Sona), ("segment", Segment), ("page", DialoguePage), ("file", AttachedFile), ("fact", KnowledgeFact),
    ("agent_trait", AgentTrait), ("recollection", Recollection), ("user_trait", UserTrait), ("profile", UserProfile),
    ("state", UserMemoryState),
)
ROW_RECORDS = RECORDS[1:8]  # bulk-created with new ids; the sonas, the profile and the counter are merged
NEW_IDS = ("sona", "segment", "page", "file", "fact", "agent_trait", "recollection")
NODE_OF_RECORD = {"segment": MemoryNode.Kind.SEGMENT, "page": MemoryNode.Kind.PAGE, "fact": MemoryNode.Kind.FACT,
                  "agent_trait": MemoryNode.Kind.AGENT_TRAIT, "file": MemoryNode.Kind.FILE,
                  "recollection": MemoryNode.Kind.RECOLLECTION}
ID_FIELDS = {"id", "sona_id", "segment_id", "previous_id", "chain_id", "page_id"}
# What a memory can hold, whatever an archive says: page numbers (a turn a second for 34,000 years;
# far below the 2**63 at which the page counter would overflow, and far below where a shifted
# --into-existing import could), counts (PostgreSQL's integer), and times up to a day ahead of
# this server's clock (clocks differ; a memory from the future does not).
MAX_SEQ = 2**40
SEQ_FIELDS = ("seq", "next_seq", "recollected_seq")
MAX_COUNT = 2**31 - 1
FUTURE_SLACK = timedelta(days=1)


@dataclass
class Summary:
    user: str
    blocks: int = 0
    nodes: int = 0
    edges: int = 0
    records: dict[str, int] = field(default_factory=dict)
    root: str = ""
    source_user: str = ""  # whose export it was, as its root says


# ------------------------------------------------------------------ rows <-> record data

def _fields(row: models.Model) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in row._meta.concrete_fields:
        if column.name == "user":
            continue
        value = getattr(row, column.attname)
        if value is None:
            out[column.attname] = None
        elif isinstance(column, models.BinaryField):
            out[column.attname] = base64.b64encode(bytes(value)).decode("ascii")
        elif isinstance(column, models.DateTimeField):
            out[column.attname] = value.isoformat()
        elif isinstance(value, uuid.UUID):
            out[column.attname] = str(value)
        else:
            out[column.attname] = value
    return out


def _values(model: type[models.Model], data: dict[str, Any]) -> dict[str, Any]:
    """Field values of a record's data (fields the model no longer has are left out)."""
    columns = {column.attname: column for column in model._meta.concrete_fields if column.name != "user"}
    values: dict[str, Any] = {}
    for name, value in data.items():
        column = columns.get(name)
        if column is None:
            continue
        if value is not None and isinstance(column, models.BinaryField):
            value = base64.b64decode(value)
        elif value is not None and isinstance(column, models.DateTimeField):
            value = datetime.fromisoformat(value)
        values[name] = value
    return values


# ------------------------------------------------------------------ export

def _export_blocks(user) -> tuple[list[tuple[str, bytes]], dict[str, Any], Summary]:
    summary = Summary(user=user.get_username())
    blocks: dict[str, bytes] = {}
    nodes = list(MemoryNode.objects.filter(user=user).exclude(block=b"").order_by("pk"))
    node_cids = {(node.kind, node.object_id): node.cid for node in nodes}
    for node in nodes:
        blocks.setdefault(node.cid, bytes(node.block))
    for cid, block in MemoryChunk.objects.filter(user=user).order_by("node_id", "-height", "index").values_list(
            "cid", "block"):
        blocks.setdefault(cid, bytes(block))
    for content_cid in AttachedFile.objects.filter(user=user).values_list("content_cid", flat=True).distinct():
        blocks.setdefault(content_cid, blob_read(content_cid))  # a file's bytes: a raw block
    records: dict[str, list[Link]] = {}
    for name, model in RECORDS:
        links = []
        for row in model.objects.filter(user=user).order_by("pk"):
            node_cid = node_cids.get((NODE_OF_RECORD.get(name, ""), str(row.pk)))
            cid, block = content_block(kind=f"memoryos/{name}", data=_fields(row),
                                       dependencies={"node": (1.0, node_cid)} if node_cid else None)
            blocks.setdefault(cid, block)
            links.append(Link(cid))
        records[name] = links
        summary.records[name] = len(links)
    numbers = {node.pk: index for index, node in enumerate(nodes)}
    aliases = [[numbers[node_id], cid] for node_id, cid in
               MemoryAlias.objects.filter(user=user, node_id__in=numbers).values_list("node_id", "cid")]
    importance = [[numbers[node.pk], node.importance, node.importance_ratings] for node in nodes
                  if node.importance is not None]
    sonas = [[numbers[node_id], str(sona_id), via] for node_id, sona_id, via in
             SonaMembership.objects.filter(user=user, node_id__in=numbers).order_by("pk")
             .values_list("node_id", "sona_id", "via")]
    root_data = {"format": FORMAT, "version": VERSION, "user": summary.user, "exported_at": timezone.now(),
                 "records": records, "nodes": [[node.kind, node.object_id, Link(node.cid)] for node in nodes],
                 "aliases": aliases, "importance": importance, "sonas": sonas}
    summary.nodes = len(nodes)
    return list(blocks.items()), root_data, summary


def memory_export(*, user, out: BinaryIO) -> Summary:
    """Write `user`'s memory to `out` as a CARv1 archive (the module docstring); what was written."""
    blocks, root_data, summary = _export_blocks(user)
    root_cid, root_block = content_block(kind=ROOT_KIND, data=root_data)
    car_write(out=out, roots=[root_cid], blocks=[(root_cid, root_block), *blocks])
    summary.blocks, summary.root = len(blocks) + 1, root_cid
    return summary


# ------------------------------------------------------------------ import

def _read(source: BinaryIO) -> tuple[dict[str, Any], dict[str, bytes], dict[str, Any], str]:
    """The root's data, the blocks and every block's node, all checked; MemoryInputError names the first bad one."""
    try:
        archive = car_read(source)
    except CarError as error:
        raise MemoryInputError(f"The archive is refused, nothing was imported: {error}") from None
    decoded = {}
    for cid, block in archive.blocks.items():
        try:
            if cid_parse(cid).codec == CODEC_RAW:  # a file's bytes: checked, not decoded
                block_verify(cid=cid, block=block)
                continue
            decoded[cid] = node_verify(cid=cid, block=block)
        except (BlockError, NodeError) as error:
            raise MemoryInputError(f"The archive is refused, nothing was imported: {error}") from None
    if archive.roots[0] not in decoded:
        raise MemoryInputError("Not a MemoryOS memory export: its root is a file's bytes, not a node.")
    root = decoded[archive.roots[0]]
    if root.kind != ROOT_KIND or not isinstance(root.data, dict) or root.data.get("format") != FORMAT:
        raise MemoryInputError(f"Not a MemoryOS memory export: its root is a {root.kind!r} node.")
    if root.data.get("version") not in READABLE:
        raise MemoryInputError(f"Export version {root.data.get('version')!r}; this installation reads "
                               f"{' and '.join(map(str, READABLE))}.")
    return root.data, dict(archive.blocks), decoded, archive.roots[0]


def _refused(reason: str) -> MemoryInputError:
    return MemoryInputError(f"The archive is refused, nothing was imported: {reason}")


@dataclass
class _Contents:
    """An archive's root, checked to the last entry before anything is written."""

    records: dict[str, list[dict[str, Any]]]
    nodes: list[tuple[str, str, str]]  # kind, object id, CID
    aliases: list[tuple[int, str]]
    importance: list[tuple[int, float, int]]
    sonas: list[tuple[int, str, str]]


def _entries(root: dict, name: str, width: int) -> list[list]:
    value = root.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _refused(f"its {name} must be a list, not {type(value).__name__}.")
    for number, entry in enumerate(value):
        if not isinstance(entry, list) or len(entry) != width:
            raise _refused(f"{name} entry #{number} must be a list of {width} values, not {entry!r:.120}.")
    return value


def _node_number(value: Any, what: str, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise _refused(f"{what} names node {value!r:.40}; the export has nodes 0 to {count - 1}.")
    return value


def _records(root: dict, decoded: dict) -> dict[str, list[dict[str, Any]]]:
    records = root.get("records") or {}
    if not isinstance(records, dict):
        raise _refused("its records must be a map of record lists.")
    unknown = sorted(set(records) - {name for name, _ in RECORDS})
    if unknown:
        raise _refused(f"unknown kind of record {unknown[0]!r:.80}.")
    plain: dict[str, list[dict[str, Any]]] = {}
    seen: dict[str, str] = {}
    for name, _ in RECORDS:
        links = records.get(name) or []
        if not isinstance(links, list):
            raise _refused(f"its {name} records must be a list.")
        plain[name] = []
        for number, link in enumerate(links):
            if not isinstance(link, Link) or link.cid not in decoded or decoded[link.cid].kind != f"memoryos/{name}":
                raise _refused(f"the export's {name} list names a block that is not a {name} record: {link!r:.120}.")
            data = decoded[link.cid].data
            if not isinstance(data, dict):
                raise _refused(f"{name} record #{number} is not a map of fields.")
            if name in NEW_IDS:
                ident = data.get("id")
                if not isinstance(ident, str) or not ident or len(ident) > 64:
                    raise _refused(f"{name} record #{number} has no id: {ident!r:.80}.")
                if ident in seen:
                    raise _refused(f"the id {ident!r} names two records ({seen[ident]} and {name}).")
                seen[ident] = name
            _texts(data, f"{name} record #{number}")
            plain[name].append(dict(data))
    return plain


def _texts(value: Any, where: str) -> None:
    """Every text of `value` as every way in checks text (memory/services/common.py)."""
    try:
        texts_check(value, field="")
    except TextRefused as error:
        raise _refused(f"{where}: {error.field} {error.problem}") from None


def _int_bounds(column: models.Field) -> tuple[int, int]:
    if column.attname in SEQ_FIELDS:
        return (0 if column.attname == "recollected_seq" else 1), MAX_SEQ
    return 0, (MAX_SEQ if column.get_internal_type() == "PositiveBigIntegerField" else MAX_COUNT)  # a file's bytes


def _within_bounds(model: type[models.Model], name: str, number: int, row: models.Model) -> models.Model:
    """A row whose numbers and times a memory could have reached (checked after _checked_row: each
    value is of its field's type)."""
    latest = timezone.now() + FUTURE_SLACK
    for column in model._meta.concrete_fields:
        value = getattr(row, column.attname)
        if value is None or isinstance(value, bool):
            continue
        where = f"{name} record #{number}: {column.attname}"
        if isinstance(value, int):
            low, high = _int_bounds(column)
            if not low <= value <= high:
                raise _refused(f"{where} is {value}; a memory holds {low} to {high} there.")
        elif isinstance(value, float) and not math.isfinite(value):
            raise _refused(f"{where} is {value}; a memory holds finite numbers there.")
        elif isinstance(value, datetime):
            if timezone.is_naive(value):
                raise _refused(f"{where} is {value.isoformat()}, a time without its zone.")
            if value > latest:
                raise _refused(f"{where} is {value.isoformat()}, in the future: a memory holds times up to now.")
    return row


def _contents(root: dict, blocks: dict, decoded: dict) -> _Contents:
    """Every record, node and annotation of the root, checked; MemoryInputError names the first bad one."""
    _texts({key: value for key, value in root.items() if key != "records"}, "its root")
    records = _records(root, decoded)
    for data in records["file"]:  # every file's bytes are in the archive (checked against their CID above)
        content_cid = data.get("content_cid")
        if not isinstance(content_cid, str) or content_cid not in blocks or content_cid in decoded:
            raise _refused(f"the file {str(data.get('name'))!r:.120} names bytes the archive does not hold: "
                           f"{content_cid!r:.120}.")
    nodes, seen = [], set()
    for number, (kind, object_id, link) in enumerate(_entries(root, "nodes", 3)):
        if kind not in MemoryNode.Kind.values:
            raise _refused(f"node #{number} is of an unknown kind {kind!r:.80}.")
        if not isinstance(object_id, str) or not object_id or len(object_id) > 64 or (kind, object_id) in seen:
            raise _refused(f"node #{number} has a missing, overlong or repeated object id {object_id!r:.80}.")
        if not isinstance(link, Link) or link.cid not in decoded:
            raise _refused(f"node #{number} names no node block of the archive: {link!r:.120}.")
        seen.add((kind, object_id))
        nodes.append((kind, object_id, link.cid))
    count = len(nodes)
    aliases = []
    for number, cid in _entries(root, "aliases", 2):
        if not isinstance(cid, str) or not 0 < len(cid) <= 100:
            raise _refused(f"an alias of node {number!r:.40} is not a content id: {cid!r:.120}.")
        aliases.append((_node_number(number, "an alias", count), cid))
    importance = []
    for number, value, ratings in _entries(root, "importance", 3):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or isinstance(ratings, bool) or not isinstance(ratings, int) or not 0 <= ratings < 2**31:
            raise _refused(f"the importance of node {number!r:.40} must be a number and a count of ratings, "
                           f"not {value!r:.40} and {ratings!r:.40}.")
        importance.append((_node_number(number, "an importance", count), float(value), ratings))
    sona_ids = {data["id"] for data in records["sona"]}
    sonas = []
    for number, sona_id, via in _entries(root, "sonas", 3):
        if not isinstance(sona_id, str) or not isinstance(via, str) or sona_id not in sona_ids \
                or via not in SonaMembership.Via.values:
            raise _refused(f"a sona membership names an unknown sona {sona_id!r:.80} or way {via!r:.40}.")
        sonas.append((_node_number(number, "a sona membership", count), sona_id, via))
    return _Contents(records=records, nodes=nodes, aliases=aliases, importance=importance, sonas=sonas)


def _has_memory(user) -> bool:
    return any(model.objects.filter(user=user).exists()
               for model in (DialoguePage, Segment, KnowledgeFact, AgentTrait, MemoryNode))


def _remap(data: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    out = dict(data)
    for name in ID_FIELDS & set(out):
        if out[name] is not None:  # a row without a new id (a user trait's number) gets one on insert
            out[name] = ids.get(str(out[name]))
    if "members" in out:  # a recollection's pages
        out["members"] = [ids.get(str(page), str(page)) for page in out["members"] or []]
    if "source_page_ids" in out:
        out["source_page_ids"] = [ids.get(str(page), str(page)) for page in out["source_page_ids"] or []]
    if "evidence" in out:
        out["evidence"] = [{**entry, "page_id": ids.get(str(entry.get("page_id")), entry.get("page_id"))}
                           for entry in out["evidence"] or []]
    return out


def _checked_row(model: type[models.Model], name: str, number: int, row: models.Model) -> models.Model:
    """A row whose every field holds a value of its type (an archive's record is anyone's data)."""
    relations = [column.name for column in model._meta.concrete_fields if column.is_relation]
    try:
        row.clean_fields(exclude=relations)
    except ValidationError as error:
        # a blank text field is a value an archive may hold; matched by its code, not its (translated) words
        problems = {field: [message for problem in problems for message in problem.messages
                            if problem.code != "blank"]
                    for field, problems in error.error_dict.items()}
        problems = {field: messages for field, messages in problems.items() if messages}
        if problems:
            field, messages = next(iter(problems.items()))
            raise _refused(f"{name} record #{number}: {field}: {messages[0]}") from None
    return row


def _import_rows(user, contents: _Contents, ids: dict[str, str], summary: Summary, *, seq_offset: int) -> None:
    plain = contents.records
    for name in NEW_IDS:
        for data in plain[name]:
            ids[str(data["id"])] = str(uuid.uuid4())
    existing_sonas = {sona.name: sona for sona in Sona.objects.filter(user=user)}
    has_default = any(sona.is_default for sona in existing_sonas.values())
    for number, data in enumerate(plain["sona"]):
        if data.get("name") in existing_sonas:  # the same sona: its memories join it
            ids[str(data["id"])] = str(existing_sonas[data["name"]].id)
            continue
        values = _values(Sona, _remap(data, ids))
        values["is_default"] = bool(values.get("is_default")) and not has_default
        row = _checked_row(Sona, "sona", number, Sona(user=user, **values))
        _within_bounds(Sona, "sona", number, row).save(force_insert=True)
    previous: dict[str, str] = {}
    for name, model in ROW_RECORDS:
        rows = []
        for number, data in enumerate(plain[name]):
            values = _values(model, _remap(data, ids))
            if values.get("id") is None:
                values.pop("id", None)
            if name == "page" and values.get("previous_id"):
                previous[values["id"]] = values.pop("previous_id")
            if name == "page":
                values["turns_indexed"] = False  # the utterance index is rebuilt after the commit
            row = _checked_row(model, name, number, model(user=user, **values))
            if name == "page":  # after cleaning: a seq given as text ("3") is shifted as well
                row.seq += seq_offset
            rows.append(_within_bounds(model, name, number, row))
        model.objects.bulk_create(rows)
        summary.records[name] = len(rows)
    for page_id, previous_id in previous.items():
        DialoguePage.objects.filter(user=user, pk=page_id).update(previous_id=previous_id)
    for data in plain["profile"][:1]:
        UserProfile.objects.update_or_create(user=user, defaults=_values(UserProfile, data))
    # The next page goes after every page now stored, whatever the archive's state record says (or
    # whether it has one): a next_seq behind them would refuse the next turn on the unique seq.
    state, _ = UserMemoryState.objects.get_or_create(user=user)
    archived = next(iter(plain["state"]), {})
    top = DialoguePage.objects.filter(user=user).aggregate(top=Max("seq"))["top"] or 0
    archived_next = _checked_row(UserMemoryState, "state", 0, UserMemoryState(
        user=user, next_seq=archived.get("next_seq", 1))).next_seq + seq_offset
    _within_bounds(UserMemoryState, "state", 0, UserMemoryState(user=user, next_seq=archived_next))
    state.next_seq = max(archived_next, state.next_seq if seq_offset else 1, top + 1)
    state.maintenance_due = state.maintenance_due or bool(seq_offset)  # two memories' tiers settle
    state.save(update_fields=["next_seq", "maintenance_due"])


def _object_id(kind: str, object_id: str, ids: dict[str, str], traits: dict[str, str]) -> str:
    if kind == MemoryNode.Kind.USER_TRAIT:
        return traits.get(object_id, object_id)
    head, at, tail = object_id.partition("@")
    return ids.get(head, head) + at + tail


def _import_graph(user, contents: _Contents, blocks: dict, decoded: dict, ids: dict[str, str],
                  summary: Summary) -> None:
    traits: dict[str, str] = {}  # a piece of trait evidence is named by (dimension, page)
    old_ids = {new: old for old, new in ids.items()}
    for trait in UserTrait.objects.filter(user=user):
        for entry in trait.evidence:
            new_page = str(entry.get("page_id"))
            old_page = old_ids.get(new_page, new_page)
            traits[trait_evidence_object_id(trait.key, old_page)] = trait_evidence_object_id(trait.key, new_page)
    first = MemoryNode.objects.filter(user=user).order_by("-pk").values_list("pk", flat=True).first() or 0
    MemoryNode.objects.bulk_create([
        MemoryNode(user=user, kind=kind, object_id=_object_id(kind, object_id, ids, traits), cid=cid, block=blocks[cid])
        for kind, object_id, cid in contents.nodes])
    nodes = list(MemoryNode.objects.filter(user=user, pk__gt=first).order_by("pk"))  # the archive's, in its order
    by_cid: dict[str, MemoryNode] = {}
    for node in nodes:  # a memory's current node before an earlier version with the same content
        if "@" not in node.object_id or node.cid not in by_cid:
            by_cid[node.cid] = node
    edges = []
    for node in nodes:
        for name, dependency in decoded[node.cid].dependencies.items():
            if name == PAGES and node.kind == MemoryNode.Kind.SEGMENT:
                edges += _held_pages(user, node, dependency.cid, blocks, by_cid)
                continue
            target = by_cid.get(dependency.cid)
            if target is not None:  # a dependency deleted before the export stays in the block only
                relation = name.rsplit("/", 1)[0] if name.rsplit("/", 1)[-1].isdigit() else name
                edges.append(MemoryEdge(user=user, source=node, target=target, relation=relation,
                                        weight=dependency.weight))
    MemoryEdge.objects.bulk_create(edges, ignore_conflicts=True)
    # Each segment's tree built from its edges (the archive's chunks again, where it is whole); a
    # version-1 segment's block takes the tree format, its archived CID kept as an alias.
    graph.nodes_readdress(user_id=user.pk,
                          node_pks=[node.pk for node in nodes if node.kind == MemoryNode.Kind.SEGMENT])
    MemoryAlias.objects.bulk_create([MemoryAlias(user=user, node=nodes[number], cid=alias)
                                     for number, alias in contents.aliases], ignore_conflicts=True)
    _import_annotations(user, contents, nodes, ids)
    summary.nodes, summary.edges = len(nodes), len(edges)


def _held_pages(user, segment: MemoryNode, root: str, blocks: dict, by_cid: dict) -> list[MemoryEdge]:
    """A segment's "contains" edges, in its page tree's order (the order that gives its CIDs)."""
    try:
        entries = tree_entries(root, blocks.get)
    except (TreeError, NodeError) as error:
        raise _refused(f"segment {segment.cid}: its pages: {error}") from None
    return [MemoryEdge(user=user, source=segment, target=by_cid[cid], relation="contains", weight=weight)
            for weight, cid in entries if cid in by_cid]


def _import_annotations(user, contents: _Contents, nodes: list[MemoryNode], ids: dict[str, str]) -> None:
    """Memoria's importance and sona memberships, by node number; the full-text index of the pages."""
    rated = []
    for number, importance, ratings in contents.importance:
        nodes[number].importance, nodes[number].importance_ratings = importance, ratings
        rated.append(nodes[number])
    MemoryNode.objects.bulk_update(rated, ["importance", "importance_ratings"])
    SonaMembership.objects.bulk_create(
        [SonaMembership(user=user, node=nodes[number], sona_id=ids[sona_id], via=via)
         for number, sona_id, via in contents.sonas], ignore_conflicts=True)


def _file_cids(contents: _Contents) -> list[str]:
    return list(dict.fromkeys(data["content_cid"] for data in contents.records["file"]))


def memory_import(*, user, source: BinaryIO, into_existing: bool = False) -> Summary:
    """Import an export (memory_export) into `user`; a user who has memories already is refused
    unless `into_existing` (the archive's pages then come after theirs). Every block and every
    record is checked first and a bad archive changes nothing, in the database or the file storage.
    The import is recorded in the user's log with where it came from. The vectors are rebuilt after
    the commit."""
    root, blocks, decoded, root_cid = _read(source)
    contents = _contents(root, blocks, decoded)
    summary = Summary(user=user.get_username(), blocks=len(blocks), root=root_cid,
                      source_user=str(root.get("user", ""))[:150])
    try:
        with transaction.atomic():
            state = lock_user_state(user.pk)
            existing = _has_memory(user)
            if existing and not into_existing:
                raise MemoryInputError(f"{user.get_username()} already has memories; import into a user without any, "
                                       "or ask to add to them (--into-existing).")
            ids: dict[str, str] = {}
            try:
                _import_rows(user, contents, ids, summary, seq_offset=state.next_seq - 1 if existing else 0)
                _import_graph(user, contents, blocks, decoded, ids, summary)
            except MemoryInputError:
                raise
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError, ValidationError,
                    DatabaseError) as error:
                raise _refused(f"its records cannot be stored: {str(error)[:300]}") from None
            event_record(user_id=user.pk, kind=LifecycleEvent.Kind.MEMORY_IMPORTED, subject_id=root_cid,
                         archive=root_cid, source_user=str(root.get("user", ""))[:150],
                         exported_at=str(root.get("exported_at", ""))[:40], into_existing=existing,
                         records={name: count for name, count in summary.records.items() if count},
                         nodes=summary.nodes)
            for content_cid in _file_cids(contents):  # the bytes last, after every row is written
                blob_put(content_cid, blocks[content_cid])
            transaction.on_commit(lambda: reindex_user(user_id=user.pk))
    except BaseException:
        # A refused import leaves no bytes behind: blobs_release keeps those another row still names.
        blobs_release(_file_cids(contents))
        raise
    return summary
