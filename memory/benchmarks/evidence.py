"""Evidence recall on LoCoMo-format files: scoring helpers and the raw-turn baselines.

A retrieved unit (a page, a segment, a fact) counts through the source turns behind it; turns are
counted in relevance order, each once, at k turns and within a context budget of tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.engine.retrieval import estimate_tokens
from memory.engine.sparse import tokenize
from memory.formats.locomo import Conversation

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*0*(\d+)")


@dataclass(frozen=True)
class Unit:
    """One retrieved thing: the turns behind it and the text that would enter the prompt."""

    source_ids: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


def normalise_evidence(raw: Iterable, valid: set[str]) -> frozenset[str]:
    """Split joined ids ("D8:6; D9:17"), repair typos ("D:11:26", "D30:05"), drop unknown ids."""
    found = set()
    for entry in raw or ():
        for match in _ID.finditer(str(entry)):
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia_id in valid:
                found.add(dia_id)
    return frozenset(found)


def questions(conv: Conversation) -> list[Question]:
    """Scored questions: categories 1–4 with at least one evidence turn left after normalising."""
    valid = {turn.dia_id for _, _, turns in conv.sessions for turn in turns}
    result = []
    for qa in conv.qa:
        category = qa.get("category")
        evidence = normalise_evidence(qa.get("evidence"), valid)
        if category in CATEGORY_NAMES and evidence and isinstance(qa.get("question"), str):
            result.append(Question(text=qa["question"], category=category, evidence=evidence))
    return result


def ranked_turns(units: Sequence[Unit]) -> list[str]:
    seen: dict[str, None] = {}
    for unit in units:
        for dia_id in unit.source_ids:
            seen.setdefault(dia_id, None)
    return list(seen)


def recall_at_k(units: Sequence[Unit], evidence: frozenset[str], k: int) -> float:
    return len(set(ranked_turns(units)[:k]) & evidence) / len(evidence)


def recall_at_budget(units: Sequence[Unit], evidence: frozenset[str], budget: int) -> float:
    """Units enter in order while their text fits the budget; a unit that does not fit ends it."""
    used, turns = 0, set()
    for unit in units:
        cost = estimate_tokens(unit.text)
        if used + cost > budget:
            break
        used += cost
        turns.update(unit.source_ids)
    return len(turns & evidence) / len(evidence)


class TurnBaselines:
    """BM25 (rank-bm25) and dense cosine (the same MiniLM) over the raw turns of one conversation."""

    def __init__(self, conv: Conversation, embed) -> None:
        from rank_bm25 import BM25Okapi

        self.turns = [(t.dia_id, f"{t.speaker}: {t.text}") for _, _, turns in conv.sessions for t in turns]
        self.index = BM25Okapi([tokenize(text) or ["_"] for _, text in self.turns])
        self.vectors = embed([text for _, text in self.turns])
        self.embed = embed

    def bm25(self, question: str) -> list[Unit]:
        scores = self.index.get_scores(tokenize(question) or ["_"])
        return self._ranked(scores)

    def dense(self, question: str) -> list[Unit]:
        query = self.embed([question])[0]
        scores = [sum(a * b for a, b in zip(query, vec, strict=True)) for vec in self.vectors]
        return self._ranked(scores)

    def _ranked(self, scores) -> list[Unit]:
        order = sorted(range(len(self.turns)), key=lambda i: (-scores[i], i))
        return [Unit(source_ids=(self.turns[i][0],), text=self.turns[i][1]) for i in order[:60]]
