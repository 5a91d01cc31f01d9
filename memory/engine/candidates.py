"""Where the relevance core reads its candidate turns: the port, and the same over plain data.

The relevance core (memory/engine/relevance.py) asks for what it needs as it goes: a dense and a
keyword list, the facts of the turns they name, the vectors of the best ones, what the best
seeds said (for the second hop), whether the best turns ask something, and which pages long-term
facts were learned from. `CandidateSource` is that port, for one user's turns in the tiers a
recall ranks; recall fills it from the adapters in one place (memory/recall/candidates.py).
`Candidates` answers it from plain data, for tests and experiments: exact cosine over the turns'
vectors, the keyword lists given per query text.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

# What turn pairs read of a turn's point: whether it asks, whether it ends its page
# (memory/services/utterances.py writes them).
TURN_FLAGS = ("asks", "last")


class TurnFact(NamedTuple):
    """What ranking needs of a turn point besides its scores. (The page is found by the user and
    seq; keeping its id too made each entry twice as big.)"""

    seq: int
    pos: int
    speaker: str
    timestamp: float = 0.0  # when the page was said (Unix seconds): time windows, sessions

    @property
    def day(self) -> int:
        """The session a turn belongs to, for diversity: the day it was said."""
        return int(self.timestamp // 86400)

    @classmethod
    def of(cls, payload: dict[str, Any]) -> TurnFact:
        # Speaker names repeat on every turn: one shared string each.
        return cls(int(payload["seq"]), int(payload["pos"]), sys.intern(str(payload.get("speaker", ""))),
                   float(payload.get("timestamp") or 0.0))


@runtime_checkable
class CandidateSource(Protocol):
    """One user's candidate turns, in the tiers one recall ranks. Lists are turn id -> score,
    best first; reads leave out the ids they do not know."""

    def dense(self, vector: Sequence[float], limit: int) -> dict[str, float]:
        """The `limit` turns nearest `vector` by cosine."""
        ...

    def keyword(self, text: str, limit: int) -> dict[str, float]:
        """The `limit` best turns for `text` by BM25 (`text` is not blank)."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]: ...

    def facts(self, ids: Sequence[str]) -> dict[str, TurnFact]:
        """A new dict: the caller adds to it."""
        ...

    def texts(self, facts: Sequence[TurnFact]) -> list[str]:
        """What each turn said, in order; a turn whose page is gone (or repressed) is left out."""
        ...

    def flags(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The TURN_FLAGS each turn's point holds (a point indexed before them has none)."""
        ...

    def page_turns(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        """Page seq -> what each of its turns said, in order (for turns without flags)."""
        ...

    def page_seqs(self, page_ids: Sequence[str]) -> dict[str, int]:
        """Page id -> seq, for the user's own pages among `page_ids`."""
        ...


@dataclass(frozen=True)
class Turn:
    """One candidate turn as plain data."""

    fact: TurnFact
    vector: Sequence[float]
    text: str = ""
    asks: bool | None = None  # None: its point has no flags (the page's texts are read instead)
    last: bool | None = None


@dataclass
class Candidates:
    """The CandidateSource port over plain data: `turns` by id, the keyword lists by query text
    (a text not listed finds nothing), and page id -> seq for long-term facts' pages. Dense search
    is exact cosine over the turns' vectors, ties in `turns`' order."""

    turns: Mapping[str, Turn]
    keywords: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    pages: Mapping[str, int] = field(default_factory=dict)
    asked: list[tuple[str, Any]] = field(default_factory=list)  # (read, what): every read, in order

    def dense(self, vector: Sequence[float], limit: int) -> dict[str, float]:
        self.asked.append(("dense", list(vector)))
        keys = list(self.turns)
        if not keys:
            return {}
        matrix = np.asarray([self.turns[key].vector for key in keys], dtype=float)
        query = np.asarray(vector, dtype=float)
        cosine = matrix @ query / np.maximum(np.linalg.norm(matrix, axis=1) * np.linalg.norm(query), 1e-12)
        return {keys[i]: float(cosine[i]) for i in np.argsort(-cosine, kind="stable")[:limit]}

    def keyword(self, text: str, limit: int) -> dict[str, float]:
        self.asked.append(("keyword", text))
        hits = sorted(self.keywords.get(text, {}).items(), key=lambda hit: -hit[1])
        return dict(hits[:limit])

    def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        self.asked.append(("vectors", list(ids)))
        return {key: list(self.turns[key].vector) for key in ids if key in self.turns}

    def facts(self, ids: Sequence[str]) -> dict[str, TurnFact]:
        self.asked.append(("facts", list(ids)))
        return {key: self.turns[key].fact for key in ids if key in self.turns}

    def texts(self, facts: Sequence[TurnFact]) -> list[str]:
        said = {turn.fact[:2]: turn.text for turn in self.turns.values()}
        return [said[fact[:2]] for fact in facts if fact[:2] in said]

    def flags(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        self.asked.append(("flags", list(ids)))
        return {key: {"asks": turn.asks, "last": turn.last} for key in ids
                if (turn := self.turns.get(key)) is not None and turn.asks is not None and turn.last is not None}

    def page_turns(self, seqs: Sequence[int]) -> dict[int, list[str]]:
        self.asked.append(("pages", list(seqs)))
        found: dict[int, dict[int, str]] = {}
        for turn in self.turns.values():
            if turn.fact.seq in seqs:
                found.setdefault(turn.fact.seq, {})[turn.fact.pos] = turn.text
        return {seq: [said[pos] for pos in sorted(said)] for seq, said in found.items()}

    def page_seqs(self, page_ids: Sequence[str]) -> dict[str, int]:
        return {page: self.pages[page] for page in page_ids if page in self.pages}
