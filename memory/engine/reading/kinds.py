"""What a clause is about: its kind (where they live, work, diet, family, a plan, …), by its
lemmas and entities, and the words of the parse that kinds are read from (a verb's objects, a noun's
phrase)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import lexicon as lx
from .clauses import PRONOUNS_SELF, SELF, Clause

if TYPE_CHECKING:
    from spacy.tokens import Span, Token


# --- what it is about ------------------------------------------------------------------------------

def entities(clause: Clause, *labels: str) -> list[Span]:
    ids = {t.i for t in clause.tokens}
    doc = clause.head.doc
    return [e for e in doc.ents if e.label_ in labels and e.start in ids]


_WHEN = frozenset({"DATE", "TIME"})


def object_of(head: Token, *preps: str) -> Token | None:
    """The noun after one of `preps` ("live in X": X), through the head and its particles."""
    for child in head.children:
        if child.dep_ in ("prep", "agent", "dative") and child.lower_ in preps:
            found = next((c for c in child.children if c.dep_ == "pobj"), None)
            if found is not None and found.ent_type_ not in _WHEN:  # "moving in January": a time, no place
                return found
        if child.dep_ in ("advmod", "prt", "acomp", "xcomp") and child.i > head.i:
            found = object_of(child, *preps)
            if found is not None:
                return found
    return None


def phrase(token: Token) -> str:
    """A noun with its compounds and names ("Northgate Pharmacy", "the bakery on Elm Street" →
    "the bakery")."""
    ids = [t for t in token.subtree if t.dep_ in ("compound", "amod", "nmod", "det", "nummod", "poss", "flat")
           or t.i == token.i]
    start = min(t.i for t in ids)
    words = [t for t in token.doc[start:token.i + 1] if t.dep_ != "punct"]
    return " ".join(t.text for t in words)


_ARTICLES = re.compile(r"^(?:the|a|an|my|our|their|his|her|some|this|that|new|old|little|local)\s+", re.I)


def value_of(text: str) -> str:
    """A value as comparisons take it: lowercase, without leading articles."""
    text = text.strip().lower()
    previous = None
    while previous != text:
        previous, text = text, _ARTICLES.sub("", text)
    return " ".join(text.split()[:5])


def _partnered(clause: Clause) -> bool:
    """ "I'm single", "we got married", "tied the knot", "Tom and I broke up": a partnership's status."""
    head = clause.head
    if head.lemma_ in ("see", "date") and any(t.lower_ in ("someone", "somebody", "guy", "girl", "man", "woman",
                                                           "bloke", "lad", "lass") for t in head.subtree):
        return True  # "I'm seeing someone new", "seeing a guy called Marco"
    if head.lower_ in lx.PARTNERED:
        return True  # "Happily married for twelve years", "Single and loving it"
    if head.lemma_ in ("marry", "divorce", "wed", "date", "separate") or (
            head.lemma_ in ("break", "split") and any(c.lower_ == "up" for c in head.children)):
        return True
    if head.lemma_ == "tie" and any(c.lemma_ == "knot" for c in head.children):
        return True
    return any(c.dep_ in ("acomp", "attr", "oprd") and c.lower_ in lx.PARTNERED for c in head.children)


def _partner_noun(clause: Clause) -> bool:
    """A partner named as what the clause is about ("my girlfriend Priya", "I'm dating Anna's
    brother"), not in passing ("for my husband's work", "with their partner")."""
    for token in clause.tokens:
        if token.lemma_.lower() in lx.PARTNERS | {"ex"}:
            path = token
            while path.dep_ in ("appos", "conj", "compound", "poss") and path.head.i != path.i:
                path = path.head
            if path.dep_ in ("nsubj", "nsubjpass", "attr", "dobj", "ROOT", "oprd") or path.head.i == clause.head.i \
                    and path.dep_ != "prep" and path.head.lemma_ not in ("for", "with"):
                return True
    return False


_EMPLOYING = {"join": "to", "hire": "by", "employ": "by", "quit": "", "resign": "from", "leave": "",
              "lay": "from", "fire": "from", "sack": "from"}


def _employment(clause: Clause) -> bool:
    """ "I joined Microsoft", "I was hired by the museum", "I quit Acme", "laid off from Tesco"."""
    head = kind_verb(clause)
    lemma = head.lemma_.lower()
    if lemma not in _EMPLOYING:
        return False
    if lemma in ("quit", "leave") and any(t.lemma_ in ("job", "work", "position", "role") for t in clause.tokens):
        return True
    named = employer_of(head)
    return named is not None and not (lemma == "join" and named.lemma_.lower() in lx.GROUPS)


def employer_of(head: Token) -> Token | None:
    """The organisation a verb of employment names: its object, or after by / from / at / for."""
    found = object_of(head, "at", "for", "with", "by", "from")
    if found is None:
        found = next((c for c in head.children if c.dep_ in ("dobj", "attr") and c.pos_ in ("PROPN", "NOUN")), None)
    if found is not None and found.lemma_.lower() in ("job", "work", "position", "role", "shift", "hour", "overtime"):
        found = object_of(found, "at", "with", "for")
    return found if found is not None and (found.pos_ == "PROPN" or any(
        c.dep_ == "det" and c.lower_ == "the" for c in found.children)) else None


def favourite(clause: Clause) -> Token | None:
    """ "My favourite band is Wet Leg": the kind of thing whose favourite it names."""
    subject = clause.subject
    if subject is None or clause.head.lemma_ not in ("be", "become"):
        return None
    if any(c.lower_ in ("favourite", "favorite", "fave", "fav") for c in subject.children):
        return subject
    return None


def kind_verb(clause: Clause) -> Token:
    """The verb that says what a clause is about: "used to live" → "live", "tried to meditate"."""
    head = clause.head
    if head.lemma_.lower() in ("use", "try", "manage", "tend", "continue", "keep", "start", "begin", "stop", "quit",
                               "love", "like", "hate", "enjoy", "prefer", "have"):
        inner = next((c for c in head.children if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX")), None)
        if inner is not None and (head.lemma_.lower() not in lx.PREFERENCE_VERBS or inner.lemma_ in
                                  lx.RESIDENCE_VERBS | {"work"}):
            return inner
    return head


def over(clause: Clause) -> Token | None:
    """ "I'm over reality TV", "I've gone off coffee": what the speaker no longer likes."""
    head = clause.head
    if head.lemma_ in ("be", "go"):
        return object_of(head, "over", "off")
    return None


def _ahead(clause: Clause) -> bool:
    """A date that may lie ahead ("on 14 March", "next week"), not one behind or this very moment."""
    for entity in entities(clause, "DATE", "TIME"):
        words = {t.lower_ for t in entity}
        if not words & {"last", "ago", "yesterday", "minute", "moment", "second", "earlier", "previous", "past"}:
            return True
    return False


def kind_of(clause: Clause, whose: str) -> str:
    """Which kind of fact the clause states, by its lemmas and entities ("" for none)."""
    lemmas = clause.lemmas
    head = kind_verb(clause).lemma_.lower()
    nouns = {t.lemma_.lower() for t in clause.tokens if t.pos_ in ("NOUN", "PROPN", "ADJ")}
    if lemmas & set(lx.DIET_LABELS):
        return "diet"  # "I'm fully vegan, no more fish"
    if nouns & lx.PET_SPECIES and (head in ("have", "get", "adopt", "own", "rescue", "call", "name", "be")
                                   or whose != SELF):
        return "pet"
    if lemmas & {"name", "call", "nickname"} and head in ("be", "call", "name") and not nouns & lx.RELATIONS:
        return "name"
    if "birthday" in lemmas or (head == "bear" and entities(clause, "DATE")):
        return "birthday"
    # "moved my savings to Monzo", "moved everything over": a move of things, not of the person
    carried = head in ("move", "relocate") and any(c.dep_ == "dobj" and c.lemma_.lower() not in ("house", "home")
                                                   for c in kind_verb(clause).children)
    if head in lx.RESIDENCE_VERBS and not _partnered(clause) and not carried:
        return "residence"
    if _employment(clause):
        return "employer"
    if (whose == SELF and _partner_noun(clause)) or _partnered(clause):
        return "partner"
    if favourite(clause) is not None:
        return "favorite"
    if head in ("visit", "travel", "tour") and clause.head.tag_ == "VBG" and entities(clause, "GPE", "LOC"):
        return "trip"
    if head in ("die", "pass", "bury") or (head == "run" and "away" in lemmas) or (head == "put" and "down" in lemmas
                                                                                  and nouns & lx.PET_SPECIES):
        return "pet"
    if (head in lx.RESIDENCE_VERBS and not carried) or (lemmas & lx.PLACES and (entities(clause, "GPE", "LOC") or (
            head == "be" and object_of(clause.head, "in") is not None
            and object_of(clause.head, "in").pos_ == "PROPN"))):
        return "residence"
    if head == "base" and object_of(clause.head, "in"):
        return "residence"
    if head == "be" and entities(clause, "GPE") and any(
            t.lower_ in ("years", "months", "decades") for e in entities(clause, "DATE") for t in e):
        return "residence"  # "Been in Toronto six years now"
    if (head in ("bear", "raise", "breed") or (head == "grow" and "up" in lemmas)
            or (head in ("be", "come") and object_of(clause.head, "from"))
            or (head == "be" and any(c.dep_ in ("acomp", "attr") and c.ent_type_ == "NORP"
                                     for c in clause.head.children))):
        return "origin"
    if lemmas & lx.LANGUAGE and (head == "speak" or entities(clause, "LANGUAGE", "NORP") or "language" in lemmas
                                 or lemmas & {"fluent", "bilingual", "tongue"}):
        return "language"
    if head in lx.HOBBY and head not in ("run", "train", "ride"):
        return "activity"  # "I stopped playing tennis after the shoulder injury"
    if lemmas & lx.ALLERGY:
        return "allergy"
    if lemmas & lx.HEALTH:
        return "health"
    food_subject = clause.subject is not None and clause.subject.lemma_.lower() in lx.DIET  # "Peanuts put me in …"
    if lemmas & set(lx.DIET_LABELS) or food_subject or (lemmas & lx.DIET and head in (
            "eat", "drink", "be", "have", "avoid", "touch", "do", "cut", "give", "stop", "quit")):
        return "diet"
    if occupation(clause) or head == "retire" or "retired" in lemmas:
        return "occupation"
    if head in ("work", "employ", "hire") or lemmas & {"job", "employer", "career", "unemployed", "freelance"}:
        return "employer"
    if lemmas & lx.EDUCATION and head not in ("like", "love", "enjoy", "hate"):
        return "education"
    if lemmas & lx.PLAN_NOUNS and entities(clause, "DATE", "TIME"):
        return "plan"
    if head in lx.PREFERENCE_VERBS or lemmas & set(lx.PREFERENCE_WORDS) or over(clause) is not None or (
            "rather" in lemmas):
        return "preference"
    if lemmas & lx.HOBBY:
        return "activity"
    owned = [c for c in kind_verb(clause).children if c.dep_ == "dobj"]
    if head in ("have", "own", "drive", "get", "buy", "ride", "pick") and (nouns & lx.POSSESSIONS or any(
            o.pos_ == "PROPN" or o.ent_type_ in ("PRODUCT", "ORG") for o in owned)):
        return "possession"  # "got myself a little electric Fiat 500"
    if nouns & (lx.RELATIONS | lx.PARTNERS) and head in ("have", "be", "get"):
        return "family"
    if lemmas & lx.ROUTINE and head not in lx.NON_FACT_VERBS:
        return "routine"
    if clause.head.tag_ == "VBG" and whose == SELF and _ahead(clause) and (
            clause.subject is None or clause.subject.lower_ in PRONOUNS_SELF):
        return "plan"  # "Taking the kids to Disney World over spring break, April 7th"
    return ""


def occupation(clause: Clause) -> str:
    """The job a clause names: "I'm a nurse", "I work as a pharmacist", "became a teacher"."""
    head = clause.head
    if head.lemma_ in ("work", "train", "retrain", "qualify", "start") :
        found = object_of(head, "as")
        if found is not None:
            return phrase(found)
    for child in head.children:
        if child.dep_ in ("attr", "oprd", "acomp") and head.lemma_ in ("be", "become") and (
                child.lemma_.lower() in lx.OCCUPATIONS or child.lower_ in lx.OCCUPATIONS):
            return phrase(child)
    return ""
