"""Reading what a statement says about the person, on a language pipeline.

Each sentence is parsed (memory/engine/language.py: spaCy's dependencies, tags, lemmas and
entities) and read clause by clause. The parse says who a clause is about (the speaker, "my
sister", someone else), whether it is asserted (not a question, a hypothetical, a wish, a plan
without a date, a passing mood) and in which tense; the lemmas (memory/engine/lexicon.py) say
what it is about: its kind (where they live, work, health, diet, family, a plan, a hobby, …).
A clause about the speaker of a kind that matters later becomes a `Reading`: its kind (slot),
what identifies it within the kind (key), its value, and its text in the third person ("User is
coeliac", "Ingrid is User's sister"). Kinds that one value fills at a time (where they live,
their job, …) are written in one form whatever the wording, so a second telling is the same fact.

Pure and deterministic: the caller passes the text; parses and readings are cached by text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from . import lexicon as lx
from .language import parse, parse_all
from .text import clean_text, split_sentences

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

SELF = "self"
# Kinds one value fills at a time: a new value ends the old one.
EXCLUSIVE_SLOTS = frozenset({"residence", "employer", "occupation", "partner", "diet", "favorite", "name", "age",
                             "birthday"})


@dataclass(frozen=True)
class Reading:
    """One thing a clause states: whose (SELF or a relation: "sister"), which kind (slot), what
    identifies it within the kind (key: a pet's name, a liked thing), the value (normalised,
    lowercase), and the fact's text in the third person."""

    subject: str
    slot: str
    key: str = ""
    value: str = ""
    text: str = ""
    ended: str = ""  # a value the clause says is over or denied ("from Lyon", "not Max"); "*" any
    change: bool = False
    past: bool = False  # about the past only ("I used to live in Leeds")
    negated: bool = False
    clause: str = ""


# --- stored facts read as the speaker's words --------------------------------------------------

_STORED_SUBJECT = (
    (re.compile(r"^User's plan: (?=\w+ing\b)"), "I'm "),  # how plans were stored before 2026-11-29
    (re.compile(r"\bUser and others\b"), "we"), (re.compile(r"\b(?:User|the user)'s\b"), "my"),
    (re.compile(r"\b(?:User|the user) is\b"), "I'm"), (re.compile(r"\b(?:User|the user) has\b"), "I have"),
    (re.compile(r"\b(?:User|the user) does\b"), "I do"), (re.compile(r"\b(?:User|the user) doesn't\b"), "I don't"),
    (re.compile(r"\b(?:User|the user) was\b"), "I was"), (re.compile(r"\bthan (?:User|the user)\b"), "than me"),
    (re.compile(r"^(?:User|the user) (\w+?)(?:ies)\b"), r"I \1y"),
    (re.compile(r"^(?:User|the user) (\w+?(?:ch|sh|ss|x|o))es\b"), r"I \1"),
    (re.compile(r"^(?:User|the user) (\w+?)s\b"), r"I \1"),
    (re.compile(r"(?<=\w )(?:User|the user)\b"), "me"), (re.compile(r"\b(?:User|the user)\b"), "I"),
    (re.compile(r"\btheir\b"), "my"), (re.compile(r"\bthemselves\b"), "myself"),
)


def normalise_statement(text: str) -> str:
    """A statement as the reader takes it: a stored fact's "User" read as the speaker's "I"."""
    text = clean_text(text)
    if not re.search(r"\b(?:User|the user)\b", text):
        return text  # the person's own words: "their" is someone else's
    for pattern, replacement in _STORED_SUBJECT:
        text = pattern.sub(replacement, text)
    return text


# --- the parse, clause by clause ------------------------------------------------------------------

_CLAUSE_DEPS = frozenset({"ROOT", "conj", "ccomp", "advcl", "parataxis"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})
_WH = frozenset({"what", "when", "where", "who", "whom", "whose", "which", "why", "how"})
_CONDITIONS = frozenset({"if", "unless", "whether", "when", "once", "whenever", "til", "till", "until"})
_MODALS = frozenset({"would", "'d", "could", "might", "may", "should", "ought", "must", "shall"})
_FUTURE = frozenset({"will", "'ll", "wo", "gonna"})
_JOKES = frozenset({"jk", "kidding", "joking", "lol", "lmao", "haha", "hahaha", "rofl"})
_FIGURATIVE = frozenset({"basically", "practically", "literally", "virtually"})
_DROP_LEADS = frozenset({"and", "but", "so", "also", "then", "plus", "or", "honestly", "basically", "actually",
                         "anyway", "anyways", "btw", "well", "oh", "yeah", "yes", "yep", "ok", "okay", "lol",
                         "haha", "um", "uh", "hmm", "fyi", "tbh", "like", "though", "because", "cause", "since",
                         "although", "while", "as", "no", "nope", "sorry", "hey", "hi", "hello", "ah", "wow",
                         "fun", "fact", "news", "update"})
# Participles that open a sentence as a way of speaking, not as what the speaker does.
_DISCOURSE = frozenset({"speaking", "talking", "considering", "given", "assuming", "judging", "looking", "saying",
                        "coming", "going", "getting"})
_NEGATIONS = frozenset({"not", "n't", "never", "no", "nobody", "none", "nothing", "nor"})
_PRONOUNS_SELF = frozenset({"i", "we", "me", "us"})


def _asks(sent: Span) -> bool:
    """A question, with or without its mark: "where do I live", "do you know my name"."""
    words = [t for t in sent if not t.is_punct and not t.is_space]
    if not words:
        return False
    first = words[0]
    if sent.text.lower().lstrip().startswith(("any idea", "anyone know")):
        return True
    if sent.text.rstrip().endswith("?"):
        # "I'm sort of a freelance translator?", "You remember I'm left-handed, yeah?": the speaker's
        # own words said with a rising voice state; a question asks with a wh-word or comes first with its verb
        declarative = first.lower_ not in _WH and first.pos_ not in ("AUX", "VERB") and any(
            t.lower_ in ("i", "i'm", "my") for t in words)
        return not declarative
    if first.lower_ in _WH and first.tag_ in ("WDT", "WP", "WP$", "WRB") and not any(t.dep_ == "relcl" for t in sent):
        return first.head.dep_ == "ROOT" or first.dep_ in ("advmod", "attr", "nsubj", "dobj")
    if first.pos_ == "AUX" and len(words) > 1 and words[1].dep_ in _SUBJECTS and first.i < words[1].i:
        return first.lower_ not in ("'m", "am")
    return False


def _shares_words(token: Token) -> bool:
    """A verb that is no clause of its own: "bred" in "Born and bred in Cork" (it shares its first
    verb's subject, and that verb has nothing of its own), "swell" in "Shellfish makes my throat swell"
    (what a causative verb makes happen)."""
    if token.dep_ == "conj" and not any(c.dep_ in _SUBJECTS for c in token.children):
        first = token.head
        return not any(c.dep_ in ("dobj", "prep", "attr", "acomp", "xcomp", "oprd") for c in first.children)
    return token.dep_ == "ccomp" and token.head.lemma_ in ("make", "let", "help") and token.i > token.head.i


def _clause_heads(sent: Span) -> list[Token]:
    heads = [t for t in sent if t.dep_ in _CLAUSE_DEPS and (t.dep_ == "ROOT" or t.pos_ in ("VERB", "AUX") or any(
        c.dep_ in _SUBJECTS for c in t.children)) and not _shares_words(t)]
    # "… every single day we finally moved to York": a verb the parser hung on a noun as a relative
    # clause, with "I" or "we" for its subject and no relative word, is a clause of its own.
    heads += [t for t in sent if t.dep_ == "relcl" and any(c.dep_ == "nsubj" and c.lower_ in ("i", "we")
                                                           for c in t.children)
              and not any(c.tag_ in ("WDT", "WP", "WRB") or c.lower_ == "that" for c in t.children)]
    return heads


def _clause_of(token: Token, heads: frozenset[int]) -> int:
    while token.i not in heads and token.head.i != token.i:
        token = token.head
    return token.i


@dataclass(frozen=True)
class _Clause:
    head: Token
    tokens: tuple[Token, ...]
    subject: Token | None

    @property
    def lemmas(self) -> frozenset[str]:
        return frozenset(t.lemma_.lower() for t in self.tokens) | frozenset(t.lower_ for t in self.tokens)

    @property
    def text(self) -> str:
        return "".join(t.text_with_ws for t in self.tokens).strip()


def _subject_of(head: Token) -> Token | None:
    subjects = [c for c in head.children if c.dep_ in _SUBJECTS]
    if subjects:  # "Long story short, I bought …": a misread lead-in is no subject beside "I"
        return next((c for c in subjects if c.lower_ in _PRONOUNS_SELF), subjects[0])
    if head.dep_ in ("conj", "xcomp") and head.head.i != head.i:
        return _subject_of(head.head)
    return None


def clauses(sent: Span) -> list[_Clause]:
    """The sentence's clauses: each verb that heads one, with its own words (not those of the
    clauses inside it) and its subject (a conjoined verb shares its first verb's)."""
    heads = _clause_heads(sent)
    ids = frozenset(h.i for h in heads)
    owned: dict[int, list[Token]] = {h.i: [] for h in heads}
    for token in sent:
        owner = _clause_of(token, ids)
        if owner in owned:
            owned[owner].append(token)
    return [_Clause(h, tuple(owned[h.i]), _subject_of(h)) for h in heads]


# --- whose, and whether it is asserted ----------------------------------------------------------

def _possessor(token: Token) -> Token | None:
    return next((c for c in token.children if c.dep_ == "poss"), None)


_THE_ONES = frozenset({"hubby", "husband", "wife", "missus", "kids", "kid", "mum", "mom", "dad", "mam", "ma", "pa",
                       "children", "baby", "twins", "folks", "parents"})


def _relation(token: Token) -> str | None:
    """ "my older sister" → "older sister"; "my brother's daughter" → "brother's daughter"; "the
    hubby", "the kids", "dad" said alone → theirs; None when the noun is no relation of the speaker's."""
    owner = _possessor(token)
    lemma = token.lemma_.lower()
    if owner is None and token.lower_ in _THE_ONES and all(c.lower_ == "the" for c in token.children
                                                             if c.dep_ == "det"):
        return token.lower_
    if owner is None or lemma not in lx.RELATIONS | lx.PARTNERS | lx.OTHERS | lx.OCCUPATIONS:
        return None
    modifiers = [c.lower_ for c in token.children if c.dep_ == "amod" and c.i < token.i]
    word = " ".join([*modifiers, token.lower_])
    if owner.lower_ in ("my", "our"):
        return word
    inner = _relation(owner)
    return f"{inner.split()[-1]}'s {word}" if inner else None


def _whose(clause: _Clause, sent: Span) -> str | None:
    """SELF, a relation ("sister"), or None (someone or something else)."""
    subject = clause.subject
    if subject is None:
        head = clause.head
        while head.dep_ == "conj" and head.head.i != head.i and _subject_of(head.head) is None:
            head = head.head  # "Born and bred in Cork": the first verb's
        first = next((t for t in sent if not t.is_punct and t.lower_ not in _DROP_LEADS
                      and t.dep_ not in ("neg", "det", "advmod", "aux", "auxpass")), None)
        if first is None:
            return None
        if first.i < head.i - 1:
            # "Left Tesco finally, working at Barclays now": a sentence that opened without its
            # subject goes on without it
            opener = first if first.pos_ in ("VERB", "AUX") else None
            subjectless = opener is not None and _subject_of(opener) is None and head.pos_ in ("VERB", "AUX") \
                and head.tag_ != "VB"
            return SELF if subjectless else None
        if head.pos_ in ("VERB", "AUX"):
            return SELF  # "Grew up in Leeds"
        fragment = head.dep_ == "ROOT" and (head.pos_ == "ADJ" or head.pos_ == "NOUN" and (
            any(t.lower_ in ("not", "no") and t.i < head.i and head in t.ancestors for t in sent)  # "no more coffee"
            or any(c.lower_ in ("a", "an") for c in head.children)
            and head.lemma_.lower() in lx.OCCUPATIONS | lx.HOBBY | lx.RELATIONS | {"person", "fan", "type"}
            or any(c.dep_ == "nummod" for c in head.children) and head.lemma_.lower() in lx.RELATIONS | lx.PET_SPECIES
            or head.lemma_.lower() in lx.PREFERENCE_WORDS))  # "Big fan of Formula 1"
        return SELF if fragment else None  # "Allergic to latex", "Not a gamer at all"
    if subject.lower_ in _PRONOUNS_SELF:
        return SELF
    if any(c.lower_ in ("i", "me") for c in subject.conjuncts):
        return SELF  # "my wife and I"
    relation = _relation(subject)
    if relation is not None:
        return relation if subject.lemma_.lower() not in lx.PARTNERS or relation else SELF
    if _possessor(subject) is not None and _possessor(subject).lower_ in ("my", "our"):
        return SELF  # "my hobby", "my flight", "my first language"
    if (subject.lemma_.lower() in _OWN_NOUNS or any(c.lower_ in ("favourite", "favorite", "fave")
                                                    for c in subject.children)) \
            and not any(c.dep_ in ("det", "poss") for c in subject.children):
        return SELF  # "Home's a farmhouse", "Birthday's in May", "Favourite colour is green"
    return None


# Nouns that, said without an owner, are the speaker's own: "Home's a farmhouse".
_OWN_NOUNS = frozenset({"home", "birthday", "name", "job", "hobby", "diet", "commute", "flight", "surgery",
                        "appointment", "interview", "exam", "wedding", "thesis", "defense", "defence", "operation",
                        "shift", "rota", "mortgage", "rent", "contract", "weekend", "morning", "evening", "night",
                        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})


# Verbs by which a thing (not a person) says something of the speaker: "gluten is off the table for
# me", "peanuts put me in hospital", "pollen doesn't bother me", "spicy food doesn't agree with me".
_ABOUT_ME_VERBS = frozenset({"be", "make", "put", "give", "bother", "agree", "affect", "trigger", "send", "keep",
                             "do", "wreck", "kill", "upset", "suit", "bring", "leave", "cause", "hurt", "diagnose",
                             "prescribe", "start", "take", "taste", "smell"})


def _mentions_self(clause: _Clause) -> bool:
    """ "Gluten is off the table for me", "Spanish is my first language": another subject, but
    the clause is about the speaker ("a lad on my course" is still the lad; "Daniel laughs at my
    Portuguese" is Daniel's doing)."""
    subject = clause.subject
    care = clause.lemmas & (lx.HEALTH | lx.ALLERGY)  # "doc put me on lisinopril": the person's health
    liking = subject is not None and subject.lower_ in ("that", "this") and any(
        c.dep_ == "attr" and _possessor(c) is not None and _possessor(c).lower_ == "my" and (
            c.lemma_.lower() in lx.PREFERENCE_WORDS or c.lemma_.lower() in ("idea", "heaven", "jam", "vibe"))
        for c in clause.head.children)  # "Rainy Sundays and a good book, that's my idea of heaven"
    if liking:
        return True
    if subject is not None and (subject.pos_ == "PRON" and subject.dep_ != "expl" or (
            subject.ent_type_ == "PERSON" or subject.lemma_.lower() in lx.RELATIONS | lx.PARTNERS | lx.OTHERS)
            and not care):
        return False
    if clause.head.lemma_.lower() not in _ABOUT_ME_VERBS:
        return False
    inside = {t.i for t in subject.subtree} if subject is not None else set()
    own = ("me", "my", "myself") if subject is not None and subject.dep_ == "expl" else ("me", "my", "us", "our",
                                                                                          "myself")
    return any(t.lower_ in own for t in clause.tokens if t.i not in inside)


def _governed_by(clause: _Clause) -> Token | None:
    return clause.head.head if clause.head.dep_ in ("ccomp", "advcl", "conj", "parataxis") else None


def _hedge(head: Token) -> bool:
    """ "I think", "I'm pretty sure", "I guess": the speaker's frame around what they assert."""
    subject = _subject_of(head)
    if subject is None or subject.lower_ not in ("i", "we"):
        return False
    if head.lemma_.lower() in lx.HEDGE_HEADS:
        return True
    return any(c.dep_ == "acomp" and c.lemma_.lower() in lx.SURE_WORDS for c in head.children)


def _unasserted(clause: _Clause) -> str:
    """Why a clause asserts nothing about now ("" when it does)."""
    head = clause.head
    marks = {c.lower_ for c in head.children if c.dep_ == "mark" or c.dep_ == "advmod" and c.tag_ == "WRB"
             and c.i < head.i}
    if marks & _CONDITIONS:
        return "conditional"  # "if I moved", "when I was a kid", "when I host a dinner"
    if any(c.tag_ == "TO" and c.dep_ == "aux" for c in head.children) and head.tag_ == "VB":
        return "infinitive"  # "Priya wants us both to run the 10K": wanted, not done
    first = next((t for t in clause.tokens if not t.is_punct and t.dep_ != "advmod" or t.tag_ == "WRB"), None)
    if first is not None and first.tag_ in ("WRB", "WP", "WDT") and first.i < head.i and not first.nbor().is_punct:
        return "subordinate"  # "… exactly where my photos showed" (but "Guess what, I …")
    if head.tag_ == "VBG" and head.lower_ in _DISCOURSE and clause.subject is None:
        return "discourse"  # "Speaking of the hospital, …"
    if clause.subject is None and any(c.dep_ == "advmod" and c.lower_ in lx.SPECULATIVE | {"probably"}
                                      for c in head.children):
        return "speculative"  # "… what I'd do — probably buy a little bookshop by the sea"
    if _hedge(head) and any(c.dep_ in ("ccomp", "parataxis") for t in (head, *head.children) for c in t.children):
        return "frame"  # "I'm pretty sure …": what it frames is read on its own
    lowered = {t.lower_ for t in clause.tokens}
    if lowered & {"jk", "kidding", "joking"}:
        return "joke"
    auxes = [c for c in head.children if c.dep_ in ("aux", "auxpass")]
    rather = any(c.lower_ == "rather" for c in head.children)  # "I'd rather walk than drive": a preference
    if any(a.lower_ in _MODALS for a in auxes) and not rather:
        return "modal"
    if head.lemma_.lower() in lx.WISH_VERBS or (head.lemma_.lower() == "like" and any(a.lower_ in ("'d", "would")
                                                                                     for a in auxes)):
        return "wish"
    if head.lemma_.lower() in ("think", "consider", "plan") and head.tag_ == "VBG":
        return "wish"  # "I'm thinking about moving"
    governor = _governed_by(clause)
    wishing = lx.WISH_VERBS | {"say", "suppose", "pretend"}
    if governor is not None and clause.head.dep_ == "ccomp" and governor.lemma_.lower() in wishing \
            and governor.lower_ == governor.lemma_.lower() and _subject_of(governor) is None:
        return "wish"  # "Wish I was a pilot", "Say I quit my job tomorrow"
    if governor is not None and clause.head.dep_ == "ccomp" and governor.lemma_.lower() in lx.REPORTING \
            and clause.head.i > governor.i:
        speaker = _subject_of(governor)
        if speaker is not None and speaker.lower_ not in ("i", "we", "you"):  # "you could say I'm …" hedges
            return "reported"  # "My mum says I'm stubborn"
    if governor is not None and clause.head.dep_ == "conj":
        return _unasserted(_Clause(governor, (), _subject_of(governor)))
    return ""


def _tense(clause: _Clause) -> str:
    """ "future", "perfect", "past" or "present"."""
    head = clause.head
    auxes = [c for c in head.children if c.dep_ in ("aux", "auxpass")]
    words = {a.lower_ for a in auxes}
    going = head.lemma_ == "go" and head.tag_ == "VBG" and any(c.dep_ == "xcomp" for c in head.children)
    if words & _FUTURE or going:
        return "future"
    if any(c.lower_ in ("going", "gonna") and c.dep_ == "aux" for c in auxes):
        return "future"
    if any(a.lemma_ == "have" and a.tag_ in ("VBP", "VBZ") for a in auxes):
        return "perfect"
    if head.tag_ == "VBD" or any(a.tag_ == "VBD" for a in auxes):
        return "past"
    return "present"


def _negated(clause: _Clause) -> bool:
    """ "I don't drink", "I have no children", "never": a negation of the clause's own verb or object."""
    for token in clause.tokens:
        if token.dep_ == "neg" and token.head.i == clause.head.i:
            return True
        if token.lower_ in ("no", "never") and token.dep_ in ("det", "neg", "advmod") and (
                token.head.i == clause.head.i or token.head.head.i == clause.head.i):
            return True
    return "no longer" in clause.text.lower()


# --- what it is about ------------------------------------------------------------------------------

def _entities(clause: _Clause, *labels: str) -> list[Span]:
    ids = {t.i for t in clause.tokens}
    doc = clause.head.doc
    return [e for e in doc.ents if e.label_ in labels and e.start in ids]


def _object_of(head: Token, *preps: str) -> Token | None:
    """The noun after one of `preps` ("live in X": X), through the head and its particles."""
    for child in head.children:
        if child.dep_ in ("prep", "agent", "dative") and child.lower_ in preps:
            found = next((c for c in child.children if c.dep_ == "pobj"), None)
            if found is not None:
                return found
        if child.dep_ in ("advmod", "prt", "acomp", "xcomp") and child.i > head.i:
            found = _object_of(child, *preps)
            if found is not None:
                return found
    return None


def _phrase(token: Token) -> str:
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


def _partnered(clause: _Clause) -> bool:
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


def _partner_noun(clause: _Clause) -> bool:
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


def _employment(clause: _Clause) -> bool:
    """ "I joined Microsoft", "I was hired by the museum", "I quit Acme", "laid off from Tesco"."""
    head = _kind_head(clause)
    lemma = head.lemma_.lower()
    if lemma not in _EMPLOYING:
        return False
    if lemma in ("quit", "leave") and any(t.lemma_ in ("job", "work", "position", "role") for t in clause.tokens):
        return True
    named = _employer_of(head)
    return named is not None and not (lemma == "join" and named.lemma_.lower() in lx.GROUPS)


def _employer_of(head: Token) -> Token | None:
    """The organisation a verb of employment names: its object, or after by / from / at / for."""
    found = _object_of(head, "at", "for", "with", "by", "from")
    if found is None:
        found = next((c for c in head.children if c.dep_ in ("dobj", "attr") and c.pos_ in ("PROPN", "NOUN")), None)
    if found is not None and found.lemma_.lower() in ("job", "work", "position", "role"):
        found = _object_of(found, "at", "with", "for")
    return found if found is not None and (found.pos_ == "PROPN" or any(
        c.dep_ == "det" and c.lower_ == "the" for c in found.children)) else None


def _favourite(clause: _Clause) -> Token | None:
    """ "My favourite band is Wet Leg": the kind of thing whose favourite it names."""
    subject = clause.subject
    if subject is None or clause.head.lemma_ not in ("be", "become"):
        return None
    if any(c.lower_ in ("favourite", "favorite", "fave", "fav") for c in subject.children):
        return subject
    return None


def _kind_head(clause: _Clause) -> Token:
    """The verb that says what a clause is about: "used to live" → "live", "tried to meditate"."""
    head = clause.head
    if head.lemma_.lower() in ("use", "try", "manage", "tend", "continue", "keep", "start", "begin", "stop", "quit",
                               "love", "like", "hate", "enjoy", "prefer", "have"):
        inner = next((c for c in head.children if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX")), None)
        if inner is not None and (head.lemma_.lower() not in lx.PREFERENCE_VERBS or inner.lemma_ in
                                  lx.RESIDENCE_VERBS | {"work"}):
            return inner
    return head


def _over(clause: _Clause) -> Token | None:
    """ "I'm over reality TV", "I've gone off coffee": what the speaker no longer likes."""
    head = clause.head
    if head.lemma_ in ("be", "go"):
        return _object_of(head, "over", "off")
    return None


def _ahead(clause: _Clause) -> bool:
    """A date that may lie ahead ("on 14 March", "next week"), not one behind or this very moment."""
    for entity in _entities(clause, "DATE", "TIME"):
        words = {t.lower_ for t in entity}
        if not words & {"last", "ago", "yesterday", "minute", "moment", "second", "earlier", "previous", "past"}:
            return True
    return False


def _kind(clause: _Clause, whose: str) -> str:
    """Which kind of fact the clause states, by its lemmas and entities ("" for none)."""
    lemmas = clause.lemmas
    head = _kind_head(clause).lemma_.lower()
    nouns = {t.lemma_.lower() for t in clause.tokens if t.pos_ in ("NOUN", "PROPN", "ADJ")}
    if lemmas & set(lx.DIET_LABELS):
        return "diet"  # "I'm fully vegan, no more fish"
    if nouns & lx.PET_SPECIES and (head in ("have", "get", "adopt", "own", "rescue", "call", "name", "be")
                                   or whose != SELF):
        return "pet"
    if lemmas & {"name", "call", "nickname"} and head in ("be", "call", "name") and not nouns & lx.RELATIONS:
        return "name"
    if "birthday" in lemmas or (head == "bear" and _entities(clause, "DATE")):
        return "birthday"
    if head in lx.RESIDENCE_VERBS and not _partnered(clause):
        return "residence"
    if _employment(clause):
        return "employer"
    if (whose == SELF and _partner_noun(clause)) or _partnered(clause):
        return "partner"
    if _favourite(clause) is not None:
        return "favorite"
    if head in ("visit", "travel", "tour") and clause.head.tag_ == "VBG" and _entities(clause, "GPE", "LOC"):
        return "trip"
    if head in ("die", "pass", "bury") or (head == "run" and "away" in lemmas) or (head == "put" and "down" in lemmas
                                                                                  and nouns & lx.PET_SPECIES):
        return "pet"
    if head in lx.RESIDENCE_VERBS or (lemmas & lx.PLACES and (_entities(clause, "GPE", "LOC") or (
            head == "be" and _object_of(clause.head, "in") is not None
            and _object_of(clause.head, "in").pos_ == "PROPN"))):
        return "residence"
    if head == "base" and _object_of(clause.head, "in"):
        return "residence"
    if head == "be" and _entities(clause, "GPE") and any(
            t.lower_ in ("years", "months", "decades") for e in _entities(clause, "DATE") for t in e):
        return "residence"  # "Been in Toronto six years now"
    if (head in ("bear", "raise", "breed") or (head == "grow" and "up" in lemmas)
            or (head in ("be", "come") and _object_of(clause.head, "from"))
            or (head == "be" and any(c.dep_ in ("acomp", "attr") and c.ent_type_ == "NORP"
                                     for c in clause.head.children))):
        return "origin"
    if lemmas & lx.LANGUAGE and (head == "speak" or _entities(clause, "LANGUAGE", "NORP") or "language" in lemmas
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
    if _occupation(clause) or head == "retire" or "retired" in lemmas:
        return "occupation"
    if head in ("work", "employ", "hire") or lemmas & {"job", "employer", "career", "unemployed", "freelance"}:
        return "employer"
    if lemmas & lx.EDUCATION and head not in ("like", "love", "enjoy", "hate"):
        return "education"
    if lemmas & lx.PLAN_NOUNS and _entities(clause, "DATE", "TIME"):
        return "plan"
    if head in lx.PREFERENCE_VERBS or lemmas & set(lx.PREFERENCE_WORDS) or _over(clause) is not None or (
            "rather" in lemmas):
        return "preference"
    if lemmas & lx.HOBBY:
        return "activity"
    owned = [c for c in _kind_head(clause).children if c.dep_ == "dobj"]
    if head in ("have", "own", "drive", "get", "buy", "ride", "pick") and (nouns & lx.POSSESSIONS or any(
            o.pos_ == "PROPN" or o.ent_type_ in ("PRODUCT", "ORG") for o in owned)):
        return "possession"  # "got myself a little electric Fiat 500"
    if nouns & (lx.RELATIONS | lx.PARTNERS) and head in ("have", "be", "get"):
        return "family"
    if lemmas & lx.ROUTINE and head not in lx.NON_FACT_VERBS:
        return "routine"
    if clause.head.tag_ == "VBG" and whose == SELF and _ahead(clause) and (
            clause.subject is None or clause.subject.lower_ in _PRONOUNS_SELF):
        return "plan"  # "Taking the kids to Disney World over spring break, April 7th"
    return ""


def _occupation(clause: _Clause) -> str:
    """The job a clause names: "I'm a nurse", "I work as a pharmacist", "became a teacher"."""
    head = clause.head
    if head.lemma_ in ("work", "train", "retrain", "qualify", "start") :
        found = _object_of(head, "as")
        if found is not None:
            return _phrase(found)
    for child in head.children:
        if child.dep_ in ("attr", "oprd", "acomp") and head.lemma_ in ("be", "become") and (
                child.lemma_.lower() in lx.OCCUPATIONS or child.lower_ in lx.OCCUPATIONS):
            return _phrase(child)
    return ""


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
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        return base + "es"
    if base.endswith("y") and len(base) > 1 and base[-2] not in "aeiou":
        return base[:-1] + "ies"
    return base + "s"


def _spoken(clause: _Clause) -> list[Token]:
    """The clause's words that say its fact: no lead-ins ("honestly", "but", "lol", "Good idea, …"),
    no vocative, no closing punctuation."""
    words = [t for t in clause.tokens if not t.is_space]
    subject = clause.subject
    if subject is not None:
        start = min(t.i for t in subject.subtree)
        comma = [t for t in words if t.i < start and t.lower_ in (",", ":")]
        if comma and not any(t.pos_ in ("VERB", "AUX") for t in words if t.i < comma[-1].i):
            words = [t for t in words if t.i > comma[-1].i]
    while words and (words[0].is_punct or words[0].lower_ in _DROP_LEADS or words[0].dep_ in ("intj", "cc", "mark")):
        words = words[1:]
    while words and (words[-1].is_punct or words[-1].lower_ in _JOKES or words[-1].dep_ in ("intj", "cc")):
        words = words[:-1]
    return [t for t in words if t.dep_ not in ("npadvmod",) or t.lemma_.lower() not in ("lol", "haha")]


def clause_text(clause: _Clause) -> str:
    """The clause in the third person: "I'm coeliac" → "User is coeliac", "my sister Ingrid is
    older than me" → "User's sister Ingrid is older than User"."""
    words = _spoken(clause)
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
    owned = subject is not None and subject.lemma_.lower() in _OWN_NOUNS and not any(
        c.dep_ in ("det", "poss") for c in subject.children)  # "Birthday's the 29th": the speaker's own
    if subject is None and words[0].i == clause.head.i or (subject is None and words[0].pos_ in ("AUX", "VERB")):
        lead = words[0]
        # "Born and bred in Cork", "Diagnosed with asthma at six": passive; "Sold the Focus": active
        passive = lead.tag_ == "VBN" and lead.lemma_.lower() in _SAID_OF_ONE and not any(
            c.dep_ == "dobj" for c in lead.children)
        prefix = {"VBN": "User has" if lead.lower_ == "been" else "User was" if passive else "User",
                  "VBG": "User is", "VBD": "User", "MD": "User"}.get(lead.tag_, "User")
        out.append(prefix + " ")
        if lead.tag_ in ("VBN", "VBD", "VBG") and lead.text[:1].isupper() and lead.ent_type_ == "":
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
        if lower in ("i", "we") and token.dep_ in _SUBJECTS | {"conj"}:
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


def _owner_words(whose: str, name: str = "") -> tuple[str, bool]:
    """How a fact names its subject, and whether its verb is plural ("User's parents live")."""
    if whose == SELF:
        return "User", False
    owner = f"User's {whose} {name}" if name else f"User's {whose}"
    return owner, whose.split()[-1] in ("parents", "kids", "children", "grandparents", "twins")


def _name_of(clause: _Clause) -> str:
    """The name the clause's subject is given ("my partner Sam")."""
    subject = clause.subject
    name = next((c for c in subject.children if c.dep_ == "appos" and c.pos_ == "PROPN"), None) if subject else None
    return name.text if name is not None else ""


def _templated(slot: str, whose: str, value: str, *, word: str = "", name: str = "") -> str:
    owner, plural = _owner_words(whose, name)
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
    if slot == "name":
        return f"{owner}'s name is {value}"
    if slot == "partner":
        return f"{owner}'s {word or 'partner'} is {value}" if word != "status" else f"{owner} {verb['is']} {value}"
    raise ValueError(slot)


# --- reading one clause ---------------------------------------------------------------------------

def _denied(clause: _Clause) -> str:
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


def _changed(clause: _Clause, sent: Span) -> bool:
    words = {t.lemma_.lower() for t in sent} | {t.lower_ for t in sent}
    return bool(words & lx.CHANGE_WORDS) or "no longer" in sent.text.lower()


def _slot_reading(clause: _Clause, whose: str, slot: str, sent: Span) -> Reading | None:
    """A reading of a kind one value fills at a time, in its one form."""
    head = clause.head
    negated = _negated(clause)
    base = {"subject": whose, "slot": slot, "change": _changed(clause, sent), "clause": clause.text,
            "negated": negated}
    if slot == "residence":
        named = [e.root for e in _entities(clause, "GPE", "LOC") if e.root.dep_ in ("pobj", "attr", "appos")]
        place = named[0] if named else _object_of(head, "in", "to", "into", "near")
        old = _object_of(head, "from", "of") if head.lemma_ in ("move", "relocate", "emigrate") else None
        if place is not None and old is not None and place.i == old.i:
            place = _object_of(head, "to", "into")
        if place is not None and place.pos_ == "NOUN":
            inner = _object_of(place, "in", "near", "outside")
            place = inner if inner is not None and inner.pos_ == "PROPN" else place
        if place is None or place.pos_ not in ("PROPN", "NOUN"):
            if old is not None:
                said = _phrase(old)
                return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                               text=f"{_owner_words(whose)[0]} moved away from {said}")
            return None
        said = _place(place)
        if negated:
            return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                           text=f"{_owner_words(whose)[0]} no longer lives in {said}")
        return Reading(**base, value=value_of(said), ended=value_of(_phrase(old)) if old is not None else "",
                       text=_templated("residence", whose, said, name=_name_of(clause)))
    if slot == "employer":
        verb = _kind_head(clause)
        org = _employer_of(verb) or _object_of(head, "at", "for", "with")
        if org is None:
            return None
        said = _phrase(org)
        if verb.lemma_ in ("leave", "quit", "resign", "lose", "lay", "fire", "sack"):
            return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                           text=f"{_owner_words(whose)[0]} left their job at {said}")
        if negated:
            return Reading(**{**base, "change": True}, value="", ended=value_of(said),
                           text=f"{_owner_words(whose)[0]} no longer works at {said}")
        return Reading(**base, value=value_of(said),
                       text=_located(clause, _templated("employer", whose, said, name=_name_of(clause))))
    if slot == "occupation":
        job = "retired" if head.lemma_ == "retire" or "retired" in clause.lemmas else _occupation(clause)
        job = re.sub(r"^(?:an?|the)\s+", "", job, flags=re.I)
        if not job or negated:
            return None
        text = _templated("occupation", whose, job.lower(), name=_name_of(clause))
        org = next((t for t in clause.tokens if t.dep_ == "pobj" and t.head.lower_ in ("at", "for")
                    and t.pos_ == "PROPN"), None)
        return Reading(**base, value=value_of(job), key=value_of(_phrase(org)) if org is not None else "",
                       text=_located(clause, f"{text} at {_phrase(org)}" if org is not None else text))
    if slot == "diet":
        label = next((lx.DIET_LABELS[t.lower_] for t in clause.tokens if t.lower_ in lx.DIET_LABELS), "")
        verb = _kind_head(clause)
        if not label and verb.lemma_ == "eat" and any(t.lemma_ == "meat" for t in clause.tokens):
            off = negated or head.lemma_ in ("stop", "quit", "give")  # "I stopped eating meat"
            said = "vegetarian" if off else "omnivore"
            return Reading(**{**base, "change": base["change"] or off}, value=said,
                           text=clause_text(clause) if off else f"{_owner_words(whose)[0]} eats meat")
        if not label:
            return None
        if negated or head.lemma_ in ("stop", "quit", "give"):
            return Reading(**{**base, "change": True}, value="", ended=label,
                           text=f"{_owner_words(whose)[0]} is no longer {label}")
        return Reading(**base, value=label, text=_templated("diet", whose, label))
    return None


def _employer_too(found: Reading) -> Reading | None:
    """ "I work at Acme as an accountant": a job at a named employer says where they work too (one
    fact, read for both kinds, so that leaving Acme ends it)."""
    if found.slot == "occupation" and found.key:
        return replace(found, slot="employer", value=found.key, key="")
    return None


_STATUSES = frozenset({"single", "married", "engaged", "divorced", "separated", "widowed"})


def _partner_reading(clause: _Clause, sent: Span) -> Reading | None:
    """A partner by name ("I'm dating Anna", "engaged to Chris") or a status ("I'm single")."""
    head = clause.head
    text = clause_text(clause)
    base = {"subject": SELF, "slot": "partner", "text": text, "clause": clause.text, "change": _changed(clause, sent)}
    ex = next((t for t in clause.tokens if t.lower_ == "ex"), None)
    if ex is not None:
        named = _named(ex) or next((t for t in clause.tokens if t.pos_ == "PROPN"), None)
        return Reading(**{**base, "change": True}, value="", ended=named.lower_ if named is not None else "*")
    status = head.lower_ if head.lower_ in _STATUSES else next(
        (c.lower_ for c in head.children if c.dep_ in ("acomp", "attr", "oprd") and c.lower_ in _STATUSES), "")
    partner = _object_of(head, "to", "with") if head.lemma_ in ("marry", "engage", "get", "be") else None
    if head.lemma_ in ("date", "see", "marry") or status in ("married", "engaged"):
        partner = partner or next((c for c in head.children if c.dep_ == "dobj" and c.pos_ == "PROPN"), None)
    if partner is None:
        partner = next((t for t in sent if t.lemma_ == "name" and t.head.lemma_ == "be" and any(
            p.lower_ in ("her", "his", "their") for p in t.children)), None)
        partner = next((c for c in partner.head.children if c.dep_ == "attr" and c.pos_ == "PROPN"), None) \
            if partner is not None else None  # "I'm seeing someone new, her name is Ellie"
    if partner is not None and partner.pos_ == "PROPN":
        if partner.text not in text:  # "I'm seeing someone new, her name is Priya"
            base["text"] = f"User's partner is {_name_span(partner)}"
        return Reading(**base, value=partner.lower_)
    if status:
        return Reading(**base, value=status, negated=_negated(clause))
    return None


def _favourite_reading(clause: _Clause, whose: str) -> Reading | None:
    """ "My favourite band is Wet Leg": kind "band", value "wet leg"."""
    subject = _favourite(clause)
    value = next((c for c in clause.head.children if c.dep_ in ("attr", "acomp", "oprd")), None)
    if subject is None or value is None:
        return None
    said = " ".join(t.text for t in value.subtree if not t.is_punct and t.lower_ not in ("now", "these", "days"))
    return Reading(subject=whose, slot="favorite", key=subject.lemma_.lower(), value=value_of(said),
                   text=clause_text(clause), change=True, clause=clause.text)


def _place(token: Token) -> str:
    """A place as said, with the region that follows it ("Perth, Western Australia")."""
    said = _phrase(token)
    said = re.sub(r"^(?:the|a|an)\s+", "", said) if token.pos_ == "PROPN" else said
    region = next((c for c in token.children if c.dep_ in ("appos", "npadvmod", "conj") and c.pos_ == "PROPN"
                   and c.i > token.i), None)
    return f"{said}, {_phrase(region)}" if region is not None else said


def _located(clause: _Clause, text: str) -> str:
    """A job's words with the city it is in, when the clause names one ("… at Siemens in Munich")."""
    city = next((t for t in clause.tokens if t.dep_ == "pobj" and t.head.lower_ == "in" and t.pos_ == "PROPN"), None)
    said = _phrase(city) if city is not None else ""
    return f"{text} in {said}" if said and said not in text else text


_STRONG = frozenset({"diet", "allergy", "health", "preference", "language", "plan", "origin", "family", "pet",
                     "partner", "name", "age", "birthday"})
_ABOUT_OTHERS = frozenset({"residence", "employer", "occupation", "age", "health", "diet", "allergy"})
_REQUESTS = frozenset({"please", "pls", "plz"})


def _imperative(clause: _Clause) -> bool:
    """ "Give me five ideas", "Translate this, please": a request, not a statement."""
    head = clause.head
    bare = head.lower_ == head.lemma_.lower()  # "set a reminder", not "Got an iPhone" the tagger took for one
    if clause.subject is None and bare and head.lemma_.lower() not in set(lx.PREFERENCE_VERBS) | _GIVING_UP and not any(
            c.dep_ == "aux" for c in head.children) and (head.tag_ == "VB" or head.lemma_.lower() in lx.REQUEST_VERBS):
        return True  # a bare verb with no subject: a request, or the rest of a "what I'd do" (never a statement)
    if clause.subject is not None or head.tag_ != "VB" or head.dep_ != "ROOT":
        return False
    first = next((t for t in clause.tokens if not t.is_punct and (t.lower_ not in _DROP_LEADS or t.i == head.i)),
                 None)
    return first is not None and first.i == head.i and head.lemma_.lower() not in lx.PREFERENCE_VERBS


def _passing(clause: _Clause, sent: Span) -> bool:
    """A mood or a moment ("I'm so tired today", "starving right now"), not what they are."""
    head = clause.head
    if any(c.dep_ in ("acomp", "attr") and (c.lemma_.lower() in lx.MOODS or c.lower_ in lx.MOODS)
           for c in head.children):
        return True
    if head.lemma_.lower() in lx.MOODS or head.lemma_.lower() in ("feel", "buzz"):
        return True
    if _kind(clause, SELF):
        return False  # "I'm working for Initech right now": a job, said now
    words = {t.lower_ for t in sent}
    if _tense(clause) == "past" and words & {"today", "tonight", "rn", "morning"} and not _entities(clause, "DATE"):
        return True  # "woke up late, spilled coffee on my shirt": the day's news
    if words & {"rn", "atm"}:
        return True
    now = {t.lower_ for t in clause.tokens} & {"today", "tonight", "now", "currently", "moment"}
    return bool(now) and ("right" in {t.lower_ for t in clause.tokens} or now & {"today", "tonight"}) \
        and _tense(clause) == "present" and head.tag_ in ("VBP", "VBZ", "VBG")


def _idle(clause: _Clause) -> bool:
    """ "I have a question", "I need help", "I get it": what the conversation needs, not the person."""
    head = clause.head.lemma_.lower()
    objects = [c for c in clause.head.children if c.dep_ in ("dobj", "attr", "xcomp", "ccomp")]
    if head in lx.NON_FACT_VERBS:
        return True
    return head in ("have", "get", "got") and bool(objects) and all(
        o.lemma_.lower() in lx.IDLE_OBJECTS or o.pos_ == "PRON" for o in objects)


def _ending(clause: _Clause, whose: str | None) -> Reading | None:
    """What ends a partnership or a pet's life: "Tom and I broke up", "Max died in the spring"."""
    head = _kind_head(clause)
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
        owner = _possessor(subject)
        bare = subject.is_title and not any(c.dep_ in ("det", "poss") for c in subject.children)
        name = subject.lower_ if subject.pos_ == "PROPN" or bare else ""
        if not name and not (species and owner is not None and owner.lower_ in ("my", "our")):
            return None
        return Reading(subject=SELF, slot="pet", key=name or species, value="gone", change=True,
                       text=text, clause=clause.text)
    return None


def _read_clause(clause: _Clause, sent: Span) -> Iterator[Reading]:
    if not clause.tokens or _unasserted(clause) or _imperative(clause):
        return
    ending = _ending(clause, _whose(clause, sent))
    if ending is not None:
        yield ending
        return
    if {t.lower_ for t in clause.tokens} & _REQUESTS and (clause.subject is None or clause.subject.lower_ == "you"):
        return  # "… please" asked of the assistant; "no spicy food for me please, I can't handle chilli" states
    whose = _whose(clause, sent)
    direct = whose is not None
    if whose is None and _mentions_self(clause):
        whose = SELF
        direct = clause.subject is not None and clause.subject.dep_ == "expl"  # "there's a piano in my flat"
    if whose is None:
        return
    slot = _kind(clause, whose)
    if whose != SELF and (slot not in _ABOUT_OTHERS or whose.split()[-1] not in lx.RELATIONS | lx.PARTNERS and not (
            whose.split()[-1] in lx.OTHERS and _lasting(clause.subject))):
        return  # someone else's news is theirs; family's (and friends') lasting facts are the person's to tell
    if not direct and slot not in _STRONG:
        return
    if clause.subject is None and not slot and not (_given_up(clause) or any(
            c.dep_ in ("dobj", "attr") and c.pos_ in ("NOUN", "PROPN") for c in clause.head.children)):
        return  # "Pouring all day here": a clause without its subject says what it is about, or nothing
    if not any(t.pos_ in ("VERB", "AUX") for t in clause.tokens):
        given_up = _given_up(clause)
        if clause.subject is None and whose == SELF and (slot or given_up) and clause.head.pos_ in ("ADJ", "NOUN"):
            spoken = "".join(t.text_with_ws for t in _spoken(clause)).strip()
            spoken = re.sub(r"\b(?:me|myself)\b", "User", spoken)
            no = any(t.lower_ == "no" and t.i < clause.head.i for t in clause.tokens)
            spoken = f"no {spoken}" if no and not spoken.lower().startswith("no ") else spoken
            counted = any(c.dep_ == "nummod" for c in clause.head.children)  # "three kids (4, 7 and 11)"
            verb = "has" if no or counted else "is"  # "User has no kids", "User is vegan"
            yield Reading(subject=SELF, slot=slot or "other", key=_key(clause, slot), value=_value(clause, slot),
                          text=f"User {verb} {spoken[:1].lower()}{spoken[1:]}", negated=_negated(clause),
                          ended=given_up, change=bool(given_up), clause=clause.text)
            return
        yield from _fragment(clause, slot)
        return
    tense = _tense(clause)
    head = clause.head
    lemmas = clause.lemmas
    if _passing(clause, sent) or (_idle(clause) and slot not in _STRONG):
        return
    if tense == "future" and not _entities(clause, "DATE", "TIME"):
        return
    if (lemmas & _FIGURATIVE or lemmas & _JOKES) and slot in ("residence", "employer", "occupation"):
        return  # "I'm basically a taxi driver for my kids haha"
    if tense == "future" or (_entities(clause, "DATE", "TIME") and head.tag_ == "VBG"
                             and slot in ("activity", "", "education") and tense == "present"):
        slot = "plan"
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
        found = _slot_reading(clause, whose, slot, sent)
        if found is not None:
            yield replace(found, past=past, text=clause_text(clause) if past else found.text)
            also = _employer_too(found)
            if also is not None:
                yield replace(also, past=past, text=clause_text(clause) if past else found.text)
            return
        if whose != SELF:
            return
        # "I love living here", "I work nights": about their home or work, with no value to compare
        slot = {"residence": "home", "diet": "diet"}.get(slot, "work")
        if _entities(clause, "DATE", "TIME") and tense == "future" or head.tag_ == "VBG" and tense != "past" \
                and _entities(clause, "DATE"):
            slot = "plan"
    text = clause_text(clause)
    if len(text.split()) < 2 or text.split()[-1] in ("has", "is", "was", "does", "have", "got", "had"):
        return  # "User has": the parse left the clause's object elsewhere
    if not _says_something(clause):
        return  # "I finally did it": nothing but pronouns after the verb
    given_up = _given_up(clause)
    yield Reading(subject=whose, slot=slot, key=_key(clause, slot), value=_value(clause, slot), text=text,
                  ended=given_up or _denied(clause), change=bool(given_up) or _changed(clause, sent), past=past,
                  negated=_negated(clause), clause=clause.text)


_GIVING_UP = frozenset({"sell", "stop", "quit", "drop", "ditch", "give", "switch", "leave", "cancel", "lose", "trade",
                        "uninstall", "cut", "scrap", "dump"})


def _given_up(clause: _Clause) -> str:
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
    head = _kind_head(clause) if clause.head.lemma_ not in _GIVING_UP else clause.head
    lemma = head.lemma_.lower()
    if lemma not in _GIVING_UP or (lemma == "give" and not any(c.lower_ == "up" for c in head.children)):
        return ""
    if lemma == "switch":
        old = _object_of(head, "from")
        return value_of(_phrase(old)) if old is not None else ""
    thing = next((c for c in head.children if c.dep_ in ("dobj", "xcomp") and c.pos_ in ("NOUN", "PROPN", "VERB")),
                 None) or _object_of(head, "in", "off", "out")  # "traded in the Civic"
    if thing is None or thing.lemma_.lower() in ("job", "work", "it", "that"):
        return ""
    return value_of(thing.text if thing.pos_ == "VERB" else _phrase(thing))


def _says_something(clause: _Clause) -> bool:
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


def _fragment(clause: _Clause, slot: str) -> Iterator[Reading]:
    """A clause without a verb says a preference ("Tea over coffee any day") or nothing."""
    words = _spoken(clause)
    if slot != "preference" and not any(t.lower_ in ("over", "before") for t in words):
        return
    said = "".join(t.text_with_ws for t in words).strip()
    if len(words) >= 2:
        yield Reading(subject=SELF, slot="preference", key=_key(clause, "preference"), value="+",
                      text=f"User prefers {said[:1].lower()}{said[1:]}", clause=clause.text)


def _key(clause: _Clause, slot: str) -> str:
    """What identifies a clause's fact within its kind: for a taste or a pastime, what is liked or
    done ("horror movie", "tennis"); else its content lemmas, without the verb."""
    kind_head = _kind_head(clause)
    if slot in ("preference", "activity"):
        thing = _over(clause) or next((c for c in kind_head.children if c.dep_ in ("dobj", "xcomp", "attr", "pobj")
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


def _value(clause: _Clause, slot: str) -> str:
    if slot == "preference":
        lemma = clause.head.lemma_.lower()
        if _over(clause) is not None or (lemma == "stand" and _negated(clause)):
            return "-"  # "I'm over reality TV", "I can't stand horror films"
        polarity = lx.PREFERENCE_VERBS.get(lemma, "+")
        return {"+": "-", "-": "+"}[polarity] if _negated(clause) else polarity
    if slot == "activity" and clause.head.lemma_ in ("stop", "quit", "give"):
        return "no"
    dates = _entities(clause, "DATE", "TIME")
    if slot == "plan" and dates:
        return value_of(dates[0].text)
    return "no" if _negated(clause) else "yes"


# --- family and friends by name --------------------------------------------------------------------

def _named(token: Token) -> Token | None:
    """The name a relation noun is given: "my sister Ingrid", "my son, Leo", "my dog is called Rex",
    "Meg, my old sheepdog"."""
    if token.dep_ == "appos" and token.head.pos_ == "PROPN":
        return token.head
    if token.dep_ == "attr" and any(c.dep_ == "case" for c in token.children):
        return None  # "Shelby was my grandad's": whose, not who
    nxt = token.nbor() if token.i + 1 < len(token.doc) else None
    if nxt is not None and nxt.pos_ == "PROPN" and nxt.ent_type_ not in ("GPE", "LOC", "DATE", "ORG", "NORP"):
        return nxt  # "my partner Sam is …", "my fiancé Julien stays …", however the parser hung the name
    for child in token.children:
        if child.dep_ in ("appos", "npadvmod", "compound") and child.pos_ == "PROPN" and child.i > token.i:
            return child
    if token.dep_ in ("nsubj", "nsubjpass"):
        head = token.head
        for child in head.children:
            if child.dep_ in ("attr", "oprd") and child.pos_ == "PROPN" and head.lemma_ in ("be", "call", "name"):
                return child
    if token.dep_ == "compound" and token.head.pos_ == "PROPN":
        return token.head
    for child in token.children:  # "a dog named Max"
        if child.dep_ == "acl" and child.lemma_ in ("name", "call"):
            found = next((c for c in child.children if c.dep_ in ("oprd", "attr", "dobj") and c.pos_ == "PROPN"), None)
            if found is not None:
                return found
    after = token.doc[token.i + 1:token.i + 6]
    if any(t.lower_ in ("called", "named", "name") for t in after):  # "my husband's called Raj", "mum's name is"
        return next((t for t in after if t.pos_ == "PROPN"), None)
    if token.dep_ == "attr" and token.head.lemma_ == "be":
        subject = _subject_of(token.head)
        if subject is not None and subject.pos_ == "PROPN":
            return subject  # "Ingrid is my sister"
    return None


def _lasting(token: Token) -> bool:
    """Whether what the sentence says of a person is how things are ("my friend Joana is a nurse in
    Porto", "… lives in Leeds") rather than what happened to them."""
    head = token.head if token.dep_ in ("nsubj", "appos", "nsubjpass") else token
    while head.dep_ == "appos":
        head = head.head
    if head.dep_ in ("nsubj", "nsubjpass"):
        head = head.head
    return head.lemma_ in ("be", "live", "work") and head.tag_ in ("VBZ", "VBP")


def _owned(token: Token) -> bool:
    """ "my dog", "our cat", "I have a golden retriever": an animal of the speaker's."""
    owner = _possessor(token)
    if owner is not None:
        return owner.lower_ in ("my", "our")
    verbs = [t for t in token.sent if t.i < token.i and t.lemma_ in ("have", "get", "adopt", "own", "rescue")]
    return any(_subject_of(v) is not None and _subject_of(v).lower_ in ("i", "we") for v in verbs)


def _name_span(token: Token) -> str:
    """A name with the words it is made of ("Sam Rivera", "Mr Pickles")."""
    for entity in token.doc.ents:
        if entity.start <= token.i < entity.end and entity.label_ in ("PERSON", "ORG", "PRODUCT", ""):
            return entity.text
    start = token.i
    while start > 0 and token.doc[start - 1].pos_ == "PROPN" and token.doc[start - 1].dep_ in ("compound", "flat"):
        start -= 1
    return token.doc[start:token.i + 1].text


def _people(sent: Span) -> Iterator[Reading]:
    for token in sent:
        lemma = token.lemma_.lower()
        if lemma not in lx.RELATIONS | lx.PARTNERS | lx.PET_SPECIES:
            continue
        relation = _relation(token) if lemma not in lx.PET_SPECIES else (token.lower_ if _owned(token) else None)
        name = _named(token)
        if relation is None or name is None or name.ent_type_ in ("DATE", "TIME", "NORP") or (
                name.ent_type_ in ("GPE", "LOC") and lemma not in lx.PET_SPECIES):
            continue
        if lemma in lx.OTHERS and not _lasting(token):
            continue  # "my coworker Dmitri just got promoted": their news, not who they are to the person
        said = _name_span(name)
        if lemma in lx.PET_SPECIES:
            kind = " ".join([c.lower_ for c in token.children if c.dep_ == "amod" and c.i < token.i] + [lemma])
            yield Reading(subject=SELF, slot="pet", key=f"{said.lower()}|{lemma}", value="alive",
                          text=f"User has {'an' if kind[0] in 'aeiou' else 'a'} {kind} named {said}",
                          ended=_denied_near(token), clause=sent.text)
        elif lemma in lx.PARTNERS:
            yield Reading(subject=SELF, slot="partner", value=said.lower(), text=f"User's {relation} is {said}",
                          clause=sent.text, ended=_denied_near(token))
        else:
            changed = bool({t.lemma_.lower() for t in sent} & lx.CHANGE_WORDS)  # "sorry, my mum's name is Rita"
            yield Reading(subject=SELF, slot="family", key=said.lower(), value=relation,
                          text=f"{said} is User's {relation}", clause=sent.text, change=changed)


def _identity(sent: Span) -> Iterator[Reading]:
    """A name ("I'm Marguerite", "my name's Bart", "call me Kenji") and an age ("I'm 34")."""
    for token in sent:
        name = None
        if sent[0].lemma_.lower() in lx.REQUEST_VERBS and sent[0].lower_ == sent[0].lemma_.lower():
            return  # "explain compound interest like I'm 10"
        if token.lemma_ == "be" and _subject_of(token) is not None and _subject_of(token).lower_ == "i":
            attr = next((c for c in token.children if c.dep_ == "attr"), None)
            if attr is not None and attr.pos_ == "PROPN" and attr.ent_type_ in ("PERSON", ""):
                name = attr
            if attr is not None and attr.like_num and token.tag_ == "VBP" and token.dep_ == "ROOT" \
                    and not _negated(_Clause(token, tuple(token.subtree), None)):
                years = attr.text
                yield Reading(subject=SELF, slot="age", value=years, text=f"User is {years}", clause=sent.text)
        if token.lemma_ == "turn" and (_subject_of(token) is None or _subject_of(token).lower_ == "i"):
            years = next((c for c in token.children if c.like_num and c.dep_ in ("dobj", "attr", "oprd", "npadvmod")),
                         None)  # "turned 30 today"
            if years is not None:
                yield Reading(subject=SELF, slot="age", value=years.text, text=f"User is {years.text}",
                              change=True, clause=sent.text)
        if token.lemma_ == "call" and any(c.lower_ == "me" for c in token.children):
            me = next(c for c in token.children if c.lower_ == "me")
            name = next((t for t in token.doc[me.i + 1:me.i + 3] if t.is_title and not t.is_punct), None)
        if token.lemma_ == "name" and _possessor(token) is not None and _possessor(token).lower_ == "my":
            name = next((t for t in sent.doc[token.i + 1:token.i + 4] if t.pos_ == "PROPN"), None)
        if name is not None:
            said = _name_span(name)
            yield Reading(subject=SELF, slot="name", value=said.lower(), text=f"User's name is {said}",
                          clause=sent.text)


def _denied_near(token: Token) -> str:
    """The name a sentence denies: "my dog is called Rex, not Max" → "max"."""
    for word in token.sent:
        if word.lower_ == "not":
            after = next((t for t in token.doc[word.i + 1:word.i + 4] if t.pos_ == "PROPN"), None)
            if after is not None:
                return after.lower_
    return ""


# --- the reader ---------------------------------------------------------------------------------

def read_doc(doc) -> tuple[Reading, ...]:
    found: dict[tuple[str, str], Reading] = {}
    for sent in doc.sents:
        people = list(_people(sent)) + list(_identity(sent))
        for reading in people:
            found.setdefault((reading.text.lower(), reading.slot), reading)
        if _asks(sent):
            continue
        named = {r.slot for r in people}
        said = {r.text.lower() for r in people}
        parts = clauses(sent)
        asked = next((c.head for c in parts if c.head.dep_ == "ROOT" and _imperative(c)
                      and c.head.lemma_.lower() in lx.REQUEST_VERBS), None)
        for clause in parts:
            if asked is not None and clause.head.i > asked.i and asked in clause.head.ancestors:
                continue  # "explain compound interest like I'm 10": what a request says is no statement
            for reading in _read_clause(clause, sent):
                if reading.slot in named and reading.slot in ("pet", "partner") and reading.subject == SELF \
                        and clause.head.lemma_ in ("call", "name", "have", "get", "adopt"):
                    continue  # "my dog is called Rex", "I have a dog named Rex": the named pet is the fact
                if reading.text.lower() in said:
                    continue
                found.setdefault((reading.text.lower(), reading.slot), reading)
        if not any(r.clause and r.clause in sent.text for r in found.values()):
            mentioned = _mentioned(sent)
            if mentioned is not None:
                found.setdefault((mentioned.text.lower(), mentioned.slot), mentioned)
    return tuple(found.values())


# Kinds that a word alone is enough to tell, in a sentence the parse could not read into a clause.
_TOLD_BY_A_WORD = (("allergy", lx.ALLERGY), ("health", lx.HEALTH), ("diet", frozenset(lx.DIET_LABELS) | lx.DIET),
                   ("pet", lx.PET_SPECIES), ("family", lx.RELATIONS), ("language", lx.LANGUAGE - {"speak", "native"}),
                   ("activity", lx.HOBBY), ("education", lx.EDUCATION), ("work", lx.OCCUPATIONS))
_OTHER_PEOPLE = frozenset({"he", "she", "they", "him", "her", "them", "his", "their"})


def _mentioned(sent: Span, *, by_word: bool = True) -> Reading | None:
    """A sentence the clauses missed, as chat writes them ("penicillin allergy fyi", "asthma since i was
    a kid lol", "I am having diabetes type 2 since 2019"): kept in the person's words when it speaks of
    the person (first person, or no subject at all), asserts nothing it should not (no question, wish,
    condition, mood or request), says nothing of anyone else, and holds a word of a kind one word tells."""
    words = [t for t in sent if not t.is_punct and not t.is_space]
    lowered = {t.lower_ for t in words}
    if not words or _asks(sent) or len(words) > 30 or lowered & (_OTHER_PEOPLE | _REQUESTS | lx.SPECULATIVE):
        return None
    own = lowered & {"i", "i'm", "my", "me", "myself", "we", "our", "us"}
    subjects = [t for t in words if t.dep_ in _SUBJECTS and t.lower_ not in _PRONOUNS_SELF]
    people = lx.RELATIONS | lx.PARTNERS | lx.OTHERS | lx.OCCUPATIONS
    owners = [o for t in subjects for o in t.subtree if o.dep_ == "poss" and o.lemma_.lower() in lx.OTHERS]
    speaker = any(t.dep_ in _SUBJECTS and t.lower_ in ("i", "we") for t in words)
    if not own and subjects and by_word or owners or not speaker and any(
            t.ent_type_ == "PERSON" or t.lemma_.lower() in people for t in subjects):
        return None  # "my cousin got into Oxford", "my neighbour's dog died": their news
    for clause in clauses(sent):
        if _unasserted(clause) or _passing(clause, sent) or _imperative(clause) or (
                _tense(clause) == "future" and not _entities(clause, "DATE", "TIME")):
            return None
    lemmas = {t.lemma_.lower() for t in words} | lowered
    slot = next((kind for kind, vocabulary in _TOLD_BY_A_WORD if lemmas & vocabulary), "")
    if not slot and by_word:
        return None
    start = next((t for t in words if t.lower_ not in _DROP_LEADS), None)
    said = sent.doc[start.i:sent.end].text.strip(" .!,") if start is not None else ""
    said = re.sub(r"\b(?:i|I)\b", "User", re.sub(r"\b(?:my|My|our|Our)\b", "their", said.strip()))
    said = re.sub(r"\b(?:me|us|myself)\b", "User", said)
    if len(said.split()) < 1:
        return None
    # No value: a mention in the person's words is found and answered, never compared as a claim.
    vocabulary = next((v for k, v in _TOLD_BY_A_WORD if k == slot), frozenset())
    return Reading(subject=SELF, slot=slot or "other", key=" ".join(sorted(lemmas & vocabulary))[:80],
                   negated=bool(lowered & _NEGATIONS), text=f"User mentioned: {said}", clause=sent.text)


# Where chat runs two thoughts together without a full stop: each part is parsed on its own, so
# that "…, anyway can you help me?" makes a question of its own part only.
_PARTS = re.compile(r"\s+[—–-]+\s+|;\s+|:\s+|\s*\n+\s*")


def parts_of(text: str) -> list[str]:
    """A statement's parts as the reader reads them: its sentences, and what dashes, colons and
    semicolons set apart in them, each read as a sentence of its own (and parsed once)."""
    return _parts(text)


@lru_cache(maxsize=8192)
def _split(text: str) -> tuple[str, ...]:
    parts = [p.strip() for sentence in split_sentences(normalise_statement(text))
             for p in _PARTS.split(sentence) if p.strip()]
    return tuple(p if p[-1] in ".!?…\"'”)" else p + "." for p in parts)


def _parts(text: str) -> list[str]:
    """The text's parts, each ending as a sentence does: the parser reads "I enjoy running" without
    its full stop as a sentence whose verb is "running"."""
    return list(_split(text))


def _repaired(doc) -> str:
    """ "My husband's called Raj", "Birthday's the 29th", "my German's passable": a "'s" the tagger
    took for a possessive where it says "is" (a participle, an article, a preposition or a lone
    adjective follows it); "" when there is none."""
    out, fixed = [], False
    for token in doc:
        after = doc[token.i + 1] if token.i + 1 < len(doc) else None
        if token.tag_ == "POS" and token.lower_ == "'s" and after is not None and (
                after.pos_ in ("ADP", "DET", "NUM") or after.tag_ in ("VBN", "VBG", "PRP$")
                or (after.pos_ == "ADJ" and after.head.i <= after.i)):
            out.append(" is" + token.whitespace_)
            fixed = True
        else:
            out.append(token.text_with_ws)
    return "".join(out) if fixed else ""


@lru_cache(maxsize=8192)
def read(text: str) -> tuple[Reading, ...]:
    """Everything a statement (or a stored fact) says about the speaker and the people they name."""
    found: dict[tuple[str, str], Reading] = {}
    docs = parse_all(_parts(text))
    docs = [parse(again) if (again := _repaired(doc)) else doc for doc in docs]
    for doc in docs:
        for reading in read_doc(doc):
            found.setdefault((reading.text.lower(), reading.slot), reading)
    # "Sorry, that was autocorrect — my mum's name is Rita": a change word anywhere speaks for every part
    changed = any({t.lemma_.lower() for t in doc} & lx.CHANGE_WORDS for doc in docs)
    return tuple(replace(r, change=r.change or changed) for r in found.values())


def mention_of(text: str) -> Reading | None:
    """The person's own words, where they speak of the person and assert something (no question,
    wish, condition, request, mood or someone else's news): what a message holds that the clauses
    could not read, for a judgement by meaning to keep (memory/engine/facts.py judged_facts)."""
    said = [m for doc in parse_all(_parts(text)) for sent in doc.sents
            if (m := _mentioned(sent, by_word=False)) is not None]
    if not said:
        return None
    return replace(said[0], text="User mentioned: " + " ".join(m.text.removeprefix("User mentioned: ") for m in said),
                   clause=text)


def read_all(texts: Iterable[str]) -> list[tuple[Reading, ...]]:
    """Many statements read, parsed in one batch."""
    texts = list(texts)
    parse_all(part for t in texts for part in _parts(t))
    return [read(t) for t in texts]
