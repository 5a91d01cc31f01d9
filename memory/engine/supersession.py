"""Facts that change: which current memory a new statement supersedes, offline.

A statement is read into claims: whose (the speaker, or someone named by their relation to the
speaker), which slot (where they live, who employs them, their partner, a pet, their diet, a
preference) and which value. A claim about the same subject and slot as a current memory, with a
different value, makes that memory a candidate; a change word ("moved", "quit", "no longer",
"now") or naming the old value ("from Leeds") raises the confidence. Mentions ("I visited York"),
hypotheticals ("if we moved to York"), plans, questions, jokes and other people's facts make no
claim about the speaker's slot. Pure and deterministic: the caller passes the texts in.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .reading import EXCLUSIVE_SLOTS, SELF, Reading, read
from .text import split_sentences, stem

__all__ = ["EXCLUSIVE_SLOTS", "SELF"]
SLOT_TITLES = {"residence": "where they live", "employer": "where they work", "occupation": "their job",
               "partner": "their partner", "diet": "their diet", "favorite": "a favourite",
               "preference": "what they like", "activity": "what they do", "pet": "a pet"}


@dataclass(frozen=True)
class SupersessionParams:
    """Confidence of a candidate: a base per kind of clash plus what the statement adds."""

    base: float = 0.55
    change_bonus: float = 0.3
    names_old_bonus: float = 0.3
    supersede_at: float = 0.8  # at or above: supersede at once
    review_at: float = 0.5  # at or above (and below supersede_at): ask an operator


class Decision(enum.StrEnum):
    SUPERSEDE = "supersede"
    REVIEW = "review"
    NONE = "none"


@dataclass(frozen=True)
class Memory:
    """A current long-term memory as the detector sees it."""

    id: str
    text: str
    at: datetime | None = None
    source: str = ""


# What one clause says about a slot (subject, slot, key, value, ended, change, past, clause).
Claim = Reading


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    confidence: float
    slot: str
    old_id: str | None
    reason: str


NO_VERDICT = Verdict(decision=Decision.NONE, confidence=0.0, slot="", old_id=None,
                     reason="no clash with a current memory")

# --- what a statement claims ------------------------------------------------------------------

# The kinds whose values the detector compares: a later value of the same thing ends the earlier.
COMPARED_SLOTS = EXCLUSIVE_SLOTS | {"preference", "activity", "pet", "plan", "family"}
SLOT_TITLES.update({"plan": "a plan", "family": "their family", "other": "what they said", "possession":
                    "what they own", "language": "a language", "health": "their health", "diet": "their diet",
                    "age": "their age", "birthday": "their birthday", "name": "their name"})
_APART = frozenset({"single", "divorced", "separated", "widowed"})


def claims_of(text: str) -> list[Claim]:
    """Every claim a statement (or a stored fact) makes about a kind the detector compares, read by
    the language pipeline (memory/engine/reading/)."""
    return [r for r in read(text) if r.slot in COMPARED_SLOTS and (r.value or r.ended)]


# --- comparing claims --------------------------------------------------------------------------

def _words(value: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z0-9]+", value.lower())} - {"the", "a", "an", "of", "in", "at"}


def same_value(first: str, second: str) -> bool:
    """Values agree when one's words hold the other's ("York" and "York city", "the bakery")."""
    if first and first == second:  # "+" and "+", "gone" and "gone"
        return True
    a, b = _words(first), _words(second)
    return bool(a and b) and (a <= b or b <= a)


def _same_key(slot: str, new: str, old: str) -> bool:
    if slot == "pet":
        name, _, species = old.partition("|")
        new_name, _, new_species = new.partition("|")
        if new_species and new_name:  # a new pet with a name: the same pet only by name
            return new_name == name
        return new in {name, species} and bool(new)
    return bool(new and old) and same_value(new, old)


def _clash(new: Claim, old: Claim) -> str:
    """Why `new` ends `old` ("" when it does not): the two share subject, slot and key."""
    if old.past:
        return ""
    if new.ended and (new.ended == "*" or same_value(new.ended, old.value)):
        if new.value and not same_value(new.value, old.value):
            return f"{old.value!r} became {new.value!r}"
        return f"says {old.value!r} is over"
    if new.past:
        if new.slot == "preference" and new.value == old.value:
            return f"says they used to like {old.key!r}"
        if same_value(new.value, old.value) and new.slot in EXCLUSIVE_SLOTS:
            return f"says {old.value!r} was in the past"
        return ""
    if not new.value or not old.value or same_value(new.value, old.value):
        return ""
    if new.slot == "partner":
        names = [v for v in (new.value, old.value) if v not in _APART | {"married", "engaged"}]
        if len(names) == 1 and {new.value, old.value} & {"married", "engaged"}:
            return ""  # "married" and a name agree
    if new.slot in EXCLUSIVE_SLOTS or new.slot in {"preference", "activity", "pet"}:
        return f"{old.value!r} became {new.value!r}"
    return ""


# Relations a person has one of: a new name for one is a correction, not a second one.
_ONE_OF = frozenset({"mum", "mom", "mother", "mam", "dad", "father", "husband", "wife", "stepmum", "stepmom",
                     "stepdad", "stepfather", "stepmother"})


def _renamed(new: Claim, old: Claim) -> str:
    """ "my mum's name is Rita" after "Rosa is my mum": the one mum, named again."""
    relation = new.value.split()[-1] if new.value else ""
    if relation in _ONE_OF and new.value == old.value and new.key and old.key and new.key != old.key:
        return f"their {relation} is {new.key.title()!r}, not {old.key.title()!r}"
    return ""


def _confidence(new: Claim, old: Claim, reason: str, params: SupersessionParams) -> float:
    confidence = params.base
    if new.change:
        confidence += params.change_bonus
    if new.ended and new.ended != "*" and same_value(new.ended, old.value):
        confidence += params.names_old_bonus
    if new.past and new.slot != "preference":
        confidence += params.change_bonus  # "used to live in Leeds" says plainly it is over
    return round(min(confidence, 0.98), 2)


def supersession_candidates(statement: str, current: Sequence[Memory], *,
                            params: SupersessionParams | None = None) -> list[Verdict]:
    """Current memories that `statement` may supersede, most confident first."""
    params = params or SupersessionParams()
    new_claims = [c for c in claims_of(statement) if c.value or c.ended]
    if not new_claims and not any(r.change and r.ended for r in read(statement)):
        return []
    verdicts: dict[str, Verdict] = {}
    for memory in current:
        ended = _named_ending(statement, memory, params)
        if ended is not None:
            verdicts[memory.id] = ended
        for old in claims_of(memory.text):
            for new in new_claims:
                if (new.subject, new.slot) != (old.subject, old.slot):
                    continue
                if new.slot == "family":
                    reason = _renamed(new, old)
                elif (new.key or old.key) and not _same_key(new.slot, new.key, old.key):
                    continue
                else:
                    reason = _clash(new, old)
                if not reason:
                    continue
                confidence = _confidence(new, old, reason, params)
                decision = (Decision.SUPERSEDE if confidence >= params.supersede_at
                            else Decision.REVIEW if confidence >= params.review_at else Decision.NONE)
                if decision is Decision.NONE:
                    continue
                whose = "their" if new.subject == SELF else f"their {new.subject}'s"
                text = (f"{SLOT_TITLES.get(new.slot, new.slot).replace('their', whose, 1)}: {reason}"
                        f" (\"{new.clause}\"{', a change word' if new.change else ''})")
                verdict = Verdict(decision=decision, confidence=confidence, slot=new.slot, old_id=memory.id,
                                  reason=text)
                if memory.id not in verdicts or verdicts[memory.id].confidence < confidence:
                    verdicts[memory.id] = verdict
    return sorted(verdicts.values(), key=lambda v: -v.confidence)


_LOOSE_WORDS = frozenset(stem(w) for w in "old new tbh lol just really my our their thing stuff one".split())


def _named_ending(statement: str, memory: Memory, params: SupersessionParams) -> Verdict | None:
    """A statement that names what ended ("Sold the Focus", "I've dropped the Japanese") ends the
    memory that holds it, whatever its kind: the person named it."""
    for new in read(statement):
        if not (new.change and new.ended and new.ended != "*") or new.slot in EXCLUSIVE_SLOTS:
            continue
        named = _words(new.ended) - _LOOSE_WORDS
        if not named or not named & _words(memory.text) or any(
                old.subject != new.subject for old in read(memory.text)):
            continue  # "cancelled my gym membership" ends "User goes to the gym every morning"
        confidence = round(min(params.base + params.change_bonus + params.names_old_bonus, 0.98), 2)
        return Verdict(decision=Decision.SUPERSEDE, confidence=confidence, slot=new.slot, old_id=memory.id,
                       reason=f"says {new.ended!r} is over (\"{new.clause}\")")
    return None


# Words by which a statement says it replaces what was said of the same thing ("switched to green tea",
# "I'm at Monzo now", "sorry, it's aspirin").
_REPLACING = frozenset(stem(w) for w in """switch switched instead anymore longer replace replaced upgrade upgraded
swap swapped now nowadays these actually sorry meant wrong mixed autocorrect""".split())
# Kinds a person has many of at once: a new one is another, not a replacement.
_MANY = frozenset({"pet", "family", "partner", "name", "trip"})
# Kinds the reader tells apart by little ("the anniversary is in August" a plan, "…in October
# actually" something said): for a statement that says it replaces, one kind.
_LOOSE_KINDS = frozenset({"plan", "activity", "other"})
SAME_TOPIC = 0.6  # MiniLM cosine of two facts' texts at or above which they speak of the same thing


def topic_verdicts(statement: str, new_text: str, current: Sequence[Memory],
                   similarity: Callable[[str, str], float | None], *,
                   params: SupersessionParams | None = None) -> list[Verdict]:
    """Current memories a statement that says it replaces something ("switched to", "now",
    "sorry, it's …") ends by meaning: the same person, the same kind, a text close in meaning
    (`similarity`, MiniLM's cosine) that says it otherwise. For what the kind-by-kind comparison
    (supersession_candidates) cannot tell: coffee then green tea, Valorant then Baldur's Gate."""
    params = params or SupersessionParams()
    if not _words(statement) & _REPLACING:
        return []
    news = [r for r in read(new_text) if r.slot not in _MANY]
    found = []
    for memory in current:
        olds = read(memory.text)
        same = [n for n in news for o in olds if n.subject == o.subject and (
            n.slot == o.slot or {n.slot, o.slot} <= _LOOSE_KINDS)]
        if not same or memory.text.lower() == new_text.lower():
            continue
        closeness = similarity(new_text, memory.text)
        if closeness is None or closeness < SAME_TOPIC:
            continue
        confidence = round(min(params.base + params.change_bonus, 0.98), 2)
        found.append(Verdict(decision=Decision.SUPERSEDE if confidence >= params.supersede_at else Decision.REVIEW,
                             confidence=confidence, slot=same[0].slot, old_id=memory.id,
                             reason=f"{SLOT_TITLES.get(same[0].slot, same[0].slot)}: said otherwise, of the same "
                                    f"thing (closeness {closeness:.2f}; \"{statement[:120]}\")"))
    return sorted(found, key=lambda v: -v.confidence)


def supersession_decide(statement: str, current: Sequence[Memory], *,
                        params: SupersessionParams | None = None) -> Verdict:
    """The most confident candidate, or NO_VERDICT."""
    found = supersession_candidates(statement, current, params=params)
    return found[0] if found else NO_VERDICT


def statement_of(fact: str, utterance: str) -> str:
    """The sentences of the utterance a fact was drawn from: change words ("now", "anymore") that
    the fact's short form dropped are there. The fact itself when no sentence shares its words."""
    fact_words = _words(fact) - _words("user they their them and others is has")
    chosen = [s for s in split_sentences(utterance)
              if fact_words and len(fact_words & _words(s)) * 2 >= len(fact_words)]
    return " ".join(chosen) if chosen else fact


# --- the model's confirmation ------------------------------------------------------------------

CONFIRM_PROMPT = (
    "You keep a memory of facts about a user. An earlier fact and a newer statement by the user follow. "
    "Does the newer statement mean the earlier fact is no longer true (the user moved, changed job, "
    "partner, pet, diet or taste)? A visit, a plan, a hypothetical, a joke or a fact about someone else "
    'does not. Answer with JSON: {"verdict": "supersede" | "both_true" | "unsure", "reason": "..."}'
)
_VERDICT_WORDS = {"supersede": Decision.SUPERSEDE, "supersedes": Decision.SUPERSEDE, "superseded": Decision.SUPERSEDE,
                  "yes": Decision.SUPERSEDE, "true": Decision.SUPERSEDE, "both_true": Decision.NONE,
                  "both true": Decision.NONE, "no": Decision.NONE, "false": Decision.NONE,
                  "unsure": Decision.REVIEW, "uncertain": Decision.REVIEW}


@dataclass(frozen=True)
class Confirmation:
    decision: Decision  # SUPERSEDE: confirmed; NONE: rejected; REVIEW: the model is unsure
    reason: str


def confirmation_texts(old: str, statement: str) -> list[str]:
    return [f"Earlier fact: {old}", f"Newer statement: {statement}"]


def validate_confirmation(value: object) -> Confirmation:
    """The model's answer, read tolerantly: the verdict's usual spellings, a boolean, a bare word."""
    if isinstance(value, str):
        value = {"verdict": value}
    if not isinstance(value, dict):
        raise ValueError("expected an object with a 'verdict'")
    verdict = value.get("verdict", value.get("supersedes", value.get("decision")))
    word = str(verdict).strip().lower() if verdict is not None else ""
    if word not in _VERDICT_WORDS:
        raise ValueError(f"unknown verdict {verdict!r}; expected supersede, both_true or unsure")
    reason = " ".join(str(value.get("reason", "")).split())[:300]
    return Confirmation(decision=_VERDICT_WORDS[word], reason=reason)


def period_label(valid_until: datetime | None) -> str:
    """How a superseded memory is marked in a prompt: "until March 2025"."""
    return f"until {valid_until:%B %Y}" if valid_until is not None else ""


# "How old am I?", "Where am I from originally?" and "my first language" ask about now.
_PAST_QUESTION = re.compile(r"\b(?:before|used to|use to|previous(?:ly)?|former(?:ly)?|earlier|my old|"
                            r"back then|in the past)\b", re.I)


def asks_about_the_past(query: str) -> bool:
    """ "Where did I live before York?": a question a superseded memory answers."""
    return bool(_PAST_QUESTION.search(query))


def says_superseded(sentence: str, superseded: Sequence[str]) -> bool:
    """Whether a sentence states a value that a superseded memory held: once Leeds is history,
    "I live in Leeds" answers "where do I live?" only about the past."""
    bases = {_SUPERSEDED_MARK.sub("", text).lower() for text in superseded}
    if any(reading.text.lower() in bases for reading in read(sentence)):
        return True  # "I drive a 2009 Honda Civic", read as the fact that was ended: of any kind
    old = [c for text in superseded for c in claims_of(text) if c.value and not c.past]
    if not old:
        return False
    return any(claim.value and not claim.past and (claim.subject, claim.slot) == (stale.subject, stale.slot)
               and (claim.key == stale.key or _same_key(claim.slot, claim.key, stale.key))
               and same_value(claim.value, stale.value)
               for claim in claims_of(sentence) for stale in old)


# What superseded_text adds to a fact: its period and what took its place.
_SUPERSEDED_MARK = re.compile(r" \((?:until [^;)]*)?(?:; since then: .+)?\)$")
_SINCE_THEN = re.compile(r"; since then: (?P<successor>.+)\)$")


def superseded_text(text: str, valid_until: datetime | None, successor: str = "") -> str:
    """A superseded memory as a prompt shows it: "User lives in Leeds (until June 2025; since
    then: User moved to York)"."""
    since = f"; since then: {successor}" if successor else ""
    return f"{text} ({period_label(valid_until)}{since})"


def successor_in(text: str) -> str:
    """The memory that superseded this one, from superseded_text's form ("" when none is named)."""
    match = _SINCE_THEN.search(text)
    return match.group("successor") if match else ""
