"""Reading one clause: whether it states something of the person (not a request, a mood, a
passing moment), and the readings it makes, in one form for the kinds one value fills at a time."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from .. import lexicon as lx
from .clauses import (
    DROP_LEADS,
    JOKES,
    SELF,
    Clause,
    Reading,
    hedged,
    is_negated,
    mentions_self,
    possessor,
    tense_of,
    unasserted,
    whose_of,
)
from .kinds import employer_of, entities, favourite, kind_of, kind_verb, object_of, occupation, phrase, value_of
from .people import lasting, name_given, name_span
from .words import (
    GIVING_UP,
    clause_text,
    fact_key,
    fact_value,
    given_up_in,
    name_of,
    owner_words,
    says_something,
    spoken_words,
    templated,
)

if TYPE_CHECKING:
    from spacy.tokens import Span, Token


# --- reading one clause ---------------------------------------------------------------------------

def _denied(clause: Clause) -> str:
    """The value a clause says is wrong: "Rex, not Max" → "max"; "on 16 March, not the 14th"."""
    for token in clause.head.doc[clause.tokens[0].i:clause.tokens[-1].i + 1] if clause.tokens else ():
        if token.lower_ == "not" and token.dep_ == "neg" and token.head.i != clause.head.i:
            following = [t for t in token.head.subtree if t.i > token.i and not t.is_punct]
            if token.head.dep_ in ("appos", "conj", "npadvmod", "dobj", "pobj", "attr") and token.head.i > token.i:
                return value_of(" ".join(t.text for t in token.head.subtree if t.i > token.i))
            if following:
                return value_of(" ".join(t.text for t in following))
        if token.lower_ == "not" and token.i + 1 < len(token.doc) and token.i > clause.head.i:
            rest = token.doc[token.i + 1:clause.tokens[-1].i + 1]
            if token.i > 0 and token.doc[token.i - 1].is_punct:
                return value_of(rest.text.strip(" .!,"))
    return ""


def _changed(clause: Clause, sent: Span) -> bool:
    words = {t.lemma_.lower() for t in sent} | {t.lower_ for t in sent}
    return bool(words & lx.CHANGE_WORDS) or "no longer" in sent.text.lower() or _went(clause)


def _went(clause: Clause) -> bool:
    """ "I went vegan", "we went freelance": "went" with what one became, not where one went."""
    head = clause.head
    return head.lemma_.lower() == "go" and head.tag_ == "VBD" and any(
        c.dep_ in ("acomp", "dobj", "attr", "oprd") and c.pos_ in ("ADJ", "NOUN") and not c.lower_.endswith("ing")
        and c.ent_type_ not in ("GPE", "LOC", "FAC") for c in head.children)


def _slot_reading(clause: Clause, whose: str, slot: str, sent: Span) -> Reading | None:
    """A reading of a kind one value fills at a time, in its one form."""
    head = clause.head
    negated = is_negated(clause)
    base = {"subject": whose, "slot": slot, "change": _changed(clause, sent), "clause": clause.text,
            "negated": negated}
    if slot == "residence":
        named = [e.root for e in entities(clause, "GPE", "LOC") if e.root.dep_ in ("pobj", "attr", "appos")]
        place = named[0] if named else object_of(head, "in", "to", "into", "near")
        old = None
        if head.lemma_ in ("move", "relocate", "emigrate"):  # "moved from Leeds", "moved out of Leeds"
            old = object_of(head, "from", "of") or next(
                (o for c in head.children if c.lower_ == "out" and (o := object_of(c, "of")) is not None), None)
        if place is not None and old is not None and place.i == old.i:
            place = object_of(head, "to", "into")
        if place is not None and place.pos_ == "NOUN":
            inner = object_of(place, "in", "near", "outside")
            place = inner if inner is not None and inner.pos_ == "PROPN" else place
        if place is None or place.pos_ not in ("PROPN", "NOUN"):
            if old is not None:
                said = phrase(old)
                return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                               text=f"{owner_words(whose)[0]} moved away from {said}")
            return None
        said = _place(place)
        if negated:
            return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                           text=f"{owner_words(whose)[0]} no longer lives in {said}")
        return Reading(**base, value=value_of(said), ended=value_of(phrase(old)) if old is not None else "",
                       text=templated("residence", whose, said, name=name_of(clause)))
    if slot == "employer":
        verb = kind_verb(clause)
        org = employer_of(verb) or object_of(head, "at", "for", "with")
        if org is None:
            return None
        said = phrase(org)
        if verb.lemma_ in ("leave", "quit", "resign", "lose", "lay", "fire", "sack"):
            return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                           text=f"{owner_words(whose)[0]} left their job at {said}")
        if negated:
            return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                           text=f"{owner_words(whose)[0]} no longer works at {said}")
        return Reading(**base, value=value_of(said),
                       text=_located(clause, templated("employer", whose, said, name=name_of(clause))))
    if slot == "occupation":
        job = "retired" if head.lemma_ == "retire" or "retired" in clause.lemmas else occupation(clause)
        job = re.sub(r"^(?:an?|the)\s+", "", job, flags=re.I)
        if not job or negated:
            return None
        text = templated("occupation", whose, job.lower(), name=name_of(clause))
        org = next((t for t in clause.tokens if t.dep_ == "pobj" and t.head.lower_ in ("at", "for")
                    and t.pos_ == "PROPN"), None)
        return Reading(**base, value=value_of(job), key=value_of(phrase(org)) if org is not None else "",
                       text=_located(clause, f"{text} at {phrase(org)}" if org is not None else text))
    if slot == "diet":
        label = next((lx.DIET_LABELS[t.lower_] for t in clause.tokens if t.lower_ in lx.DIET_LABELS), "")
        verb = kind_verb(clause)
        if not label and verb.lemma_ == "eat" and any(t.lemma_ == "meat" for t in clause.tokens):
            off = negated or head.lemma_ in ("stop", "quit", "give")  # "I stopped eating meat"
            said = "vegetarian" if off else "omnivore"
            return Reading(**{**base, "change": base["change"] or off}, value=said,
                           text=clause_text(clause) if off else f"{owner_words(whose)[0]} eats meat")
        if not label:
            return None
        if negated or head.lemma_ in ("stop", "quit", "give"):
            return Reading(**{**base, "change": True}, value="", ended=label,
                           text=f"{owner_words(whose)[0]} is no longer {label}")
        return Reading(**base, value=label, text=templated("diet", whose, label))
    return None


def _employer_too(found: Reading) -> Reading | None:
    """ "I work at Acme as an accountant": a job at a named employer says where they work too (one
    fact, read for both kinds, so that leaving Acme ends it)."""
    if found.slot == "occupation" and found.key:
        return replace(found, slot="employer", value=found.key, key="")
    return None


_STATUSES = frozenset({"single", "married", "engaged", "divorced", "separated", "widowed"})


def _partner_reading(clause: Clause, sent: Span) -> Reading | None:
    """A partner by name ("I'm dating Anna", "engaged to Chris") or a status ("I'm single")."""
    head = clause.head
    text = clause_text(clause)
    base = {"subject": SELF, "slot": "partner", "text": text, "clause": clause.text, "change": _changed(clause, sent)}
    ex = next((t for t in clause.tokens if t.lower_ == "ex"), None)
    if ex is not None:
        named = name_given(ex) or next((t for t in clause.tokens if t.pos_ == "PROPN"), None)
        return Reading(**{**base, "change": True}, value="", ended=named.lower_ if named is not None else "*")
    status = head.lower_ if head.lower_ in _STATUSES else next(
        (c.lower_ for c in head.children if c.dep_ in ("acomp", "attr", "oprd") and c.lower_ in _STATUSES), "")
    partner = object_of(head, "to", "with") if head.lemma_ in ("marry", "engage", "get", "be") else None
    if head.lemma_ in ("date", "see", "marry") or status in ("married", "engaged"):
        partner = partner or next((c for c in head.children if c.dep_ == "dobj" and c.pos_ == "PROPN"), None)
    if partner is None:
        partner = next((t for t in sent if t.lemma_ == "name" and t.head.lemma_ == "be" and any(
            p.lower_ in ("her", "his", "their") for p in t.children)), None)
        partner = next((c for c in partner.head.children if c.dep_ == "attr" and c.pos_ == "PROPN"), None) \
            if partner is not None else None  # "I'm seeing someone new, her name is Ellie"
    if partner is not None and partner.pos_ == "PROPN":
        if partner.text not in text:  # "I'm seeing someone new, her name is Priya"
            base["text"] = f"User's partner is {name_span(partner)}"
        return Reading(**base, value=partner.lower_)
    if status:
        return Reading(**base, value=status, negated=is_negated(clause))
    return None


def _favourite_reading(clause: Clause, whose: str) -> Reading | None:
    """ "My favourite band is Wet Leg": kind "band", value "wet leg"."""
    subject = favourite(clause)
    value = next((c for c in clause.head.children if c.dep_ in ("attr", "acomp", "oprd")), None)
    if subject is None or value is None:
        return None
    said = " ".join(t.text for t in value.subtree if not t.is_punct and t.lower_ not in ("now", "these", "days"))
    return Reading(subject=whose, slot="favorite", key=subject.lemma_.lower(), value=value_of(said),
                   text=clause_text(clause), change=True, clause=clause.text)


def _place(token: Token) -> str:
    """A place as said, with the region that follows it ("Perth, Western Australia")."""
    said = phrase(token)
    said = re.sub(r"^(?:the|a|an)\s+", "", said) if token.pos_ == "PROPN" else said
    region = next((c for c in token.children if c.dep_ in ("appos", "npadvmod", "conj") and c.pos_ == "PROPN"
                   and c.i > token.i), None)
    return f"{said}, {phrase(region)}" if region is not None else said


def _located(clause: Clause, text: str) -> str:
    """A job's words with the city it is in, when the clause names one ("… at Siemens in Munich")."""
    city = next((t for t in clause.tokens if t.dep_ == "pobj" and t.head.lower_ == "in" and t.pos_ == "PROPN"), None)
    said = phrase(city) if city is not None else ""
    return f"{text} in {said}" if said and said not in text else text


_FIGURATIVE = frozenset({"basically", "practically", "literally", "virtually"})
_STRONG = frozenset({"diet", "allergy", "health", "preference", "language", "plan", "origin", "family", "pet",
                     "partner", "name", "age", "birthday"})
_ABOUT_OTHERS = frozenset({"residence", "employer", "occupation", "age", "health", "diet", "allergy", "origin",
                           "language", "education"})
REQUESTS = frozenset({"please", "pls", "plz"})


def imperative(clause: Clause) -> bool:
    """ "Give me five ideas", "Translate this, please": a request, not a statement."""
    head = clause.head
    bare = head.lower_ == head.lemma_.lower()  # "set a reminder", not "Got an iPhone" the tagger took for one
    if clause.subject is None and bare and head.lemma_.lower() not in set(lx.PREFERENCE_VERBS) | GIVING_UP and not any(
            c.dep_ == "aux" for c in head.children) and (head.tag_ == "VB" or head.lemma_.lower() in lx.REQUEST_VERBS):
        return True  # a bare verb with no subject: a request, or the rest of a "what I'd do" (never a statement)
    if clause.subject is not None or head.tag_ != "VB" or head.dep_ != "ROOT":
        return False
    first = next((t for t in clause.tokens if not t.is_punct and (t.lower_ not in DROP_LEADS or t.i == head.i)),
                 None)
    return first is not None and first.i == head.i and head.lemma_.lower() not in lx.PREFERENCE_VERBS


def passing(clause: Clause, sent: Span) -> bool:
    """A mood or a moment ("I'm so tired today", "starving right now"), not what they are."""
    head = clause.head
    if any(c.dep_ in ("acomp", "attr") and (c.lemma_.lower() in lx.MOODS or c.lower_ in lx.MOODS)
           for c in head.children):
        return True
    if head.lemma_.lower() in lx.MOODS or head.lemma_.lower() in ("feel", "buzz"):
        return True
    if kind_of(clause, SELF):
        return False  # "I'm working for Initech right now": a job, said now
    words = {t.lower_ for t in sent}
    dated = [e for e in entities(clause, "DATE") if not set(e.text.lower().split()) <= lx.NOW_WORDS | {"this"}]
    if tense_of(clause) == "past" and words & {"today", "tonight", "rn", "morning"} and not dated:
        return True  # "woke up late, spilled coffee on my shirt": the day's news
    if words & {"rn", "atm"}:
        return True
    now = {t.lower_ for t in clause.tokens} & {"today", "tonight", "now", "currently", "moment"}
    return bool(now) and ("right" in {t.lower_ for t in clause.tokens} or now & {"today", "tonight"}) \
        and tense_of(clause) == "present" and head.tag_ in ("VBP", "VBZ", "VBG")


def _idle(clause: Clause) -> bool:
    """ "I have a question", "I need help", "I get it": what the conversation needs, not the person."""
    head = clause.head.lemma_.lower()
    objects = [c for c in clause.head.children if c.dep_ in ("dobj", "attr", "xcomp", "ccomp")]
    if head in lx.NON_FACT_VERBS:
        return True
    return head in ("have", "get", "got") and bool(objects) and all(
        o.lemma_.lower() in lx.IDLE_OBJECTS or o.pos_ == "PRON" for o in objects)


def _ending(clause: Clause, whose: str | None) -> Reading | None:
    """What ends a partnership or a pet's life: "Tom and I broke up", "Max died in the spring"."""
    head = kind_verb(clause)
    lemma = head.lemma_
    subject = clause.subject
    text = clause_text(clause)
    if lemma in ("break", "split", "divorce", "separate") and whose == SELF and (
            lemma in ("divorce", "separate") or any(c.lower_ == "up" for c in head.children)):
        named = [t for t in clause.tokens if t.pos_ == "PROPN" and t.ent_type_ in ("PERSON", "")]
        ended = named[0].lower_ if named else "*"
        return Reading(subject=SELF, slot="partner", value="single", ended=ended, change=True, text=text,
                       clause=clause.text)
    particles = {c.lower_ for c in head.children if c.dep_ in ("prt", "advmod", "acomp")}
    if lemma in ("put", "rehome", "lose", "give", "bury") and whose == SELF and (
            lemma in ("rehome", "bury") or particles & {"down", "away"} or lemma == "lose"):
        gone = next((c for c in head.children if c.dep_ == "dobj"), None)
        if gone is not None and (gone.pos_ == "PROPN" or gone.lemma_.lower() in lx.PET_SPECIES):
            return Reading(subject=SELF, slot="pet", key=gone.lower_, value="gone", change=True, text=text,
                           clause=clause.text)
    if lemma in ("die", "pass") or (lemma == "run" and "away" in particles):
        if subject is None:
            return None
        species = subject.lemma_.lower() if subject.lemma_.lower() in lx.PET_SPECIES else ""
        owner = possessor(subject)
        bare = subject.is_title and not any(c.dep_ in ("det", "poss") for c in subject.children)
        name = subject.lower_ if subject.pos_ == "PROPN" or bare else ""
        if not name and not (species and owner is not None and owner.lower_ in ("my", "our")):
            return None
        return Reading(subject=SELF, slot="pet", key=name or species, value="gone", change=True,
                       text=text, clause=clause.text)
    return None


def read_clause(clause: Clause, sent: Span) -> Iterator[Reading]:
    if not clause.tokens or unasserted(clause) or imperative(clause):
        return
    ending = _ending(clause, whose_of(clause, sent))
    if ending is not None:
        yield ending
        return
    if {t.lower_ for t in clause.tokens} & REQUESTS and (clause.subject is None or clause.subject.lower_ == "you"):
        return  # "… please" asked of the assistant; "no spicy food for me please, I can't handle chilli" states
    whose = whose_of(clause, sent)
    direct = whose is not None
    if whose is None and mentions_self(clause):
        whose = SELF
        direct = clause.subject is not None and clause.subject.dep_ == "expl"  # "there's a piano in my flat"
    if whose is None:
        return
    slot = kind_of(clause, whose)
    if whose != SELF and (slot not in _ABOUT_OTHERS or whose.split()[-1] not in lx.RELATIONS | lx.PARTNERS and not (
            whose.split()[-1] in lx.OTHERS and lasting(clause.subject))):
        return  # someone else's news is theirs; family's (and friends') lasting facts are the person's to tell
    if not direct and slot not in _STRONG:
        return
    if clause.subject is None and not slot and not (given_up_in(clause) or any(
            c.dep_ in ("dobj", "attr") and c.pos_ in ("NOUN", "PROPN") for c in clause.head.children)
            or _done_to(clause, sent)):
        return  # "Pouring all day here": a clause without its subject says what it is about, or nothing
    if not any(t.pos_ in ("VERB", "AUX") for t in clause.tokens):
        given_up = given_up_in(clause)
        if clause.subject is None and whose == SELF and (slot or given_up) and clause.head.pos_ in ("ADJ", "NOUN"):
            spoken = "".join(t.text_with_ws for t in spoken_words(clause)).strip()
            spoken = re.sub(r"\b(?:me|myself)\b", "User", spoken)
            no = any(t.lower_ == "no" and t.i < clause.head.i for t in clause.tokens)
            spoken = f"no {spoken}" if no and not spoken.lower().startswith("no ") else spoken
            counted = any(c.dep_ == "nummod" for c in clause.head.children)  # "three kids (4, 7 and 11)"
            verb = "has" if no or counted else "is"  # "User has no kids", "User is vegan"
            yield Reading(subject=SELF, slot=slot or "other", key=fact_key(clause, slot),
                          value=fact_value(clause, slot), text=f"User {verb} {spoken[:1].lower()}{spoken[1:]}",
                          negated=is_negated(clause), ended=given_up, change=bool(given_up), clause=clause.text)
            return
        yield from _fragment(clause, slot)
        return
    tense = tense_of(clause)
    head = clause.head
    lemmas = clause.lemmas
    if passing(clause, sent) or (_idle(clause) and slot not in _STRONG):
        return
    if tense == "future" and not entities(clause, "DATE", "TIME"):
        return
    if (lemmas & _FIGURATIVE or lemmas & JOKES) and slot in ("residence", "employer", "occupation"):
        return  # "I'm basically a taxi driver for my kids haha"
    if tense == "future" or (entities(clause, "DATE", "TIME") and head.tag_ == "VBG"
                             and slot in ("activity", "", "education") and tense == "present"):
        slot = "plan"
    if (slot == "residence" and head.lemma_ in ("move", "relocate", "emigrate") and head.tag_ == "VBG"
            and tense == "present" and not lemmas & {"now", "currently"}):
        slot = "plan"  # "I'm moving to Perth in June": where they will live, not yet where they do
    slot = slot or "other"
    past = "used" in lemmas or (tense == "past" and slot in ("residence", "employer", "occupation")
                                and head.lemma_ in ("live", "work", "be"))
    if slot == "partner" and whose == SELF:
        found = _partner_reading(clause, sent)
        if found is not None:
            yield found
            return
    if slot == "favorite":
        found = _favourite_reading(clause, whose)
        if found is not None:
            yield found
            return
    if slot in ("residence", "employer", "occupation", "diet"):
        found = None if hedged(clause) else _slot_reading(clause, whose, slot, sent)
        if found is not None:
            yield replace(found, past=past, text=clause_text(clause) if past else found.text)
            also = _employer_too(found)
            if also is not None:
                yield replace(also, past=past, text=clause_text(clause) if past else found.text)
            return
        if whose != SELF:
            return
        # "I love living here", "I work nights", "I might be a nurse": about their home or work, with
        # no value to compare
        slot = {"residence": "home", "diet": "diet"}.get(slot, "work")
        if entities(clause, "DATE", "TIME") and tense == "future" or head.tag_ == "VBG" and tense != "past" \
                and entities(clause, "DATE"):
            slot = "plan"
    text = clause_text(clause)
    if len(text.split()) < 2 or text.split()[-1] in ("has", "is", "was", "does", "have", "got", "had"):
        return  # "User has": the parse left the clause's object elsewhere
    if text.split()[-1] == head.text and head.lemma_.lower() in _SAYING and any(c.dep_ == "ccomp"
                                                                                for c in head.children):
        return  # "Our head of department announced": what was said is its own clause, read as such
    if not says_something(clause):
        return  # "I finally did it": nothing but pronouns after the verb
    given_up = given_up_in(clause)
    yield Reading(subject=whose, slot=slot, key=fact_key(clause, slot), value=fact_value(clause, slot), text=text,
                  ended=given_up or _denied(clause), change=bool(given_up) or _changed(clause, sent), past=past,
                  negated=is_negated(clause), clause=clause.text)


# Verbs that report what someone said or thought: the clause they report is read on its own.
_SAYING = frozenset({"say", "announce", "tell", "think", "claim", "mention", "report", "hear", "reckon", "believe",
                     "admit", "explain", "confirm", "reveal", "insist", "suggest", "complain", "warn", "text", "email"})
_CHANGING = frozenset({"switch", "change", "upgrade", "convert", "transfer", "move", "swap"})


def _done_to(clause: Clause, sent: Span) -> bool:
    """ "switched to a Pixel 8 last week": a sentence that opens on a past verb of change, its "I"
    left out, and goes to something named ("went to Paris last week" is an outing, not a change)."""
    head = clause.head
    return head.tag_ == "VBD" and head.i == sent.start and head.lemma_.lower() in _CHANGING and any(
        c.dep_ == "prep" and any(o.dep_ == "pobj" and o.pos_ == "PROPN" for o in c.children) for c in head.children)


def _fragment(clause: Clause, slot: str) -> Iterator[Reading]:
    """A clause without a verb says a preference ("Tea over coffee any day") or nothing."""
    words = spoken_words(clause)
    if slot != "preference" and not any(t.lower_ in ("over", "before") for t in words):
        return
    said = "".join(t.text_with_ws for t in words).strip()
    if len(words) >= 2:
        yield Reading(subject=SELF, slot="preference", key=fact_key(clause, "preference"), value="+",
                      text=f"User prefers {said[:1].lower()}{said[1:]}", clause=clause.text)
