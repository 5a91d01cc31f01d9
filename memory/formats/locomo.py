"""Reading conversations in the public LoCoMo JSON format.

Only turns and session dates are read: observations and summaries in the file are annotations,
and reading them would be cheating in a benchmark.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


class LocomoFormatError(ValueError):
    """The file is not in the LoCoMo format; the message names the place."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class LocomoPage:
    """Two consecutive runs of speaker turns: the first is the query, the second the response."""

    query: str
    response: str
    timestamp: datetime
    source_ids: tuple[str, ...]
    session: int
    utterances: tuple[tuple[str, str, str], ...] = ()  # (dia_id, speaker, text)


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[tuple[int, datetime, tuple[Turn, ...]], ...]
    qa: tuple[dict[str, Any], ...]

    @property
    def turn_count(self) -> int:
        return sum(len(turns) for _, _, turns in self.sessions)


_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware UTC datetime."""
    match = _DATE.match(text or "")
    if not match:
        raise LocomoFormatError(f"unreadable session date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    parsed = datetime.strptime(f"{day} {month[:3].title()} {year}", "%d %b %Y")
    return parsed.replace(hour=hour_24, minute=int(minute), tzinfo=UTC)


def _turn_text(raw: dict[str, Any], where: str) -> Turn:
    for key in ("speaker", "dia_id", "text"):
        if not isinstance(raw.get(key), str):
            raise LocomoFormatError(f"{where}: field {key!r} is missing or not text")
    text = raw["text"].strip()
    if isinstance(raw.get("blip_caption"), str) and raw["blip_caption"].strip():
        text = f"{text} [shares an image: {raw['blip_caption'].strip()}]".strip()
    return Turn(dia_id=raw["dia_id"], speaker=raw["speaker"], text=text)


def parse_sample(raw: Any, index: int) -> Conversation:
    where = f"sample {index}"
    if not isinstance(raw, dict) or not isinstance(raw.get("conversation"), dict):
        raise LocomoFormatError(f"{where}: expected an object with a 'conversation' object")
    conv = raw["conversation"]
    for key in ("speaker_a", "speaker_b"):
        if not isinstance(conv.get(key), str):
            raise LocomoFormatError(f"{where}: conversation.{key} is missing")
    numbers = sorted(int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
    if not numbers:
        raise LocomoFormatError(f"{where}: the conversation has no session_N lists")
    sessions = []
    for n in numbers:
        turns_raw = conv[f"session_{n}"]
        if not isinstance(turns_raw, list):
            raise LocomoFormatError(f"{where}: conversation.session_{n} is not a list")
        date_key = f"session_{n}_date_time"
        try:
            date = parse_session_date(conv.get(date_key, ""))
        except LocomoFormatError as exc:
            raise LocomoFormatError(f"{where}: conversation.{date_key}: {exc}") from None
        turns = tuple(_turn_text(t, f"{where}: conversation.session_{n}[{i}]") for i, t in enumerate(turns_raw))
        sessions.append((n, date, turns))
    qa = raw.get("qa", [])
    if not isinstance(qa, list):
        raise LocomoFormatError(f"{where}: 'qa' is not a list")
    return Conversation(sample_id=str(raw.get("sample_id", index)), speaker_a=conv["speaker_a"],
                        speaker_b=conv["speaker_b"], sessions=tuple(sessions), qa=tuple(qa))


def load_conversations(path: Path) -> list[Conversation]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LocomoFormatError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise LocomoFormatError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise LocomoFormatError(f"{path}: expected a non-empty list of samples")
    return [parse_sample(raw, i) for i, raw in enumerate(data)]


def conversation_problems(conv: Conversation, *, index: int, max_chars: int) -> list[str]:
    """What would stop this conversation from being stored, each named by its place: a turn
    longer than a message may be, a turn id given twice."""
    problems, seen = [], {}
    for number, _, turns in conv.sessions:
        for position, turn in enumerate(turns):
            where = f"sample {index} ({conv.sample_id}), session {number}, turn {position} ({turn.dia_id})"
            said = len(_say([turn]))
            if said > max_chars:
                problems.append(f"{where}, field 'text': {said:,} characters with the speaker's name; "
                                f"the limit is {max_chars:,}")
            if turn.dia_id in seen:
                problems.append(f"{where}, field 'dia_id': {turn.dia_id!r} is also {seen[turn.dia_id]}")
            seen.setdefault(turn.dia_id, f"session {number}, turn {position}")
    return problems


def _runs(turns: tuple[Turn, ...], max_chars: int | None = None) -> list[list[Turn]]:
    """Consecutive turns of one speaker, each run short enough to be one message."""
    runs: list[list[Turn]] = []
    for turn in turns:
        if runs and runs[-1][0].speaker == turn.speaker and (
                max_chars is None or len(_say([*runs[-1], turn])) <= max_chars):
            runs[-1].append(turn)
        else:
            runs.append([turn])
    return runs


def _say(run: list[Turn]) -> str:
    return " ".join(f"{t.speaker}: {t.text}" for t in run)


def conversation_pages(conv: Conversation, *, max_chars: int | None = None) -> list[LocomoPage]:
    """Each pair of consecutive speaker runs becomes a page, keeping the session's date.

    Turns inside a session get one second apart so their order survives in time. With
    `max_chars`, a speaker's run longer than a message may be is split between pages.
    """
    pages = []
    for number, date, turns in conv.sessions:
        runs = _runs(turns, max_chars)
        for i in range(0, len(runs), 2):
            pair = runs[i:i + 2]
            query, response = _say(pair[0]), _say(pair[1]) if len(pair) > 1 else ""
            ids = tuple(t.dia_id for run in pair for t in run)
            said = tuple((t.dia_id, t.speaker, t.text) for run in pair for t in run)
            pages.append(LocomoPage(query=query, response=response, timestamp=date + timedelta(seconds=i),
                                    source_ids=ids, session=number, utterances=said))
    return pages
