"""Answers from what is known: a question about the person answered from their current facts, the
past value when the question is about the past, before any turn is quoted.

A question is read into whose (the person, or someone named by their relation to them), which slots
(memory/engine/facts.py) and, for a favourite, a plan or a person by name, what it names. The facts
are the person's long-term facts, each with when it was said and, once superseded, when it ended
and what took its place. Pure and deterministic: the caller passes the facts and `now` in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from .facts import Fact, fact_reading
from .supersession import EXCLUSIVE_SLOTS, SELF, asks_about_the_past, superseded_text
from .text import content_terms, stem
from .types import RecalledItem
from .when import day_text


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
    polarity: str = ""  # "+" likes, "-" dislikes
    past: bool = False


_RELATIONS = (r"wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|spouse|mom|mum|mother|dad|father|parents|"
              r"brother|sister|son|daughter|niece|nephew|friend|best friend|boss|cousin|aunt|uncle|grandma|"
              r"grandmother|grandpa|grandfather|neighbou?r|roommate|flatmate|colleague|coworker")
_PARTNER = re.compile(r"\b(?:partner|girlfriend|boyfriend|wife|husband|fianc\w*|spouse|dating|seeing anyone|"
                      r"seeing someone|married|single|relationship)\b", re.I)
_SLOT_QUESTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("birthday", re.compile(r"\bbirthday\b", re.I)),
    ("name", re.compile(r"\bmy (?:full )?name\b|\bwho am i\W*$|\bwhat am i called\b", re.I)),
    ("residence", re.compile(r"\b(?:where|which|what)\b.*\b(?:live|living|based|home|reside)\b|"
                             r"\bwhere(?:'s| is) (?:my )?home\b|\bwhere am i (?:living|based|from)\b", re.I)),
    ("employer", re.compile(r"\bwho (?:do|did) i work for\b|\b(?:where|which company|what company|which firm)\b.*"
                            r"\b(?:work|working|employed)\b|\bmy (?:employer|company)\b", re.I)),
    ("occupation", re.compile(r"\bmy (?:job|occupation|profession|career|work)\b|\bwhat (?:do|did) i do\b|"
                              r"\bfor a living\b|\bwhat (?:is|was) my (?:job|role)\b", re.I)),
    ("partner", _PARTNER),
    ("pet", re.compile(r"\b(?:pets?|dog|cat|rabbit|bunny|hamster|parrot|bird|fish|puppy|kitten|turtle|horse|snake|"
                       r"lizard)\b", re.I)),
    ("diet", re.compile(r"\b(?:diet|vegetarian|vegan|pescatarian|pescetarian|eat meat|meat|what do i eat)\b", re.I)),
    ("favorite", re.compile(r"\bfavou?rite\b", re.I)),
    ("health", re.compile(r"\b(?:allergic|allerg\w*|health|condition|medical|illness|asthma|diabetes|intolerant)\b",
                          re.I)),
    ("plan", re.compile(r"\b(?:when (?:am|is|are|do|will)|plans?|trip|flying|flight|travel\w*|exam|appointment|"
                        r"interview|wedding|holiday|vacation)\b", re.I)),
    ("trip", re.compile(r"\b(?:where am i (?:visiting|staying|travelling|traveling)|visiting|trip)\b", re.I)),
    ("activity", re.compile(r"\b(?:sport|sports|play|hobby|hobbies)\b", re.I)),
    ("preference", re.compile(r"\b(?:do|did) i (?:like|love|enjoy|hate|dislike)\b|\bwhat (?:food |music |things )?"
                              r"(?:do|did) i (?:like|love|enjoy|hate|dislike)\b|\b(?:dislike|can't stand|enjoy)\b",
                              re.I)),
)
_WHO_IS = re.compile(r"\b(?i:who)(?:'s| is| was)\s+(?P<name>[A-Z][a-z]+)\b")
_RELATION_NAME = re.compile(r"\bmy (?P<relation>(?:(?:" + _RELATIONS + r")'s )?(?:" + _RELATIONS + r"))(?:'s name|\b)",
                            re.I)
_WHOSE = re.compile(r"\b(?:does|did|is|was) my (?P<relation>(?:(?:" + _RELATIONS + r")'s )?(?:" + _RELATIONS
                    + r"))\b(?!'s)", re.I)
_PARTNER_WORDS = {"wife", "husband", "partner", "boyfriend", "girlfriend", "fiance", "fiancee", "fiancé", "fiancée",
                  "spouse"}


def question_about(message: str) -> Asked | None:
    """What a question asks about the person, or None when it asks nothing a fact answers."""
    past = asks_about_the_past(message)
    who = _WHO_IS.search(message)
    if who and who.group("name").lower() not in ("i", "my"):
        return Asked(subject=SELF, slots=("family", "partner"), name=who.group("name").lower(), past=past)
    slots = tuple(slot for slot, pattern in _SLOT_QUESTIONS if pattern.search(message))
    whose = _WHOSE.search(message)
    subject = SELF
    if whose and whose.group("relation").lower() not in _PARTNER_WORDS and set(slots) & {"residence", "employer",
                                                                                         "occupation", "diet"}:
        subject = whose.group("relation").lower()
    relation = _RELATION_NAME.search(message)
    named = relation.group("relation").lower() if relation else ""
    if named and named.split()[-1] not in _PARTNER_WORDS and subject == SELF and (
            "name" in message.lower() or re.search(r"\bwho(?:'s| is| are) my\b", message, re.I)):
        return Asked(subject=SELF, slots=("family",), relation=named, past=past)
    if not slots:
        return None
    if slots[0] in ("birthday", "name"):  # "when is my birthday" asks no plan
        slots = slots[:1]
    if "partner" in slots and "pet" not in slots:
        slots = ("partner", "family") if relation else ("partner",)
    polarity = "-" if re.search(r"\b(?:hate|dislike|can't stand)\b", message, re.I) else "+"
    return Asked(subject=subject, slots=slots, polarity=polarity, past=past)


def _matches(asked: Asked, reading: Fact, fact: KnownFact, words: set[str]) -> bool:
    if reading.slot not in asked.slots or reading.subject != asked.subject:
        return False
    if asked.name:
        return reading.key == asked.name or reading.value.lower() == asked.name
    if asked.relation and reading.slot == "family":
        return reading.value.lower().endswith(asked.relation)
    if reading.slot == "preference":
        return (" dislikes " in fact.text or " dislike " in fact.text) == (asked.polarity == "-")
    if reading.slot in ("favorite", "plan", "trip") and words:
        said = {stem(t.stem) for t in content_terms(fact.text)}
        return bool(words & said) or reading.slot == "favorite" and not words
    return True


_ASKED_FRAME = {stem(w) for w in ("favourite favorite favourit what when where who which is my do did am i the plan "
                                  "plans trip name time date day going").split()}


def said_to_person(text: str) -> str:
    """A stored fact said to the person: "User lives in Porto" → "You live in Porto"."""
    plan = re.match(r"^User's plan: (?P<value>.+)$", text)
    if plan:
        value = re.sub(r"\btheir\b", "your", re.sub(r"\bthey're\b", "you're", plan.group("value")))
        sentence = f"you're {value}" if re.match(r"\w+ing\b", value) else value
    else:
        sentence = second_person(text)
    return sentence[:1].upper() + sentence[1:]


_TO_YOU = {"is": "you're", "has": "you have", "was": "you were", "does": "you do"}


def second_person(text: str) -> str:
    """A stored fact's subject said to the person: "User's sister" → "your sister", "User lives" →
    "you live", "User is" → "you're"; "their" → "your"."""
    text = re.sub(r"\bUser's\b", "your", text.strip())
    text = re.sub(r"\bUser (is|has|was|does)\b", lambda m: _TO_YOU[m.group(1)], text)
    text = re.sub(r"\bUser ([a-z]+?)(?:es|s)\b(?<!ss)", lambda m: f"you {_base(m.group(0).split()[1])}", text)
    text = re.sub(r"\bUser\b", "you", text)
    return re.sub(r"\btheir\b", "your", text)


def _base(verb: str) -> str:
    """ "lives" → "live", "watches" → "watch", "plays" → "play"."""
    if verb.endswith(("ches", "shes", "xes", "sses")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") else verb


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


def _latest_per_slot(found: list[tuple[KnownFact, Fact]]) -> list[KnownFact]:
    """Newest first; in a slot one value fills at a time, only the newest statement (one that only
    ends a value, "you left Acme", only when nothing newer names one). A partner named as such
    answers before the family facts that name them."""
    found = sorted(found, key=lambda pair: pair[0].said_at.timestamp() if pair[0].said_at else 0.0, reverse=True)
    if any(r.slot == "partner" for _, r in found):
        found = [(f, r) for f, r in found if r.slot != "family"]
    kept, filled = [], set()
    for fact, reading in sorted(found, key=lambda pair: not pair[1].value):  # values first, stable by time
        slot = (reading.subject, reading.slot)
        if reading.slot in EXCLUSIVE_SLOTS:
            if slot in filled:
                continue
            filled.add(slot)
        kept.append(fact)
    return kept


def answer_from_facts(message: str, facts: Sequence[KnownFact]) -> str | None:
    """The answer a question about the person gets from their facts: the current value first (the
    past one when the question is about the past), or None when no fact answers it."""
    asked = question_about(message)
    if asked is None or not facts:
        return None
    words = {t.stem for t in content_terms(message)} - _ASKED_FRAME
    found = []
    for fact in facts:
        reading = fact_reading(fact.text)
        if reading is not None and _matches(asked, reading, fact, words):
            found.append((fact, reading))
    current = _latest_per_slot([(f, r) for f, r in found if f.valid_until is None])
    ended = sorted((f for f, _ in found if f.valid_until is not None), key=lambda f: f.valid_until, reverse=True)
    if asked.past:
        if not ended:
            return None
        said = [f"{_in_the_past(said_to_person(f.text))} (until {day_text(f.valid_until)})" for f in ended[:2]]
        return "Before that, " + "; ".join(s[:1].lower() + s[1:] for s in said) + "."
    if not current:
        return None
    said = [f"{said_to_person(f.text)}{_when(f)}" for f in current[:3]]
    return ". ".join(said) + "."


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
