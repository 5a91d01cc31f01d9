"""Chat histories people have: ChatGPT's and Claude's data exports, and plain transcripts, read
into conversations of the LoCoMo shape (memory/formats/locomo.py) that the importer stores.

- ChatGPT (`conversations.json`, alone or inside the export's zip): a list of conversations, each a
  `mapping` tree of message nodes. The branch kept is the one the person saw last: from
  `current_node` up the `parent` links to the root. Edited messages and regenerated replies live on
  other branches and are not read.
- Claude (`conversations.json`): a list of conversations with `chat_messages`, each with `sender`
  (human or assistant), `text` (or text parts in `content`) and `created_at`.
- A transcript: JSON Lines of `{"role": "user"|"assistant"|"system", "content": "...", "time": ...}`
  (`time`: ISO 8601 or Unix seconds; a line without one takes the time before it, so the first
  message needs one: an import must give the same times each run to know what it stored).

Only the person's and the assistant's text turns are kept; system, tool and hidden messages, and
messages without text (images, files, code runs) are skipped and counted by reason. Every message
keeps its time (one without a time takes the one before it, or the conversation's). A file is read
to its end before anything is kept: the first problem stops it, named by its place and reason. It is
read as a stream (ijson), one conversation at a time, within Limits: bytes once unpacked, messages
kept, and per conversation its bytes, values and depth, so that a small zip that inflates to
gigabytes, or a deeply nested file, is refused at the limit rather than held in memory.

Each exchange (the person's messages and the answers that follow them) becomes a session of its own,
dated by its first message, so that every page keeps the time it was said; a message longer than a
turn may be is cut at paragraph or sentence ends into parts with ids `<id>#1`, `<id>#2`, ….
Pure: no Django; the caller gives the names and the limit.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import ijson
from ijson.common import ObjectBuilder

from memory.formats.locomo import Conversation, Turn

FORMATS = ("chatgpt", "claude", "transcript")
ASSISTANT_NAMES = {"chatgpt": "ChatGPT", "claude": "Claude", "transcript": "Assistant"}
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)  # before any chat assistant: a time that says 0 or garbage
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


class HistoryFormatError(ValueError):
    """The file cannot be read as a chat history; the message names the place and the reason."""


@dataclass(frozen=True)
class Message:
    id: str
    role: str  # "user" | "assistant"
    text: str
    time: datetime


@dataclass
class History:
    """One conversation of an export: its name, its kept messages in order, and what was skipped."""

    source_id: str
    title: str
    messages: list[Message]
    skipped: Counter = field(default_factory=Counter)


# --- reading the file ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """What one export may cost to read. The file is read as a stream, one conversation at a time,
    so memory follows what is kept (the messages' text), never the file's size once unpacked:
    - max_bytes: bytes read once uncompressed (a zip's conversations.json counts as it inflates);
    - max_messages: messages kept across the export;
    - max_conversation_bytes: bytes one conversation (or one transcript line) may span;
    - max_values: JSON values in one conversation, max_depth: how deep they may nest."""

    max_bytes: int = 64 * 1024 * 1024
    max_messages: int = 20_000
    max_conversation_bytes: int = 16 * 1024 * 1024
    max_values: int = 1_000_000
    max_depth: int = 32


class _Capped(io.RawIOBase):
    """A binary stream that refuses to give more than `limits.max_bytes` in all, or more than
    `limits.max_conversation_bytes` between two marks (the reader marks each conversation's end)."""

    def __init__(self, raw: BinaryIO, limits: Limits, name: str):
        self._raw, self._limits, self._name = raw, limits, name
        self.count = self._mark = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._raw.read(len(buffer))
        self.count += len(data)
        if self.count > self._limits.max_bytes:
            raise HistoryFormatError(f"{self._name}: more than {self._limits.max_bytes:,} bytes once "
                                     f"unpacked; at most {self._limits.max_bytes:,} are read")
        if self.count - self._mark > self._limits.max_conversation_bytes:
            raise HistoryFormatError(f"{self._name}: one conversation or line spans more than "
                                     f"{self._limits.max_conversation_bytes:,} bytes")
        buffer[:len(data)] = data
        return len(data)

    def mark(self) -> None:
        self._mark = self.count


def read_export(data: bytes, *, name: str = "conversations.json",
                limits: Limits = Limits()) -> tuple[str, list[History]]:
    """The format and the conversations of an export's bytes (a zip, JSON or JSON Lines)."""
    return read_export_stream(io.BytesIO(data), name=name, limits=limits)


def read_export_file(path: Path, *, limits: Limits = Limits()) -> tuple[str, list[History]]:
    try:
        with path.open("rb") as stream:
            return read_export_stream(stream, name=path.name, limits=limits)
    except OSError as exc:
        raise HistoryFormatError(f"{path}: {exc.strerror or exc}") from None


def read_export_stream(stream: BinaryIO, *, name: str = "conversations.json",
                       limits: Limits = Limits()) -> tuple[str, list[History]]:
    """The format and the conversations of a seekable binary stream (module doc), read within
    `limits`: the first problem, or the first limit passed, stops it."""
    if stream.read(4) == b"PK\x03\x04":
        stream.seek(0)
        with _zip_member(stream) as member:
            return _read_text_stream(member, "conversations.json (in the zip)", limits)
    stream.seek(0)
    return _read_text_stream(stream, name, limits)


@contextmanager
def _zip_member(stream: BinaryIO) -> Iterator[BinaryIO]:
    """The export's conversations.json inside its zip, inflated as it is read."""
    try:
        archive = zipfile.ZipFile(stream)
        names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
        if not names:
            raise HistoryFormatError("the zip holds no conversations.json (is it the export's zip?)")
        with archive.open(min(names, key=len)) as member:
            yield member
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, zlib.error) as exc:
        raise HistoryFormatError(f"the zip cannot be read: {exc}") from None


def _read_text_stream(raw: BinaryIO, name: str, limits: Limits) -> tuple[str, list[History]]:
    capped = io.BufferedReader(_Capped(raw, limits, name), buffer_size=64 * 1024)
    first = _first_char(capped, name)
    if first == "{" or name.endswith(".jsonl"):
        return "transcript", [_transcript(_lines(capped, name, limits), name, limits)]
    if first != "[":
        raise HistoryFormatError(f"{name}: not JSON (it starts with {first!r}, not a list of conversations)")
    kind, histories, messages = None, [], 0
    try:
        for index, raw_item in enumerate(_items(capped, name, limits)):
            kind = kind or _detect_one(raw_item, index, name)
            read = _chatgpt if kind == "chatgpt" else _claude
            history = read(raw_item, f"{name}: conversation {index + 1}")  # counted as people count
            messages += len(history.messages)
            if messages > limits.max_messages:
                raise HistoryFormatError(f"{name}: more than {limits.max_messages:,} messages; "
                                         f"at most {limits.max_messages:,} are read from one file")
            histories.append(history)
    except ijson.JSONError as exc:
        raise HistoryFormatError(f"{name}: {_json_problem(exc)}") from None
    if kind is None:
        raise HistoryFormatError(f"{name}: the export holds no conversation")
    return kind, histories


def _first_char(stream: io.BufferedReader, name: str) -> str:
    """The first character after a byte-order mark and white space ("" for an empty file); bytes
    that are not UTF-8 are refused here, before any parser sees them."""
    head = stream.peek(4096)[:4096]
    if head.startswith(b"\xef\xbb\xbf"):
        stream.read(3)
        head = head[3:]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":  # not merely a character cut at the window's end
            raise HistoryFormatError(f"{name}: not UTF-8 text (byte {exc.start})") from None
        text = head[:exc.start].decode("utf-8")
    stripped = text.lstrip()
    if not stripped and len(head) < 4096:
        raise HistoryFormatError(f"{name}: the file is empty")
    return stripped[:1]


def _items(stream: io.BufferedReader, name: str, limits: Limits) -> Iterator[Any]:
    """The items of the file's top-level list, each built whole in turn within the limits on
    values and depth; a mark after each (_Capped)."""
    events = ijson.basic_parse(stream, use_float=True)
    kind, _ = next(events)
    if kind != "start_array":
        raise HistoryFormatError(f"{name}: expected a list of conversations")
    builder, depth, values = None, 0, 0
    for kind, value in events:
        if depth == 0:
            if kind == "end_array":
                break
            builder, values = ObjectBuilder(), 0
        builder.event(kind, value)
        values += 1
        if kind in ("start_map", "start_array"):
            depth += 1
            if depth > limits.max_depth:
                raise HistoryFormatError(f"{name}: conversation nests deeper than {limits.max_depth} levels")
        elif kind in ("end_map", "end_array"):
            depth -= 1
        if values > limits.max_values:
            raise HistoryFormatError(f"{name}: one conversation holds more than {limits.max_values:,} values")
        if depth == 0:
            yield builder.value
            stream.raw.mark()
    for _ in events:  # anything after the list is an error of the parser's
        pass


def _json_problem(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "UTF8" in text or "utf-8" in text.lower():
        return "not UTF-8 text"
    if "premature EOF" in text:
        return "not JSON (the file ends too soon: is it whole?)"
    return f"not JSON ({text.removeprefix('parse error: ').removeprefix('lexical error: ')})"


def _detect_one(raw: Any, index: int, name: str) -> str:
    if not isinstance(raw, dict):
        raise HistoryFormatError(f"{name}: conversation {index + 1} is not a conversation (not a JSON object)")
    if "mapping" in raw:
        return "chatgpt"
    if "chat_messages" in raw:
        return "claude"
    raise HistoryFormatError(f"{name}: neither ChatGPT's export (conversations with 'mapping') nor Claude's "
                             "(conversations with 'chat_messages')")


def _lines(stream: io.BufferedReader, name: str, limits: Limits) -> Iterator[tuple[int, str]]:
    """The file's lines, numbered from 1, each decoded; a line longer than max_conversation_bytes is
    refused as it is read (_Capped)."""
    number = 0
    while line := stream.readline():
        number += 1
        stream.raw.mark()
        try:
            yield number, line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HistoryFormatError(f"{name}: line {number}: not UTF-8 text (byte {exc.start})") from None


# --- times ------------------------------------------------------------------------------------

def _time(value: Any, where: str) -> datetime | None:
    """A message's time: Unix seconds or ISO 8601; None when absent."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int | float):
            moment = datetime.fromtimestamp(float(value), tz=UTC)
        elif isinstance(value, str):
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        else:
            raise TypeError
    except (TypeError, ValueError, OverflowError, OSError):
        raise HistoryFormatError(f"{where}: unreadable time {value!r} (Unix seconds or ISO 8601)") from None
    if not EARLIEST <= moment <= LATEST:
        raise HistoryFormatError(f"{where}: time {value!r} is outside {EARLIEST:%Y} to {LATEST:%Y}")
    return moment.astimezone(UTC)


def _dated(messages: Iterable[tuple[str, str, str, datetime | None]], start: datetime | None,
           where: str) -> list[Message]:
    """Messages whose missing times take the one before (the conversation's for the first)."""
    dated, last = [], start
    for ident, role, text, moment in messages:
        moment = moment or last
        if moment is None:
            raise HistoryFormatError(f"{where}: message {ident!r} has no time, nor has anything before it")
        dated.append(Message(id=ident, role=role, text=text, time=moment))
        last = moment
    return dated


def _string(raw: dict, key: str, where: str, *, required: bool = True) -> str:
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise HistoryFormatError(f"{where}: field {key!r} is missing or not text")
    return value


# --- ChatGPT ----------------------------------------------------------------------------------

def _chatgpt_branch(mapping: dict, current: str, where: str) -> list[dict]:
    """The nodes from the root down to `current`, following parents (a cycle is refused)."""
    chain, seen, node_id = [], set(), current
    while node_id is not None:
        if node_id in seen:
            raise HistoryFormatError(f"{where}: the messages' order loops back at message {node_id!r}")
        seen.add(node_id)
        node = mapping.get(node_id)
        if not isinstance(node, dict):
            raise HistoryFormatError(f"{where}: message {node_id!r} is referred to but missing from the "
                                     "file (is the export cut short or edited?)")
        chain.append(node)
        node_id = node.get("parent")
        if node_id is not None and not isinstance(node_id, str):
            raise HistoryFormatError(f"{where}: message {chain[-1].get('id')!r}: its 'parent' is not a message id")
    return chain[::-1]


def _chatgpt_text(message: dict, where: str) -> str | None:
    """The text of a text message (its string parts), or None for other content (images, code runs)."""
    content = message.get("content")
    if not isinstance(content, dict) or not isinstance(content.get("content_type"), str):
        raise HistoryFormatError(f"{where}: 'content' must be an object with a 'content_type'")
    if content["content_type"] not in ("text", "multimodal_text"):
        return None
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise HistoryFormatError(f"{where}: content.parts is missing or not a list")
    texts = [part for part in parts if isinstance(part, str)]
    if parts and not texts:
        return None  # an image or a file alone
    return "\n".join(texts).strip()


def _chatgpt(raw: Any, where: str) -> History:
    if not isinstance(raw, dict):
        raise HistoryFormatError(f"{where}: not an object")
    title = raw.get("title") if isinstance(raw.get("title"), str) else ""
    where = f"{where} ({title[:40]!r})" if title else where
    mapping, current = raw.get("mapping"), raw.get("current_node")
    if not isinstance(mapping, dict) or not isinstance(current, str):
        raise HistoryFormatError(f"{where}: its messages are not where ChatGPT's export keeps them "
                                 "('mapping' and 'current_node')")
    source_id = str(raw.get("conversation_id") or raw.get("id") or current)
    skipped: Counter = Counter()
    kept = []
    for node in _chatgpt_branch(mapping, current, where):
        message = node.get("message")
        if message is None:
            continue  # the tree's root holds no message
        place = f"{where}, message {node.get('id')!r}"
        if not isinstance(message, dict):
            raise HistoryFormatError(f"{place}: 'message' is not an object")
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if not isinstance(role, str):
            raise HistoryFormatError(f"{place}: author.role is missing")
        moment = _time(message.get("create_time"), f"{place}, field 'create_time'")
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        if role not in ("user", "assistant"):
            skipped[role if role in ("system", "tool") else "other role"] += 1
        elif metadata.get("is_visually_hidden_from_conversation") or message.get("recipient", "all") != "all":
            skipped["hidden"] += 1
        else:
            text = _chatgpt_text(message, place)
            if text is None:
                skipped["not text"] += 1
            elif not text:
                skipped["empty"] += 1
            else:
                kept.append((str(message.get("id") or node.get("id")), role, text, moment))
    start = _time(raw.get("create_time"), f"{where}, field 'create_time'")
    return History(source_id=source_id, title=title, messages=_dated(kept, start, where), skipped=skipped)


# --- Claude -----------------------------------------------------------------------------------

def _claude(raw: Any, where: str) -> History:
    if not isinstance(raw, dict) or not isinstance(raw.get("chat_messages"), list):
        raise HistoryFormatError(f"{where}: expected an object with a 'chat_messages' list")
    title = raw.get("name") if isinstance(raw.get("name"), str) else ""
    source_id = str(raw.get("uuid") or where)
    where = f"{where} ({title[:40]!r})" if title else where
    skipped: Counter = Counter()
    kept = []
    for index, message in enumerate(raw["chat_messages"]):
        place = f"{where}, message {index}"
        if not isinstance(message, dict):
            raise HistoryFormatError(f"{place}: not an object")
        sender = _string(message, "sender", place)
        moment = _time(message.get("created_at"), f"{place}, field 'created_at'")
        text = _string(message, "text", place, required=False).strip()
        if not text and isinstance(message.get("content"), list):
            text = "\n".join(part["text"] for part in message["content"]
                             if isinstance(part, dict) and part.get("type") == "text"
                             and isinstance(part.get("text"), str)).strip()
        role = {"human": "user", "assistant": "assistant"}.get(sender)
        if role is None:
            skipped["other role"] += 1
        elif not text:
            skipped["not text" if message.get("attachments") or message.get("files") else "empty"] += 1
        else:
            kept.append((str(message.get("uuid") or f"{source_id}:{index}"), role, text, moment))
    start = _time(raw.get("created_at"), f"{where}, field 'created_at'")
    return History(source_id=source_id, title=title, messages=_dated(kept, start, where), skipped=skipped)


# --- transcripts --------------------------------------------------------------------------------

def _transcript(lines: Iterable[tuple[int, str]], name: str, limits: Limits) -> History:
    skipped: Counter = Counter()
    kept = []
    for number, line in lines:
        if not line.strip():
            continue
        place = f"{name}: line {number}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            raise HistoryFormatError(f"{place}: not a JSON object") from None
        if not isinstance(row, dict):
            raise HistoryFormatError(f"{place}: not a JSON object")
        if not kept and not skipped and "role" not in row:
            raise HistoryFormatError(f"{name}: expected a list of conversations, or JSON Lines of messages "
                                     "with 'role' and 'content'")
        role = _string(row, "role", place)
        content = _string(row, "content", place).strip()
        moment = _time(row.get("time"), f"{place}, field 'time'")
        if role not in ("user", "assistant"):
            skipped["system" if role == "system" else "other role"] += 1
        elif not content:
            skipped["empty"] += 1
        else:
            kept.append((f"L{number}", role, content, moment))
            if len(kept) > limits.max_messages:
                raise HistoryFormatError(f"{name}: more than {limits.max_messages:,} messages; "
                                         f"at most {limits.max_messages:,} are read from one file")
    if not kept:
        raise HistoryFormatError(f"{name}: no user or assistant message with text")
    title = Path(name).stem
    return History(source_id=title, title=title, messages=_dated(kept, None, name), skipped=skipped)


# --- into conversations -----------------------------------------------------------------------

def _pieces(text: str, limit: int) -> list[str]:
    """`text` cut at paragraph, then sentence, then word ends into pieces of at most `limit` characters."""
    if len(text) <= limit:
        return [text]
    pieces, rest = [], text
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind("\n\n"), -1)
        if cut < limit // 2:
            ends = [m.end() for m in re.finditer(r"[.!?](\s)", window)]
            cut = ends[-1] if ends and ends[-1] >= limit // 2 else window.rfind(" ")
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return [piece for piece in [*pieces, rest] if piece]


def history_conversation(history: History, *, person: str, assistant: str, max_chars: int,
                         prefix: str) -> Conversation:
    """The conversation as the importer reads LoCoMo's: a session per exchange, dated by its first
    message; turn ids `<prefix><message id>` (with `#n` for the parts of a long message)."""
    sessions: list[tuple[int, datetime, tuple[Turn, ...]]] = []
    current: list[Turn] = []
    started: datetime | None = None
    previous_role = None
    for message in history.messages:
        if message.role == "user" and previous_role == "assistant" and current:
            sessions.append((len(sessions) + 1, started, tuple(current)))
            current, started = [], None
        speaker = person if message.role == "user" else assistant
        pieces = _pieces(message.text, max(200, max_chars - len(speaker) - 2))
        for number, piece in enumerate(pieces, start=1):
            ident = f"{prefix}{message.id}" + (f"#{number}" if len(pieces) > 1 else "")
            current.append(Turn(dia_id=ident, speaker=speaker, text=piece))
        started = started or message.time
        previous_role = message.role
    if current:
        sessions.append((len(sessions) + 1, started, tuple(current)))
    return Conversation(sample_id=history.title or history.source_id, speaker_a=person, speaker_b=assistant,
                        sessions=tuple(sessions), qa=())


def histories_summary(histories: Sequence[History]) -> dict[str, Any]:
    """Counts for a report: conversations, messages kept, skipped by reason."""
    skipped: Counter = Counter()
    for history in histories:
        skipped.update(history.skipped)
    return {"conversations": len(histories), "messages": sum(len(h.messages) for h in histories),
            "skipped": dict(sorted(skipped.items()))}


def export_conversation(kind: str, histories: Sequence[History], *, person: str, max_chars: int,
                        name: str) -> Conversation:
    """A whole export as one conversation in the order things were said, across its conversations
    (they may overlap in time), each exchange a session; turn ids carry the format and the
    conversation's id, so that they are unique in the export and the same on every run."""
    assistant = ASSISTANT_NAMES[kind]
    sessions = []
    for number, history in enumerate(histories):
        prefix = f"{kind}:{history.source_id[:40]}:"
        read = history_conversation(history, person=person, assistant=assistant, max_chars=max_chars, prefix=prefix)
        sessions += [(date, number, turns) for _, date, turns in read.sessions]
    sessions.sort(key=lambda session: (session[0], session[1]))
    return Conversation(sample_id=name, speaker_a=person, speaker_b=assistant, qa=(),
                        sessions=tuple((n, date, turns) for n, (date, _, turns) in enumerate(sessions, start=1)))
