"""What the memory's language-model tasks ask and what they accept: the prompts, and the schema
checks their answers pass. Model output is untrusted input (DESIGN.md): a value that fails a
check raises ValueError naming what was wrong, and the caller retries once or keeps the offline
engine's result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory.engine import offline
from memory.engine.traits import TRAITS_BY_KEY

MAX_ITEMS = 12

SUMMARY_PROMPT = (
    "You maintain a memory of conversations between a user and an assistant. Summarise the topic of "
    "these dialogue pages in at most 3 sentences and list up to 8 topic keywords. Answer with JSON: "
    '{"summary": "...", "keywords": ["...", ...]}'
)
RECOLLECTION_PROMPT = (
    "You maintain a memory of conversations between a user and an assistant. The first item is the user's "
    "new message; the others are earlier memories, each with its date. Recollect these memories in the "
    "context of the new message in at most 4 sentences, saying when each thing happened (dates), and "
    "using only what the memories say. Answer with JSON: {\"summary\": \"...\"}"
)
PERSONA_PROMPT = (
    "From these dialogue pages, extract (1) short third-person facts about the user worth remembering "
    "(\"facts\"), (2) things the assistant suggested, promised or said about itself (\"agent_traits\"), and "
    "(3) which of these user-trait dimensions the pages give evidence for (\"traits\": list of objects with "
    "\"key\" from the list and a short \"evidence\" quote). Use only what the pages say. Answer with JSON: "
    '{"facts": [...], "agent_traits": [...], "traits": [{"key": "...", "evidence": "..."}]}\n'
    "Trait keys: "
)


@dataclass(frozen=True)
class SegmentSummary:
    summary: str
    keywords: frozenset[str]


@dataclass(frozen=True)
class LongTermExtraction:
    facts: tuple[str, ...]
    agent_traits: tuple[str, ...]
    traits: tuple[tuple[str, str], ...]  # (key, evidence)


def _strings(value: Any, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{field}' must be a list of strings")
    return tuple(v.strip() for v in value if v.strip())[:MAX_ITEMS]


def validate_summary(value: Any) -> SegmentSummary:
    if not isinstance(value, dict) or not isinstance(value.get("summary"), str) or not value["summary"].strip():
        raise ValueError("expected an object with a non-empty 'summary' string")
    words = " ".join(_strings(value.get("keywords", []), "keywords"))
    # Stemmed like page keywords, so that the Jaccard part of Fscore compares like with like.
    return SegmentSummary(summary=value["summary"].strip()[:600],
                          keywords=offline.extract_keywords(words, limit=10))


def validate_recollection(value: Any) -> str:
    """A recollection's text: a non-empty 'summary' string, at most 700 characters kept."""
    if not isinstance(value, dict) or not isinstance(value.get("summary"), str) or not value["summary"].strip():
        raise ValueError("expected an object with a non-empty 'summary' string")
    return " ".join(value["summary"].split())[:700]


def validate_long_term(value: Any) -> LongTermExtraction:
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    traits = value.get("traits", [])
    if not isinstance(traits, list):
        raise ValueError("'traits' must be a list")
    pairs = []
    for entry in traits:
        if not isinstance(entry, dict) or entry.get("key") not in TRAITS_BY_KEY:
            raise ValueError(f"unknown trait entry {entry!r}; keys must come from the list")
        pairs.append((entry["key"], str(entry.get("evidence", ""))[:200]))
    return LongTermExtraction(facts=_strings(value.get("facts", []), "facts"),
                             agent_traits=_strings(value.get("agent_traits", []), "agent_traits"),
                             traits=tuple(pairs[:MAX_ITEMS]))


def pages_text(texts: Sequence[str]) -> str:
    return "\n\n".join(f"[{i + 1}] {text[:1200]}" for i, text in enumerate(texts))
