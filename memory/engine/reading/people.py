"""Family, friends and pets by name ("my sister Ingrid", "a dog named Max"), and the
speaker's own name and age, read from the whole sentence."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .. import lexicon as lx
from .clauses import SELF, Clause, Reading, is_negated, possessor, relation_of, subject_of

if TYPE_CHECKING:
    from spacy.tokens import Span, Token


# --- family and friends by name --------------------------------------------------------------------

def name_given(token: Token) -> Token | None:
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
        subject = subject_of(token.head)
        if subject is not None and subject.pos_ == "PROPN":
            return subject  # "Ingrid is my sister"
    return None


def lasting(token: Token) -> bool:
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
    owner = possessor(token)
    if owner is not None:
        return owner.lower_ in ("my", "our")
    verbs = [t for t in token.sent if t.i < token.i and t.lemma_ in ("have", "get", "adopt", "own", "rescue")]
    return any(subject_of(v) is not None and subject_of(v).lower_ in ("i", "we") for v in verbs)


def name_span(token: Token) -> str:
    """A name with the words it is made of ("Sam Rivera", "Mr Pickles")."""
    for entity in token.doc.ents:
        if entity.start <= token.i < entity.end and entity.label_ in ("PERSON", "ORG", "PRODUCT", ""):
            return entity.text
    start = token.i
    while start > 0 and token.doc[start - 1].pos_ == "PROPN" and token.doc[start - 1].dep_ in ("compound", "flat"):
        start -= 1
    return token.doc[start:token.i + 1].text


def _called(name: Token) -> bool:
    """A name given as one ("is called Rafael", "named June", "whose name is Paris"), whatever the
    entity recogniser took it for."""
    head = name.head
    return name.dep_ in ("oprd", "attr", "dobj") and (head.lemma_ in ("call", "name") or head.lemma_ == "be" and any(
        c.lemma_ == "name" and c.dep_ in ("nsubj", "nsubjpass") for c in head.children))


def people_in(sent: Span) -> Iterator[Reading]:
    for token in sent:
        lemma = token.lemma_.lower()
        if lemma not in lx.RELATIONS | lx.PARTNERS | lx.PET_SPECIES:
            continue
        relation = relation_of(token) if lemma not in lx.PET_SPECIES else (token.lower_ if _owned(token) else None)
        name = name_given(token)
        if relation is None or name is None or not _called(name) and (name.ent_type_ in ("DATE", "TIME", "NORP") or (
                name.ent_type_ in ("GPE", "LOC") and lemma not in lx.PET_SPECIES)):
            continue
        if lemma in lx.OTHERS and not lasting(token):
            continue  # "my coworker Dmitri just got promoted": their news, not who they are to the person
        said = name_span(name)
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


def identity_in(sent: Span) -> Iterator[Reading]:
    """A name ("I'm Marguerite", "my name's Bart", "call me Kenji") and an age ("I'm 34")."""
    if sent[0].lemma_.lower() in lx.REQUEST_VERBS and sent[0].lower_ == sent[0].lemma_.lower() and not (
            sent[0].lower_ == "call" and len(sent) > 2 and sent[1].lower_ == "me"):  # "Call me Kenji" names
        return  # "explain compound interest like I'm 10"
    for token in sent:
        name = None
        if token.lemma_ == "be" and subject_of(token) is not None and subject_of(token).lower_ == "i":
            attr = next((c for c in token.children if c.dep_ == "attr"), None)
            if attr is not None and attr.pos_ == "PROPN" and attr.ent_type_ in ("PERSON", ""):
                name = attr
            if attr is not None and attr.like_num and token.tag_ == "VBP" and token.dep_ == "ROOT" \
                    and not is_negated(Clause(token, tuple(token.subtree), None)):
                years = attr.text
                yield Reading(subject=SELF, slot="age", value=years, text=f"User is {years}", clause=sent.text)
        if token.lemma_ == "turn" and (subject_of(token) is None or subject_of(token).lower_ == "i"):
            years = next((c for c in token.children if c.like_num and c.dep_ in ("dobj", "attr", "oprd", "npadvmod")),
                         None)  # "turned 30 today"
            if years is not None:
                yield Reading(subject=SELF, slot="age", value=years.text, text=f"User is {years.text}",
                              change=True, clause=sent.text)
        if token.lemma_ == "call" and any(c.lower_ == "me" for c in token.children):
            me = next(c for c in token.children if c.lower_ == "me")
            name = next((t for t in token.doc[me.i + 1:me.i + 3] if t.is_title and not t.is_punct), None)
        if token.lemma_ == "name" and possessor(token) is not None and possessor(token).lower_ == "my":
            name = next((t for t in sent.doc[token.i + 1:token.i + 4] if t.pos_ == "PROPN"), None)
        if name is not None:
            said = name_span(name)
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
