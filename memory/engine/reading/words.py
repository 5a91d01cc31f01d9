"""A fact's words: the clause in the third person ("I'm coeliac" → "User is coeliac"), the
one form of a kind one value fills at a time, and what identifies the fact within its kind, its
value and what it says has ended."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .. import lexicon as lx
from .clauses import DROP_LEADS, JOKES, OWN_NOUNS, SELF, SUBJECTS, Clause, is_negated
from .kinds import entities, kind_verb, object_of, over, phrase, value_of

if TYPE_CHECKING:
    from spacy.tokens import Token


# --- the fact's words ----------------------------------------------------------------------------

_TO_THIRD = {"am": "is", "'m": "is", "are": "is", "'re": "is", "were": "was", "have": "has", "'ve": "has",
             "do": "does", "was": "was", "'d": "would", "'ll": "will"}
_IRREGULAR_3SG = {"be": "is", "have": "has", "do": "does", "go": "goes"}


# Participles that open a sentence about the speaker in the passive ("Born and bred in Cork").
_SAID_OF_ONE = frozenset({"bear", "breed", "raise", "diagnose", "marry", "divorce", "engage", "base", "injure",
                          "hospitalise", "hospitalize", "adopt", "educate", "train", "bring"})


def third_singular(verb: str, lemma: str) -> str:
    """ "love" → "loves", "study" → "studies", "watch" → "watches"."""
    if lemma in _IRREGULAR_3SG:
        return _IRREGULAR_3SG[lemma]
    base = verb.lower()
    if base != lemma.lower() and not base.startswith(lemma.lower()):
        return base  # "forgot" the tagger took for a present: a past form keeps its own
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        return base + "es"
    if base.endswith("y") and len(base) > 1 and base[-2] not in "aeiou":
        return base[:-1] + "ies"
    return base + "s"


def spoken_words(clause: Clause) -> list[Token]:
    """The clause's words that say its fact: no lead-ins ("honestly", "but", "lol", "Good idea, …"),
    no vocative, no closing punctuation."""
    words = [t for t in clause.tokens if not t.is_space]
    subject = clause.subject
    if subject is not None:
        start = min(t.i for t in subject.subtree)
        comma = [t for t in words if t.i < start and t.lower_ in (",", ":")]
        if comma and not any(t.pos_ in ("VERB", "AUX") for t in words if t.i < comma[-1].i):
            words = [t for t in words if t.i > comma[-1].i]
    while words and (words[0].is_punct or words[0].lower_ in DROP_LEADS or words[0].dep_ in ("intj", "cc", "mark")):
        words = words[1:]
    while words and (words[-1].is_punct or words[-1].lower_ in JOKES or words[-1].dep_ in ("intj", "cc")):
        words = words[:-1]
    return [t for t in words if t.dep_ not in ("npadvmod",) or t.lemma_.lower() not in ("lol", "haha")]


def clause_text(clause: Clause) -> str:
    """The clause in the third person: "I'm coeliac" → "User is coeliac", "my sister Ingrid is
    older than me" → "User's sister Ingrid is older than User"."""
    words = spoken_words(clause)
    if not words:
        return ""
    subject = clause.subject
    if subject is not None and subject.i not in {t.i for t in clause.tokens} and subject.lower_ in ("i", "we"):
        subject = None  # "… and switched to Mandarin": the first verb's "I", said again here
    first_person = subject is not None and subject.lower_ in ("i", "we")
    agree = None  # the verb that takes the subject's person
    if first_person:
        agree = next((t for t in words if t.i > subject.i and t.pos_ in ("AUX", "VERB") and t.tag_ in ("VBP", "VBD",
                                                                                                 "MD")), None)
    out: list[str] = []
    owned = subject is not None and subject.lemma_.lower() in OWN_NOUNS and not any(
        c.dep_ in ("det", "poss") for c in subject.children)  # "Birthday's the 29th": the speaker's own
    if subject is None and words[0].i == clause.head.i or (subject is None and words[0].pos_ in ("AUX", "VERB")):
        lead = words[0]
        # "Born and bred in Cork", "Diagnosed with asthma at six": passive; "Sold the Focus": active
        passive = lead.tag_ == "VBN" and lead.lemma_.lower() in _SAID_OF_ONE and not any(
            c.dep_ == "dobj" for c in lead.children)
        prefix = {"VBN": "User has" if lead.lower_ == "been" else "User was" if passive else "User",
                  "VBG": "User is", "VBD": "User", "MD": "User"}.get(lead.tag_, "User")
        out.append(prefix + " ")
        if lead.tag_ in ("VBN", "VBD", "VBG", "MD") and lead.text[:1].isupper() and lead.ent_type_ == "":
            out.append(lead.lower_ + lead.whitespace_)
            words = words[1:]
        elif lead.tag_ in ("VBP", "VB") and lead.lemma_ != "be":
            out.append(third_singular(lead.text, lead.lemma_.lower()) + lead.whitespace_)
            words = words[1:]
        elif lead.tag_ in ("VBP", "VB"):
            out[-1] = "User is "
            words = words[1:]
    for token in words:
        word, lower = token.text, token.lower_
        if lower in ("i", "we") and token.dep_ in SUBJECTS | {"conj"}:
            word = "User"
        elif lower in ("me", "us") or (lower in ("i", "we")):
            word = "User"
        elif lower in ("myself", "ourselves"):
            word = "themselves"
        elif lower in ("my", "our"):
            said = "".join(out)
            word = "their" if "User" in said else "User's"  # "Spanish is User's first language"
        elif owned and token.i == subject.i:
            word = f"User's {lower}"
        elif lower in ("mine", "ours"):
            word = "theirs"
        elif agree is not None and token.i == agree.i:
            if lower in _TO_THIRD:
                word = _TO_THIRD[lower]
            elif token.tag_ == "VBP":
                word = third_singular(token.text, token.lemma_.lower())
            if token.text.startswith("'"):
                word = " " + word
        out.append(word + token.whitespace_)
    text = "".join(out).strip()
    text = re.sub(r"\s+", " ", text)
    return text[:1].upper() + text[1:]


def owner_words(whose: str, name: str = "") -> tuple[str, bool]:
    """How a fact names its subject, and whether its verb is plural ("User's parents live")."""
    if whose == SELF:
        return "User", False
    owner = f"User's {whose} {name}" if name else f"User's {whose}"
    return owner, whose.split()[-1] in ("parents", "kids", "children", "grandparents", "twins")


def name_of(clause: Clause) -> str:
    """The name the clause's subject is given ("my partner Sam")."""
    subject = clause.subject
    name = next((c for c in subject.children if c.dep_ == "appos" and c.pos_ == "PROPN"), None) if subject else None
    return name.text if name is not None else ""


def templated(slot: str, whose: str, value: str, *, name: str = "") -> str:
    """A kind one value fills at a time in its one form: "User lives in Lyon", "User's sister works at Acme"."""
    owner, plural = owner_words(whose, name)
    verb = {"lives": "live" if plural else "lives", "works": "work" if plural else "works",
            "is": "are" if plural else "is"}
    if slot == "residence":
        return f"{owner} {verb['lives']} in {value}"
    if slot == "employer":
        return f"{owner} {verb['works']} at {value}"
    if slot == "occupation":
        if value.lower() == "retired":
            return f"{owner} {verb['is']} retired"
        article = "an" if value[:1].lower() in "aeiou" else "a"
        if value.split()[-1] in ("student", "apprentice", "intern", "trainee", "homemaker", "housewife"):
            return f"{owner} {verb['is']} {article} {value}"
        return f"{owner} {verb['works']} as {article} {value}"
    if slot == "diet":
        return f"{owner} {verb['is']} {value}"
    raise ValueError(slot)


# --- the fact's key and value, and what it ends -----------------------------------------------

GIVING_UP = frozenset({"sell", "stop", "quit", "drop", "ditch", "give", "switch", "leave", "cancel", "lose", "trade",
                       "uninstall", "cut", "scrap", "dump", "close", "delete", "deactivate"})


def given_up_in(clause: Clause) -> str:
    """What a clause says the speaker no longer has or does: "Sold the Focus" → "focus", "I've
    dropped the Japanese" → "japanese", "had to stop running" → "running", "switched from oat to
    soya milk" → "oat"; "" when it says nothing ends."""
    for token in clause.tokens:  # "no more coffee for me"
        if token.lower_ == "more" and token.i > 0 and token.doc[token.i - 1].lower_ == "no" and token.dep_ != "ROOT":
            thing = token.head if token.head.pos_ in ("NOUN", "PROPN") else next(
                (t for t in token.doc[token.i + 1:token.i + 3] if t.pos_ in ("NOUN", "PROPN")), None)
            if thing is not None:
                return value_of(" ".join(t.text for t in thing.subtree if t.i <= thing.i and t.lower_ not in (
                    "no", "more")))
    head = kind_verb(clause) if clause.head.lemma_ not in GIVING_UP else clause.head
    lemma = head.lemma_.lower()
    if lemma not in GIVING_UP or (lemma == "give" and not any(c.lower_ == "up" for c in head.children)):
        return ""
    if lemma == "switch":
        old = object_of(head, "from")
        return value_of(phrase(old)) if old is not None else ""
    thing = next((c for c in head.children if c.dep_ in ("dobj", "xcomp") and c.pos_ in ("NOUN", "PROPN", "VERB")),
                 None) or object_of(head, "in", "off", "out")  # "traded in the Civic"
    if thing is None or thing.lemma_.lower() in ("job", "work", "it", "that"):
        return ""
    return value_of(thing.text if thing.pos_ == "VERB" else phrase(thing))


def says_something(clause: Clause) -> bool:
    """Whether a clause names anything (a noun, a name, a number, an adjective, a verb besides its
    own), not only pronouns ("I finally did it", "we both have that")."""
    subject = clause.subject
    # "I finally did it": the subject says nothing; "my throat swell up", "Gluten and me": it does
    spoken = {t.i for t in subject.subtree} if subject is not None and subject.pos_ == "PRON" else set()
    if clause.head.lemma_.lower() in lx.HOBBY:
        return True  # "I knit"
    return any(t.pos_ in ("NOUN", "PROPN", "NUM", "ADJ") or t.pos_ == "VERB" and (
        t.i != clause.head.i or t.tag_ == "VBG" and t.lemma_ not in ("do", "go", "get", "have", "be"))
               for t in clause.tokens if t.i not in spoken and t.lower_ not in ("one", "thing", "things")
               and not (t.ent_type_ in ("DATE", "TIME") and t.dep_ in ("npadvmod", "advmod", "amod", "det")))


def fact_key(clause: Clause, slot: str) -> str:
    """What identifies a clause's fact within its kind: for a taste or a pastime, what is liked or
    done ("horror movie", "tennis"); else its content lemmas, without the verb."""
    kind_head = kind_verb(clause)
    if slot in ("preference", "activity"):
        thing = over(clause) or next((c for c in kind_head.children if c.dep_ in ("dobj", "xcomp", "attr", "pobj")
                                      and c.pos_ in ("NOUN", "PROPN", "VERB")), None)
        if thing is not None and thing.i != kind_head.i:
            inner = thing if thing.pos_ != "VERB" else next(
                (c for c in thing.children if c.dep_ == "dobj"), thing)  # "playing tennis" → tennis
            words = [t.lemma_.lower() for t in inner.subtree if t.dep_ in ("compound", "amod") and t.i < inner.i
                     and not t.is_stop] + [inner.lemma_.lower()]
            return " ".join(words)
    words = [t.lemma_.lower() for t in clause.tokens
             if (t.pos_ in ("NOUN", "PROPN", "ADJ") or t.tag_ == "VBG") and not t.is_stop
             and t.i not in (clause.head.i, kind_head.i) and t.lemma_.lower() not in lx.PREFERENCE_VERBS]
    return " ".join(dict.fromkeys(words))[:80]


def fact_value(clause: Clause, slot: str) -> str:
    if slot == "preference":
        lemma = clause.head.lemma_.lower()
        if over(clause) is not None or (lemma == "stand" and is_negated(clause)):
            return "-"  # "I'm over reality TV", "I can't stand horror films"
        polarity = lx.PREFERENCE_VERBS.get(lemma, "+")
        return {"+": "-", "-": "+"}[polarity] if is_negated(clause) else polarity
    if slot == "activity" and clause.head.lemma_ in ("stop", "quit", "give"):
        return "no"
    dates = entities(clause, "DATE", "TIME")
    if slot == "plan" and dates:
        return value_of(dates[0].text)
    return "no" if is_negated(clause) else "yes"
