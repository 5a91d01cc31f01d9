"""Requests not to keep something: "forget that I live in Lisbon", "don't save that my brother is
called Tobias", "keep that between us", "off the record: …", "pretend I never told you …".

A message that makes one states nothing to keep, whatever else it says (memory/engine/facts.py
`statement_in`), and what it points at is what memory should forget (memory/engine/memory_talk.py).
Read on the parse, in any part of the message and in any order: a verb of forgetting said to the
assistant (an imperative, "can you …", "I want you to …") and not negated, or a verb of keeping
said to it with a "don't" ("never store", "no need to remember"), whose object mentions the
speaker or points back at the message ("this", "it", "what I said"). "I always forget my keys" is
the speaker's own doing; "don't forget I'm vegan" asks to keep.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from .. import lexicon as lx
from ..language import parse_all
from .reader import parts_of

if TYPE_CHECKING:
    from spacy.tokens import Token

_YOU = frozenset({"you", "u", "ya", "yourself"})
_SELF = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})
_BACK = frozenset({"this", "that", "it", "these", "those", "everything", "all"})
_NEGATING = frozenset({"not", "n't", "never", "no", "nt"})
# What a request points at in other words than the detail itself: "the bit about my divorce".
_MEMORIES = frozenset({"bit", "part", "thing", "stuff", "detail", "fact", "info", "information", "record"})
_COURTESY = frozenset({"please", "pls", "plz", "thanks", "thx", "ok", "okay", "k"})
_WRAPPERS = frozenset({"bit", "part", "thing", "stuff", "detail", "fact", "info", "information", "what", "that",
                       "about", "the", "said", "told", "say", "tell", "mention", "mentioned", "you", "i", "ever"})


@dataclass(frozen=True)
class KeptBack:
    """A request not to keep: the words it points at ("" when it points back at the rest of the
    message, which is then the target)."""

    target: str


def _subject(verb: Token) -> Token | None:
    """The verb's subject; an interjection the parser took for one ("pls dont store it") is none."""
    return next((c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")
                 and c.tag_ != "UH" and c.lower_ not in _COURTESY), None)


def _negated(verb: Token) -> bool:
    """ "don't store", "never save", "you don't need to remember", "no need to keep"."""
    if any(c.dep_ == "neg" or c.lower_ in ("never", "nt") for c in verb.children):
        return True
    governor = verb.head
    if governor is verb or verb.dep_ not in ("xcomp", "ccomp", "acl", "relcl"):
        return False
    if governor.lemma_.lower() in ("stop", "quit", "cease"):
        return True  # "stop remembering that I …"
    if verb.dep_ == "ccomp" and governor.lemma_.lower() not in ("want", "need", "like", "mean"):
        return False
    return any(c.dep_ in ("neg", "det") and c.lower_ in _NEGATING for c in governor.children)


def _addressed(verb: Token) -> bool:
    """Said to the assistant: a bare imperative, "you" as its subject ("can you forget", "I want you
    to forget"), or the rest of a verb said to it ("please try to forget", "no need to remember")."""
    wished = verb.head is not verb and (verb.head.lemma_.lower() in ("prefer", "wish") or any(
        c.lower_ == "rather" for c in verb.head.children))  # "I'd rather you forgot that"
    if not wished and (verb.tag_ in ("VBD", "VBN") or any(
            c.dep_ == "aux" and c.lemma_.lower() in ("have", "do") and c.tag_ in ("VBD", "VBZ", "VBN")
            for c in verb.children)):
        return False  # "did you forget …?", "you forgot my birthday": about memory, not a request
    subject = _subject(verb)
    if subject is not None:
        return subject.lower_ in _YOU
    if verb.dep_ in ("xcomp", "acl") and verb.head is not verb:
        head = verb.head
        return head.lemma_.lower() == "need" and head.pos_ == "NOUN" or _addressed(head)
    return verb.tag_ in ("VB", "VBP") and verb.lower_ == verb.lemma_.lower()


def _points_at(verb: Token) -> list[Token] | None:
    """What the verb asks to let go (its object's tokens), when that mentions the speaker or points
    back at the message; None otherwise ("forget the gym")."""
    objects = [c for c in verb.children if c.dep_ in ("dobj", "ccomp", "xcomp", "attr", "oprd", "prep", "advcl")
               and not (c.dep_ == "prep" and c.lower_ not in ("about", "of", "on"))]
    tokens = [t for c in objects for t in c.subtree]
    if any(c.lemma_.lower() in _MEMORIES for c in objects):
        return tokens  # "the vegan thing", "the bit about …"
    if any(t.lower_ in _SELF for t in tokens) or any(t.lower_ in _BACK and t.dep_ in ("dobj", "nsubj", "pobj")
                                                    for t in tokens):
        return tokens
    return None


def _private(verb: Token) -> bool:
    """ "keep that between us", "keep it to yourself", "treat this as confidential"."""
    return verb.lemma_.lower() in lx.CONFIDING and any(
        t.lower_ in lx.PRIVATE for c in verb.children if c.dep_ in ("prep", "acomp", "oprd", "advmod", "xcomp")
        for t in c.subtree)


def _declared_private(verb: Token) -> bool:
    """ "that's between us", "this is confidential", "it's private": what was said, declared
    private (its subject points back at the message)."""
    subject = _subject(verb)
    return (verb.lemma_.lower() == "be" and verb.dep_ in ("ROOT", "conj", "ccomp") and subject is not None
            and subject.lower_ in _BACK
            and any(c.lower_ in _DECLARED if c.dep_ in ("acomp", "attr")
                    else c.dep_ == "prep" and any(t.lower_ in _DECLARED for t in c.subtree) for c in verb.children))


def _unwanted(verb: Token) -> bool:
    """ "I don't want that written down", "I'd rather not have it stored": the speaker's wish that
    what they said not be kept (a verb of keeping, as a participle, under a negated "want")."""
    governor = verb.head
    return (verb.lemma_.lower() in lx.KEEPING and verb.tag_ == "VBN" and governor is not verb
            and governor.lemma_.lower() in ("want", "need", "have") and _negated_here(governor)
            and (_subject(governor) is None or _subject(governor).lower_ in _SELF))


def _negated_here(verb: Token) -> bool:
    return any(c.dep_ == "neg" or c.lower_ in _NEGATING for c in verb.children)


_LETTING_GO = lx.FORGETTING | lx.KEEPING
# What "that's …" declares private ("it's quiet" is the room, not the message).
_DECLARED = lx.PRIVATE - {"quiet", "yourself"}


def _target(tokens: list[Token]) -> str:
    words = [t for t in tokens if t.lower_ not in _BACK or t.dep_ not in ("dobj", "nsubj", "pobj")]
    while words and (words[0].lower_ in _WRAPPERS or words[0].is_punct):
        words = words[1:]
    while words and (words[-1].lower_ in _COURTESY or words[-1].is_punct):
        words = words[:-1]
    return " ".join(t.text for t in words).strip(" .,!?")


def _asks_to_let_go(verb: Token) -> bool:
    lemma = verb.lemma_.lower()
    if _declared_private(verb) or _unwanted(verb):
        return True
    if lemma not in _LETTING_GO and lemma not in lx.CONFIDING or verb.pos_ not in ("VERB", "AUX") \
            or not _addressed(verb):
        return False
    asks = (lemma in lx.FORGETTING and not _negated(verb)) or (lemma in lx.KEEPING and _negated(verb)) \
        or _private(verb)
    return asks and _points_at(verb) is not None


def _outside(verb: Token) -> str:
    """The words of the verb's sentence outside the request ("I'm on antidepressants, but keep that
    between us" → "I'm on antidepressants")."""
    top = verb
    while top.dep_ in ("xcomp", "ccomp", "conj", "advcl") and top.head is not top \
            and not any(c.dep_ in ("nsubj", "nsubjpass") and c.lower_ not in _YOU for c in top.head.children):
        top = top.head
    inside = {t.i for t in top.subtree} if top.dep_ != "ROOT" else {t.i for t in verb.subtree}
    words = [t for t in verb.sent if t.i not in inside and t.dep_ != "cc"]
    return " ".join(t.text for t in words).strip(" .,!?;:")


def _pretended(verb: Token) -> list[Token] | None:
    """What "pretend I never told you …", "act like you didn't hear …" asks to let go, or None."""
    if verb.lemma_.lower() not in ("pretend", "act") or not _addressed(verb):
        return None
    told = next((t for c in verb.children for t in c.subtree
                 if t.lemma_.lower() in lx.TELLING and _negated(t)), None)
    if told is None:
        return None
    return [t for c in told.children if c.dep_ in ("ccomp", "dobj", "prep") and c.lower_ not in _YOU
            for t in c.subtree]


@lru_cache(maxsize=8192)
def kept_back(text: str) -> KeptBack | None:
    """The request not to keep that a message makes, or None. The target is what it names; when it
    points back ("never store this: …", "… but keep that between us"), the message's other parts."""
    parts = parts_of(text)
    docs = parse_all(parts)
    for i, doc in enumerate(docs):
        rest = " ".join(p for j, p in enumerate(parts) if j != i).strip(" .!?")
        if "off the record" in doc.text.lower():
            return KeptBack(rest)
        pretended = next((found for found in map(_pretended, doc) if found is not None), None)
        verb = next((t for t in doc if _asks_to_let_go(t)), None)
        if pretended is None and verb is None:
            continue
        pointing_back = verb is not None and (_declared_private(verb) or _unwanted(verb))
        target = "" if pointing_back else _target(pretended if pretended is not None else _points_at(verb) or [])
        if any(w.isalpha() and w.lower() not in _WRAPPERS for w in target.split()):
            return KeptBack(target)
        said = verb.head if verb is not None and _unwanted(verb) else verb  # "I don't want that written down"
        return KeptBack(" ".join(w for w in (_outside(said) if said is not None else "", rest) if w).strip(" .!?"))
    return None
