"""How much each recalled memory helped a reply, 1-10: the ratings Memoria's importance EWMA takes.

Offline (no LLM): by word overlap. rating = 1 + round(9 · |K_m ∩ K_r| / |K_m|), K_m the memory's
content words (stemmed, as offline.extract_keywords, up to 64) and K_r the reply's: a memory whose
every word the reply repeats gets 10, one the reply shares nothing with gets 1. Measured against the
memory's words, not the reply's, so a long reply does not dilute the memory it leaned on.

With an LLM: one call rates all the recalled memories of a reply (RATING_PROMPT); the answer is
checked by validate_ratings (every memory rated once, integers 1-10), as every model answer is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.engine.offline import extract_keywords

KEYWORD_LIMIT = 64
RATING_PROMPT = (
    "You rate how much each numbered memory helped the assistant's reply below, from 1 (not at all) to "
    "10 (the reply rests on it). Answer with JSON only: {\"ratings\": {\"1\": <1-10>, \"2\": ...}}, one "
    "integer for every memory number."
)


def overlap_rating(memory_text: str, reply: str) -> int:
    """1 + round(9 · share of the memory's content words the reply repeats) (module docstring)."""
    memory_words = extract_keywords(memory_text, limit=KEYWORD_LIMIT)
    if not memory_words:
        return 1
    shared = memory_words & extract_keywords(reply, limit=KEYWORD_LIMIT)
    return 1 + round(9 * len(shared) / len(memory_words))


def rating_request(memories: Sequence[str], reply: str) -> str:
    """The user message of the LLM's rating call: the reply, then the memories numbered from 1."""
    numbered = "\n".join(f"{i}. {text}" for i, text in enumerate(memories, start=1))
    return f"Reply:\n{reply}\n\nMemories:\n{numbered}"


def validate_ratings(value: Any, count: int) -> list[int]:
    """The model's answer as one rating per memory, in order; ValueError on any other shape."""
    if not isinstance(value, dict) or not isinstance(value.get("ratings"), dict):
        raise ValueError('expected an object {"ratings": {"1": <1-10>, ...}}')
    ratings = value["ratings"]
    expected = {str(i) for i in range(1, count + 1)}
    if set(map(str, ratings)) != expected:
        raise ValueError(f"rate exactly the memories 1 to {count}, each once")
    result = []
    for i in range(1, count + 1):
        rating = ratings.get(str(i), ratings.get(i))  # type: ignore[call-overload]
        if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 10:
            raise ValueError(f"memory {i}: a rating is an integer from 1 to 10, not {rating!r}")
        result.append(rating)
    return result
