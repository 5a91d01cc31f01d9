"""Facts at the turn they are told: what a statement says about the person and the people they name.

The statement is read by the language pipeline (memory/engine/reading/): each fact is a
`Reading` with its kind, key, value and its text in the third person ("User lives in Porto",
"User is coeliac", "Ingrid is User's sister"). Hypotheticals, wishes, moods, questions, requests
and other people's news state nothing. Two facts mean the same when they say the same value of the
same thing about the same person (`same_meaning`): "I'm a pharmacist" and "I work as a pharmacist"
are one fact, told twice. With a language model, the model reads the facts instead (TURN_FACTS_PROMPT,
read tolerantly by `validate_turn_facts`). Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from .judging import STATES, STATES_NOTHING
from .memory_talk import Intent, correction_parts
from .memory_talk import detect as talk_request
from .reading import EXCLUSIVE_SLOTS, Reading, kept_back, mention_of, read, read_all

# What a fact is: the reading of one clause.
Fact = Reading


def facts_of(text: str) -> list[Fact]:
    """Every fact a statement states about the speaker and the people they name, each once."""
    return list(read(text))


def facts_of_all(texts: Iterable[str]) -> list[list[Fact]]:
    """Many statements' facts, parsed in one batch (an import's turns)."""
    return [list(found) for found in read_all(texts)]


def said_by_person(query: str, utterances: Sequence[Mapping] = ()) -> str:
    """What the person said in a page: its query, or, for an imported page whose query reads
    "Maya: … Tom: …", the first speaker's own words without their name."""
    if utterances:
        speaker = utterances[0].get("speaker")
        words = [str(u.get("text", "")) for u in utterances if u.get("speaker") == speaker]
        if any(words):
            return " ".join(words)
    return query


def judged_facts(text: str, likelihood: float | None) -> list[Fact]:
    """The facts of a statement, with the judgement by meaning (memory/engine/judging.py) where
    the parse has no answer of its own: a statement the clauses read nothing in, that means a fact,
    is kept in the person's words; one whose only readings are of no kind, that means none, is not
    kept. `likelihood` None: the parse alone."""
    found = facts_of(text)
    if likelihood is None:
        return found
    if not found and likelihood >= STATES:
        mention = mention_of(text)
        return [mention] if mention is not None else []
    if found and likelihood <= STATES_NOTHING and all(f.slot == "other" for f in found):
        return []
    return found


@lru_cache(maxsize=8192)
def statement_in(message: str) -> str:
    """The words of a message that may state facts: all of them, but for a request to memory itself
    ("forget that I …", "never store this: …", "why do you think I …", carried out by
    memory/services/memory_talk.py),
    whose words are no new statement; a correction states its new words ("that's wrong, I live in
    Porto")."""
    if not message.strip() or kept_back(message) is not None:
        return ""  # a request not to keep ("never store this: …") states nothing to keep, whatever it says
    request = talk_request(message)
    if request is None:
        return message
    if request.intent == Intent.CORRECT and request.target:
        return correction_parts(request.target)[0]
    return ""


def fact_reading(text: str) -> Fact | None:
    """What a stored fact says (subject, slot, value), or None for a fact the reader finds nothing in."""
    found = read(text)
    return Fact(**{**found[0].__dict__, "text": text}) if found else None


@lru_cache(maxsize=8192)
def meanings(text: str) -> frozenset[tuple[str, ...]]:
    """Everything a fact text says, whatever its words (the meaning of each of its readings)."""
    return frozenset(meaning(r) for r in read(text))


def meaning(fact: Fact) -> tuple[str, ...]:
    """What a fact says, whatever its words: one value of an exclusive kind, or its kind, key, value
    and polarity."""
    if fact.slot in EXCLUSIVE_SLOTS and fact.value:
        return (fact.subject, fact.slot, fact.value)
    if not fact.key:
        return (fact.text.lower(),)
    return (fact.subject, fact.slot, fact.key, fact.value, str(fact.negated), str(fact.past))


def same_meaning(first: str, second: str) -> bool:
    """Whether two fact texts say the same thing, everything each says ("User is a pharmacist",
    "User works as a pharmacist"); the same text always does."""
    return same_meaning_at(first, [second]) is not None


def same_meaning_at(text: str, others: Sequence[str]) -> int | None:
    """The index of the first of `others` that says what `text` says (same_meaning), or None; the
    text is read once however many others there are."""
    words = _words(text)
    said = meanings(text)
    for i, other in enumerate(others):
        if _words(other) == words or said and meanings(other) == said:
            return i
    return None


@lru_cache(maxsize=8192)
def _words(text: str) -> str:
    return " ".join(text.lower().split())


# --- the model's extraction ----------------------------------------------------------------------

TURN_FACTS_PROMPT = (
    "You keep a memory of facts about a user. From the user's message below, list the lasting facts it "
    "states about the user and the people they name: health, diet and allergies, family, partner, pets, "
    "home, where they are from, languages, work, education, plans with dates, hobbies, preferences, "
    "possessions, routines, negative facts (\"User doesn't drink alcohol\"). Write each as one short sentence "
    "in the third person starting with \"User\" (\"User lives in Porto\", \"User is coeliac\", \"Ingrid is "
    "User's sister\"). A hypothetical, a wish, a passing mood, someone else's news, a question, a request or "
    "small talk states no fact. Answer with JSON: {\"facts\": [\"...\", ...]} (an empty list when there are none)."
)
MAX_MODEL_FACTS = 8


def validate_turn_facts(value: object) -> tuple[str, ...]:
    """The model's facts, read tolerantly: {"facts": [...]}, a bare list, or objects with a "text"
    (or "fact"); blank and overlong entries are left out. Anything else is a ValueError."""
    if isinstance(value, dict):
        value = value.get("facts", value.get("items"))
    if not isinstance(value, list):
        raise ValueError("expected {'facts': [...]} or a list of facts")
    facts = []
    for entry in value:
        if isinstance(entry, dict):
            entry = entry.get("text", entry.get("fact"))
        if not isinstance(entry, str):
            continue
        text = " ".join(entry.split()).rstrip(".")
        if 3 <= len(text) <= 200:
            facts.append(text)
    return tuple(dict.fromkeys(facts))[:MAX_MODEL_FACTS]
