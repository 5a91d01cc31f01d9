"""Answers from what is known: a question about the person answered from their current facts, the
past value when the question is about the past, before any turn is quoted.

A question is parsed (memory/engine/language.py) into whose (the person, or someone named by their
relation to them), which kinds of fact its words ask about and its content words. Each fact scores
for its kind and the words it shares with the question; the best answer, said to the person in the
second person. The facts are the person's long-term facts, each with when it was said and, once
superseded, when it ended and what took its place. Pure and deterministic: the caller passes the
facts in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from . import lexicon as lx
from .facts import Fact, fact_reading
from .language import parse
from .reading import normalise_statement
from .supersession import EXCLUSIVE_SLOTS, SELF, asks_about_the_past, superseded_text
from .types import RecalledItem
from .when import day_text
from .wording import to_person


@dataclass(frozen=True)
class KnownFact:
    """A stored fact as the reply sees it."""

    text: str
    said_at: datetime | None = None
    valid_until: datetime | None = None
    successor: str = ""
    id: str = ""


@dataclass(frozen=True)
class Asked:
    subject: str
    slots: tuple[str, ...]
    name: str = ""  # "Who is Lia?"
    relation: str = ""  # "What is my niece's name?"
    words: frozenset[str] = frozenset()  # the question's content lemmas, what it asks about
    past: bool = False


# Which kinds of fact a question's words ask about ("where do I work?": employer, occupation).
_ASKS_SLOTS: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
    (frozenset("live home house flat apartment reside base address neighbourhood".split()), ("residence",)),
    (frozenset("job occupation profession career living employ employer company boss office work".split()),
     ("employer", "occupation")),
    (lx.PARTNERS | lx.PARTNERED | {"date", "dating", "relationship"}, ("partner",)),
    (lx.PET_SPECIES, ("pet",)),
    (frozenset("eat food diet meat drink alcohol dinner meal cook restaurant order menu".split()) | lx.DIET,
     ("diet", "allergy", "health")),
    (lx.ALLERGY | {"avoid", "safe"}, ("allergy", "health", "diet")),
    (lx.HEALTH | {"health", "medical", "medication", "doctor", "ill", "sick", "condition"}, ("health", "allergy")),
    (frozenset({"favourite", "favorite", "fave"}), ("favorite", "preference")),
    (frozenset(lx.PREFERENCE_VERBS) | {"prefer", "fan", "taste", "music", "film", "book"}, ("preference", "activity")),
    (frozenset("hobby hobbies sport free spare fun weekend pastime play exercise workout fitness".split()) | lx.HOBBY,
     ("activity", "routine", "preference")),
    (lx.PLAN_NOUNS | {"when", "plan", "travel", "fly", "leave", "schedule", "go"}, ("plan",)),
    (lx.LANGUAGE, ("language",)),
    (frozenset("from born grow raise nationality origin hometown heritage".split()), ("origin",)),
    (lx.EDUCATION, ("education",)),
    (frozenset({"name", "call", "called"}), ("name", "family", "pet", "partner")),
    (frozenset({"old", "age"}), ("age",)),
    (frozenset({"birthday", "born"}), ("birthday",)),
    (lx.POSSESSIONS | {"own", "drive"}, ("possession",)),
    (lx.RELATIONS | {"family", "sibling", "kids"}, ("family",)),
    (frozenset("routine usually morning evening wake sleep bed night".split()), ("routine",)),
)
# Words of a question that ask rather than say what about.
_ASKING = frozenset("what when where who whom which why how do does did be is am are was were have has had can "
                    "could would will i me my you your the a an any anything something tell remind know remember "
                    "again now currently these days still right".split())


_ASKED_WORDS = frozenset().union(*(words for words, _ in _ASKS_SLOTS))


def _asking_words(doc) -> set[str]:
    """The words a question asks with: each lemma, and a word as written unless it is a verb whose
    lemma already asks ("where am I living": live, a home; "for a living", the noun: a job; "where
    was I born": born, whose lemma asks nothing)."""
    return {t.lemma_.lower() for t in doc} | {t.lower_ for t in doc if not (
        t.pos_ in ("VERB", "AUX") and t.lemma_.lower() in _ASKED_WORDS)}


def question_about(message: str) -> Asked | None:
    """What a question asks about the person, or None when it asks nothing a fact may answer."""
    doc = parse(message)
    lemmas = _asking_words(doc)
    words = frozenset(t.lemma_.lower() for t in doc if not t.is_punct and t.lemma_.lower() not in _ASKING
                      and not t.is_stop)
    past = asks_about_the_past(message)
    who = next((t for t in doc if t.lower_ == "who" and t.i + 2 < len(doc) and doc[t.i + 1].lemma_ == "be"
                and doc[t.i + 2].pos_ == "PROPN"), None)
    if who is not None and doc[who.i + 2].lower_ not in ("i", "my"):
        return Asked(subject=SELF, slots=("family", "partner", "pet"), name=doc[who.i + 2].lower_, words=words,
                     past=past)
    if lemmas >= {"who", "i"} and len([t for t in doc if not t.is_punct]) <= 3:
        return Asked(subject=SELF, slots=("name",), past=past)  # "Who am I?"
    subject, relation = SELF, ""
    for token in doc:
        if token.lemma_.lower() in lx.RELATIONS | lx.PARTNERS | lx.OTHERS:
            owner = next((c for c in token.children if c.dep_ == "poss"), None)
            if owner is not None and owner.lower_ == "my":
                relation = token.lower_
    slots = tuple(dict.fromkeys(slot for words_of, kinds in _ASKS_SLOTS if lemmas & words_of for slot in kinds))
    if any(f"{w}{end}" in lx.OCCUPATIONS for w in lemmas for end in ("er", "r", "or", "ist")):
        slots += ("occupation", "employer")  # "where do I teach?": a teacher's job
    if relation and relation not in lx.PARTNERS and lemmas & {"name", "call", "called", "who"}:
        return Asked(subject=SELF, slots=("family",), relation=relation, words=words, past=past)
    if relation and relation not in lx.PARTNERS and set(slots) & {"residence", "employer", "occupation"}:
        subject = relation
    if not slots and not words:
        return None
    return Asked(subject=subject, slots=slots, words=words - {relation}, past=past)


def _said_words(fact: KnownFact) -> frozenset[str]:
    doc = parse(normalise_statement(fact.text))
    return frozenset(t.lemma_.lower() for t in doc if not t.is_punct and not t.is_stop)


def _score(asked: Asked, reading: Fact, fact: KnownFact) -> float:
    """How well a fact answers the question: its kind asked for (2), each word it shares with the
    question (1); 0 when it is about someone else."""
    if asked.name:
        named = reading.key.split("|")[0] == asked.name or reading.value.lower() == asked.name
        return 3.0 if named else 0.0
    if asked.relation:
        return 3.0 if reading.slot == "family" and reading.value.lower().endswith(asked.relation) else 0.0
    if reading.subject != asked.subject:
        return 0.0
    said = _said_words(fact)
    shared = sum(1 for word in asked.words if word in said or len(word) >= 4 and any(
        other.startswith(word) or len(other) >= 4 and word.startswith(other) for other in said))  # teach, teacher
    return (2.0 if reading.slot in asked.slots else 0.0) + shared


_ENOUGH = 2.0


def _latest_per_slot(found: list[tuple[KnownFact, Fact]]) -> list[KnownFact]:
    """Newest first; in a kind one value fills at a time, only the newest statement (one that only
    ends a value, "you left Acme", only when nothing newer names one)."""
    found = sorted(found, key=lambda pair: pair[0].said_at.timestamp() if pair[0].said_at else 0.0, reverse=True)
    if any(r.slot == "pet" and r.value == "alive" for _, r in found):  # the pets they have, not the ones gone
        found = [(f, r) for f, r in found if not (r.slot == "pet" and r.value == "gone")]
    if any(not (r.change and r.ended) for _, r in found):  # what is, before what they said has ended
        found = [(f, r) for f, r in found if not (r.change and r.ended)]
    kept, filled = [], set()
    for fact, reading in sorted(found, key=lambda pair: not pair[1].value):  # values first, stable by time
        slot = (reading.subject, reading.slot)
        if reading.slot in EXCLUSIVE_SLOTS and reading.value not in ("yes", "no", "+", "-"):
            if slot in filled:
                continue
            filled.add(slot)
        kept.append(fact)
    return kept


def answer_from_facts(message: str, facts: Sequence[KnownFact]) -> str | None:
    """The answer a question about the person gets from their facts: the current value first (the
    past one when the question is about the past), or None when no fact answers it."""
    asked = question_about(message) if facts else None
    if asked is None:
        return None
    scored = []
    for fact in facts:
        reading = fact_reading(fact.text)
        if reading is not None and (score := _score(asked, reading, fact)) >= _ENOUGH:
            scored.append((score, fact, reading))
    # The best answers among what holds now, or among what held before for a question about the past.
    scored = [entry for entry in scored if (entry[1].valid_until is not None) == asked.past]
    if not scored:
        return None
    # What is answers before what they said has ended ("you work at Monzo", not "you left the café"),
    # however many of the question's words the ending shares.
    holding = [entry for entry in scored if not (entry[2].change and entry[2].ended and not entry[2].value)]
    scored = holding or scored
    best = max(score for score, _, _ in scored)
    found = [(fact, reading) for score, fact, reading in scored if score >= best - 0.5]
    current = _latest_per_slot([(f, r) for f, r in found if f.valid_until is None])
    ended = sorted((f for f, _ in found if f.valid_until is not None), key=lambda f: f.valid_until, reverse=True)
    if asked.past:
        if not ended:
            return None
        said = [f"{_in_the_past(to_person(f.text))} (until {day_text(f.valid_until)})" for f in ended[:2]]
        return "Before that, " + "; ".join(s[:1].lower() + s[1:] for s in said) + "."
    if not current:
        return None
    said = [f"{to_person(f.text)}{_when(f)}" for f in current[:3]]
    return ". ".join(said) + "."


def said_to_person(text: str) -> str:
    """A stored fact said to the person (memory/engine/wording.py)."""
    return to_person(text)


_PAST_VERBS = (("you live ", "you lived "), ("you work ", "you worked "), ("you're ", "you were "),
               ("you are ", "you were "), ("you have ", "you had "), ("you like ", "you liked "),
               ("you play ", "you played "), (" is ", " was "))


def _in_the_past(sentence: str) -> str:
    lowered = sentence[:1].lower() + sentence[1:]
    for now, then in _PAST_VERBS:
        if now in lowered:
            lowered = lowered.replace(now, then, 1)
            break
    return lowered[:1].upper() + lowered[1:]


def _when(fact: KnownFact) -> str:
    return f" (you told me on {day_text(fact.said_at)})" if fact.said_at else ""


KNOWN_FACTS_IN_PROMPT = 30


def with_known_facts(items: Sequence[RecalledItem], facts: Sequence[KnownFact], *,
                     limit: int = KNOWN_FACTS_IN_PROMPT) -> list[RecalledItem]:
    """A model's prompt carries what is known of the person: the recalled items, with the current
    facts first in their section and the superseded ones after them marked with their period
    ("until March 2026; since then: …"). A fact the recall found already is not repeated."""
    if not facts:
        return list(items)
    recalled = {item.ref for item in items if item.kind == "kb_fact"}
    current = [f for f in facts if f.valid_until is None and f.id not in recalled][:limit]
    ended = [f for f in facts if f.valid_until is not None and f.id not in recalled][:max(0, limit - len(current))]
    known = [RecalledItem(kind="kb_fact", ref=f.id, text=f.text, score=1.0, timestamp=f.said_at,
                          breakdown={"known": 1.0}) for f in current]
    known += [RecalledItem(kind="kb_fact", ref=f.id, text=superseded_text(f.text, f.valid_until, f.successor),
                           score=0.5, timestamp=f.said_at,
                           breakdown={"known": 1.0, "superseded": 0.5, "until": f.valid_until.timestamp()})
              for f in ended if f.valid_until is not None]
    others = [item for item in items if item.kind != "kb_fact"]
    facts_recalled = [item for item in items if item.kind == "kb_fact"]
    now = [item for item in facts_recalled if "superseded" not in item.breakdown]
    then = [item for item in facts_recalled if "superseded" in item.breakdown]
    return [*others, *now, *known[:len(current)], *then, *known[len(current):]]
