"""The reader: a statement split into its parts, each part parsed and read sentence by
sentence, clause by clause, with what the clauses missed kept in the person's words; stored facts are
read as the speaker's words."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from .. import lexicon as lx
from ..language import parse, parse_all
from ..text import clean_text, split_sentences
from ..wording import stored_lead
from .clauses import DROP_LEADS, PRONOUNS_SELF, SELF, SUBJECTS, Reading, asks, clauses, is_negated, tense_of, unasserted
from .kinds import entities, object_of, phrase, value_of
from .people import identity_in, people_in
from .slots import REQUESTS, imperative, passing, read_clause
from .words import templated

if TYPE_CHECKING:
    from spacy.tokens import Span


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


# --- the reader ---------------------------------------------------------------------------------

def read_doc(doc) -> tuple[Reading, ...]:
    found: dict[tuple[str, str], Reading] = {}
    for sent in doc.sents:
        people = list(people_in(sent)) + list(identity_in(sent))
        for reading in people:
            found.setdefault((reading.text.lower(), reading.slot), reading)
        if asks(sent):
            continue
        named = {r.slot for r in people}
        said = {r.text.lower() for r in people}
        parts = clauses(sent)
        asked = next((c.head for c in parts if c.head.dep_ == "ROOT" and imperative(c)
                      and c.head.lemma_.lower() in lx.REQUEST_VERBS), None)
        for clause in parts:
            if asked is not None and clause.head.i > asked.i and asked in clause.head.ancestors:
                continue  # "explain compound interest like I'm 10": what a request says is no statement
            if _a_time_of_life(clause.head):
                continue  # "asthma since I was a kid": when, not a fact of its own
            for reading in read_clause(clause, sent):
                if reading.slot in named and reading.slot in ("pet", "partner") and reading.subject == SELF and (
                        clause.head.lemma_ in ("call", "name", "have", "get", "adopt") or clause.head.lemma_ == "be"
                        and any(c.dep_ == "attr" and c.pos_ == "PROPN" for c in clause.head.children)):
                    continue  # "my dog is called Rex", "my dog is Rex": the named pet is the fact
                if reading.text.lower() in said:
                    continue
                found.setdefault((reading.text.lower(), reading.slot), reading)
        if not any(r.clause and r.clause in sent.text for r in found.values()):
            mentioned = _mentioned(sent)
            if mentioned is not None:
                found.setdefault((mentioned.text.lower(), mentioned.slot), mentioned)
    return tuple(found.values())


_WHEN_MARKS = frozenset({"since", "when", "while", "until", "till", "before", "after", "as"})


def _a_time_of_life(head) -> bool:
    """ "since I was a kid", "when I was small": a past "be" under a mark of time says when."""
    return head.lemma_ == "be" and head.tag_ == "VBD" and head.dep_ in ("advcl", "pcomp") and any(
        c.dep_ == "mark" and c.lower_ in _WHEN_MARKS for c in head.children)


# Kinds that a word alone is enough to tell, in a sentence the parse could not read into a clause.
_TOLD_BY_A_WORD = (("allergy", lx.ALLERGY), ("health", lx.HEALTH), ("diet", frozenset(lx.DIET_LABELS) | lx.DIET),
                   ("pet", lx.PET_SPECIES), ("family", lx.RELATIONS), ("language", lx.LANGUAGE - {"speak", "native"}),
                   ("activity", lx.HOBBY), ("education", lx.EDUCATION), ("work", lx.OCCUPATIONS))
_OTHER_PEOPLE = frozenset({"he", "she", "they", "him", "her", "them", "his", "their"})
_NEGATIONS = frozenset({"not", "n't", "never", "no", "nobody", "none", "nothing", "nor"})
_LIKENESS = frozenset({"as", "like", "than"})


def _mentioned(sent: Span, *, by_word: bool = True) -> Reading | None:
    """A sentence the clauses missed, as chat writes them ("penicillin allergy fyi", "asthma since i was
    a kid lol", "I am having diabetes type 2 since 2019"): kept in the person's words when it speaks of
    the person (first person, or no subject at all), asserts nothing it should not (no question, wish,
    condition, mood or request), says nothing of anyone else, and holds a word of a kind one word tells."""
    words = [t for t in sent if not t.is_punct and not t.is_space]
    lowered = {t.lower_ for t in words}
    if not words or asks(sent) or len(words) > 30 or lowered & (_OTHER_PEOPLE | REQUESTS | lx.SPECULATIVE):
        return None
    own = lowered & {"i", "i'm", "my", "me", "myself", "we", "our", "us"}
    subjects = [t for t in words if t.dep_ in SUBJECTS and t.lower_ not in PRONOUNS_SELF]
    people = lx.RELATIONS | lx.PARTNERS | lx.OTHERS | lx.OCCUPATIONS
    owners = [o for t in subjects for o in t.subtree if o.dep_ == "poss" and o.lemma_.lower() in lx.OTHERS]
    speaker = any(t.dep_ in SUBJECTS and t.lower_ in ("i", "we") for t in words)
    if not own and subjects and by_word or owners or not speaker and any(
            t.ent_type_ == "PERSON" or t.lemma_.lower() in people for t in subjects):
        return None  # "my cousin got into Oxford", "my neighbour's dog died": their news
    for clause in clauses(sent):
        if unasserted(clause) or passing(clause, sent) or imperative(clause) or (
                tense_of(clause) == "future" and not entities(clause, "DATE", "TIME")):
            return None
    # A word in a likeness ("grumpy as a wet cat", "sleeping like a baby") tells no kind.
    telling = [t for t in words if not any(a.dep_ == "prep" and a.lower_ in _LIKENESS for a in t.ancestors)]
    lemmas = {t.lemma_.lower() for t in telling} | {t.lower_ for t in telling}
    slot = next((kind for kind, vocabulary in _TOLD_BY_A_WORD if lemmas & vocabulary), "")
    if not slot and by_word:
        return None
    # "No meat for me": a "no" that qualifies the noun is the statement's, not a lead to drop
    start = next((t for t in words if t.lower_ not in DROP_LEADS or t.lower_ == "no" and t.dep_ == "det"), None)
    said = sent.doc[start.i:sent.end].text.strip(" .!,") if start is not None else ""
    # "I am having …" opens as "User is having …", not "User am"; "you" further on is the assistant
    said = stored_lead(said) if said[:2].lower() in ("i ", "i'") else said
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
    return list(_split(text))


@lru_cache(maxsize=8192)
def _split(text: str) -> tuple[str, ...]:
    """The parts, each ending as a sentence does: the parser reads "I enjoy running" without its
    full stop as a sentence whose verb is "running"."""
    parts = [p.strip() for sentence in split_sentences(normalise_statement(text))
             for p in _PARTS.split(sentence) if p.strip()]
    return tuple(p if p[-1] in ".!?…\"'”)" else p + "." for p in parts)


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


_RELATIVES = frozenset({"that", "who", "which", "whom"})
# "It's a shame I can't come": what "it" stands for is the clause, judged, not a focus it fronts.
_JUDGEMENTS = frozenset({"shame", "pity", "wonder", "miracle", "relief", "surprise", "mistake", "joke", "problem",
                         "nightmare", "disaster", "blessing", "honour", "honor", "pleasure"})


def _unclefted(doc) -> str:
    """ "It's hazelnuts I'm allergic to", "it's Oslo that I live in, not Bergen", "it's the cello I
    play": a cleft said again in its plain order ("I'm allergic to hazelnuts"), where the focus fills
    the gap its clause leaves (a relative word's place, a preposition with no object, or the object
    of a verb with none); "" when the sentence is no cleft ("it's a shame I can't come")."""
    root = next(iter(doc.sents)).root
    if root.lemma_ != "be" or not any(c.dep_ == "nsubj" and c.lower_ == "it" for c in root.children):
        return ""
    focus = next((c for c in root.children if c.dep_ == "attr"), None)
    if focus is None or focus.ent_type_ in ("DATE", "TIME") or focus.lemma_.lower() in _JUDGEMENTS:
        return ""
    relative = next((c for c in focus.children if c.dep_ == "relcl"), None)
    inner = relative or next((c for c in root.children if c.dep_ == "ccomp" and c.i > focus.i), None)
    if inner is None or inner.i < focus.i:
        return ""
    clause = list(inner.subtree)
    said = " ".join(t.text for t in focus.subtree if t.i < clause[0].i)
    marker = next((t for t in clause if t.lower_ in _RELATIVES and t.dep_ in ("nsubj", "dobj", "pobj", "mark")), None)
    if marker is not None and marker.dep_ == "nsubj":
        after = marker  # "it was my sister who moved": the focus is the subject
    elif marker is not None and marker.dep_ == "pobj":
        after = marker.head  # "Oslo that I live in": after its preposition
    elif marker is not None and marker.dep_ == "dobj":
        verb = marker.head  # "peanuts that I can't eat": after its verb
        after = next((c for c in verb.children if c.dep_ == "prt"), verb)
    else:
        after = next((t for t in clause if t.dep_ == "prep" and not any(c.dep_ == "pobj" for c in t.children)), None)
        if after is None and relative is not None and inner.pos_ == "VERB" and not any(
                c.dep_ in ("dobj", "ccomp", "xcomp", "prep") for c in inner.children):
            after = next((c for c in inner.children if c.dep_ == "prt"), inner)  # "the cello I play"
    if after is None:
        return ""
    words = []
    for token in clause:  # spaCy makes a new Token at each look: compared by their places
        if marker is not None and token.i == marker.i:
            if token.i == after.i:
                words.append(said)
            continue
        words.append(token.text)
        if token.i == after.i:
            words.append(said)
    words += [t.text for t in doc if t.i > clause[-1].i and not (focus.i <= t.i < clause[0].i)]
    return _joined(words)


def _joined(words: list[str]) -> str:
    """Words said again as one sentence: no space before a mark or a contraction, a capital first."""
    text = re.sub(r"\s+([,.!?;:])", r"\1", re.sub(r"\s+('m|'s|'re|'ve|'d|'ll|n't)\b", r"\1", " ".join(words)))
    return text[:1].upper() + text[1:]


_FOCUS_PARTS = frozenset({"NOUN", "PROPN", "ADJ", "DET", "NUM", "PART", "CCONJ", "ADP"})
_GAP_FILLERS = frozenset({"dobj", "ccomp", "xcomp", "prep", "attr", "acomp", "dative"})


def _cleft_said_apart(doc) -> str:
    """ "sorry, I got that wrong, it's aspirin I'm allergic to", "it's Boston I'm running": a cleft
    after other words, or one the parse cut in two sentences ("it's aspirin." "I'm allergic to."),
    which _unclefted cannot see. "it's" and its short focus, then "I" or "we" and a clause with a
    gap (a preposition with no object, a verb with none), said in the plain order: "I'm allergic to
    aspirin". "" when there is no such cleft."""
    for it in doc:
        be = it.head
        if it.lower_ != "it" or it.dep_ not in SUBJECTS or be.lemma_ != "be" or be.i != it.i + 1 or (
                it.i > 0 and not doc[it.i - 1].is_punct):
            continue
        start = be.i + 1
        end = next((t.i for t in doc[start:] if t.is_punct or (t.lower_ in PRONOUNS_SELF and t.dep_ in SUBJECTS)),
                   len(doc))
        if end >= len(doc) or doc[end].is_punct or not 0 < end - start <= 4:
            continue
        focus = doc[start:end]
        if any(t.pos_ not in _FOCUS_PARTS or t.ent_type_ in ("DATE", "TIME") or t.lemma_.lower() in _JUDGEMENTS
               for t in focus) or not any(t.pos_ in ("NOUN", "PROPN", "ADJ") for t in focus):
            continue
        stop = next((t.i for t in doc[end:] if t.is_punct), len(doc))
        inner = range(end, stop)
        gap = next((t for t in doc[end:stop] if t.dep_ == "prep" and not any(c.i in inner for c in t.children)), None)
        verb = doc[end].head
        if gap is None and verb.pos_ == "VERB" and verb.i in inner and not any(
                c.dep_ in _GAP_FILLERS and c.i in inner for c in verb.children):
            gap = next((c for c in verb.children if c.dep_ == "prt" and c.i in inner), verb)
        if gap is None:
            continue
        return _joined([w for w in (doc[:it.i].text, doc[end:gap.i + 1].text, focus.text, doc[gap.i + 1:].text) if w])
    return ""


def in_plain_order(doc):
    """A part's parse with a cleft said in its plain order ("it's pecans I react to" -> "I react to
    pecans"), or the parse itself."""
    again = _unclefted(doc) or _cleft_said_apart(doc)
    return parse(again) if again else doc


# "shellfish allergy over here": what the person has rather than is
_HAD = frozenset({"allergy", "intolerance", "condition", "disorder", "syndrome", "disease", "phobia"})
_ASKING_WORDS = frozenset({"what", "when", "where", "who", "which", "why", "how", "you", "any", "anyone"})
_NOT_IN_A_LABEL = frozenset({"DET", "PRON", "AUX", "ADP", "CCONJ", "SCONJ", "PART", "INTJ", "PUNCT"})


def _said_here(doc) -> str:
    """ "axolotl owner here 🦎 is it normal…", "Nurse here.", "native tamil speaker here, english is
    my second language": chat's way of saying "I'm an axolotl owner", a short label opening the
    message and "here" (or "over here"), then nothing, a mark or another sentence. Said again as
    "I'm an axolotl owner." and the rest; "" when the message opens otherwise ("Pouring all day
    here", "Same here", "My kids here are driving me mad")."""
    here = next((t.i for t in doc[:7] if t.lower_ == "here"), None)
    if here is None or here == 0:
        return ""
    end = here - 1 if doc[here - 1].lower_ == "over" else here
    label = doc[0:end]
    after = doc[here + 1] if here + 1 < len(doc) else None
    if not label or any(t.pos_ in _NOT_IN_A_LABEL or t.tag_ in ("VBG", "VBD", "VBN", "VBZ", "MD") for t in label) or (
            label[-1].pos_ not in ("NOUN", "PROPN") or label[-1].tag_ in ("NNS", "NNPS") or label[0].like_num):
        return ""
    if after is not None and after.is_alpha:
        return ""  # "My kids here are …": "here" inside a sentence that goes on
    article = "an" if label.text[:1].lower() in "aeiou" else "a"
    said = f"{'I have' if label[-1].lemma_.lower() in _HAD else 'I am'} {article} {label.text}."
    start = next((t.i for t in doc[here + 1:] if t.is_alpha or t.like_num), len(doc))  # past marks and emoji
    rest = doc[start:].text.strip()
    rest_doc = parse(rest) if rest else None
    asking = rest_doc is not None and ("?" in rest or any(t.lower_ in _ASKING_WORDS for t in rest_doc)
                                       or any(asks(sent) for sent in rest_doc.sents))
    if rest and not asking and not read(rest):
        return ""  # "Island girl here, Samoa born, Auckland raised": the rest is the label's, kept as said
    return f"{said} {rest[:1].upper()}{rest[1:]}" if rest else said


_SO_NOT_A_LINK = frozenset({"that", "much", "many", "far", "long", "too", "so"})


def _so_set_off(doc) -> str:
    """ "I have a Vitamix so smoothie recipes are fine": chat leaves out the comma before "so", and
    the parse runs the two clauses into one; the text with the comma put back, or "" when there is
    no such "so" ("so happy", "so much" and "so that" say something else)."""
    out, fixed = [], False
    for token in doc:
        after = doc[token.i + 1] if token.i + 1 < len(doc) else None
        if token.lower_ == "so" and token.i > 0 and not doc[token.i - 1].is_punct and after is not None \
                and after.pos_ not in ("ADJ", "ADV", "PUNCT") and after.lower_ not in _SO_NOT_A_LINK:
            out[-1] = out[-1].rstrip() + ", "
            fixed = True
        out.append(token.text_with_ws)
    return "".join(out) if fixed else ""


def _told_before_asking(docs) -> list[str]:
    """ "we fly to Tokyo on the 14th of May, can you suggest a packing list?": a question asked
    after a comma asks with its own words only; what comes before it, a clause with its verb and
    no question of its own, is a statement read on its own."""
    found = []
    for doc in docs:
        for sent in doc.sents:
            if not asks(sent):
                continue
            for token in sent:
                if token.text != "," or token.i + 1 >= sent.end:
                    continue
                rest = [t for t in doc[token.i + 1:sent.end] if not t.is_punct]
                while rest and rest[0].pos_ in ("CCONJ", "ADV", "INTJ"):
                    rest = rest[1:]  # "…, so can you", "…, anyway could you"
                asking = len(rest) > 1 and (rest[0].pos_ == "AUX" and rest[1].lower_ == "you"
                                            or rest[0].tag_ in ("WRB", "WP"))
                part = doc[sent.start:token.i]
                if asking and any(t.pos_ in ("VERB", "AUX") for t in part) and not asks(part):
                    found.append(part.text)
                    break
    return found


def _leading_fragments(docs) -> list[tuple[str, bool]]:
    """ "Allergic to dust mites, just so you know", "Not a morning person, don't message me before
    10": chat drops the "I'm" of a first part without a verb, and the parse then hangs it on the
    clause after the comma; such a part is read again on its own. With it, whether the parse made
    it the sentence's subject ("My sister, who lives in Leeds, is a nurse"): then it is no mention."""
    found = []
    for doc in docs:
        for sent in doc.sents:
            comma = next((t.i for t in sent if t.text == ","), None)
            if comma is None:
                continue
            part = doc[sent.start:comma]
            words = [t for t in part if not t.is_punct]
            if len(words) >= 2 and not any(t.pos_ in ("VERB", "AUX") for t in part) and not asks(sent):
                found.append((part.text, any(t.dep_ in SUBJECTS for t in part)))
    return found


@lru_cache(maxsize=8192)
def read(text: str) -> tuple[Reading, ...]:
    """Everything a statement (or a stored fact) says about the speaker and the people they name."""
    found: dict[tuple[str, str], Reading] = {}
    docs = parse_all(parts_of(text))
    docs = [parse(again) if (again := _repaired(doc)) else doc for doc in docs]
    docs = [in_plain_order(doc) for doc in docs]
    docs = [parse(again) if (again := _said_here(doc)) else doc for doc in docs]
    for doc in docs:
        readings = read_doc(doc)
        if not readings and (again := _so_set_off(doc)):
            readings = read_doc(parse(again))
        for reading in readings:
            found.setdefault((reading.text.lower(), reading.slot), reading)
    for fragment, subject in _leading_fragments(docs):
        if not any(r.clause and r.clause.strip(" .") in fragment for r in found.values()):
            for reading in read_doc(parse(fragment + ".")):
                if not (subject and reading.text.startswith("User mentioned:")):  # "My sister, who … is"
                    found.setdefault((reading.text.lower(), reading.slot), reading)
    for statement in _told_before_asking(docs):
        for reading in read_doc(parse(statement + ".")):
            found.setdefault((reading.text.lower(), reading.slot), reading)
    for reading in _new_values(docs, tuple(found.values())):
        found = {key: r for key, r in found.items() if not (r.slot == "other" and r.clause == reading.clause)}
        found.setdefault((reading.text.lower(), reading.slot), reading)
    # "it's hazelnuts I'm allergic to, I got muddled…" parsed wrong reads "User is allergic to": a fact
    # that ends on a preposition the parse left without its object says nothing and is not kept.
    stranded = {t.lower_ for doc in docs for t in doc if t.dep_ == "prep" and not any(t.children)}
    found = {key: r for key, r in found.items() if r.text.split()[-1].lower() not in stranded}
    # "Sorry, that was autocorrect — my mum's name is Rita": a change word anywhere speaks for every part
    changed = any({t.lemma_.lower() for t in doc} & lx.CHANGE_WORDS for doc in docs)
    return tuple(replace(r, change=r.change or changed) for r in found.values())


# A change said in two breaths: where the first ends a home or a job, the second names the new one
# by the preposition that places the person ("I'm now at Northgate Pharmacy", "we're in York now").
_PLACED_BY = {"employer": ("at", "for", "with"), "residence": ("in",)}
_NOW = frozenset({"now", "currently", "nowadays", "days"})
_TAKING_UP = frozenset({"start", "begin", "get", "find", "land", "take", "go", "return"})
_POSTS = frozenset({"job", "work", "role", "position", "post"})


def _takes_up_work(clause) -> bool:
    """ "I started a new job", "got a new job", "went back to work": work begun, not yet placed."""
    return clause.head.lemma_.lower() in _TAKING_UP and any(
        t.lemma_.lower() in _POSTS and t.pos_ == "NOUN" and t.dep_ in ("dobj", "pobj") for t in clause.tokens)


def _new_values(docs, readings: tuple[Reading, ...]) -> list[Reading]:
    """The new value a statement names after ending the old one ("I've left my job at Larkfield,
    I'm now at Northgate Pharmacy") or taking up work ("started a new job, I'm at Globex now"): a
    clause of the person's own, neither negated nor past, that places them now, read as that kind,
    where the statement names no value of it."""
    if not any(r.ended for r in readings) and not any(t.lemma_.lower() in _POSTS for doc in docs for t in doc):
        return []  # most statements: nothing ended, no work taken up, so no clause is read again
    found = []
    parts = [c for doc in docs for sent in doc.sents for c in clauses(sent)]
    for slot, preps in _PLACED_BY.items():
        own = [r for r in readings if r.slot == slot and r.subject == SELF]
        begun = slot == "employer" and any(_takes_up_work(c) and (
            c.subject.lower_ in PRONOUNS_SELF if c.subject is not None else c.head.tag_ == "VBD") for c in parts)
        if not (begun or any(r.ended and not r.value for r in own)) or any(r.value for r in own):
            continue
        ending = {r.clause for r in own}
        for clause in parts:
            subject = clause.subject
            if (clause.text in ending or _takes_up_work(clause) or subject is None
                    or subject.lower_ not in PRONOUNS_SELF or is_negated(clause) or tense_of(clause) == "past"):
                continue
            if clause.head.lemma_ != "be" and (not clause.lemmas & _NOW or clause.head.lemma_ in lx.PASTIMES):
                continue  # "I'm having lunch at Luigi's now" places them for an hour, not for good
            place = object_of(clause.head, *preps) or next(  # "running the kitchen at …": the object's
                (p for c in clause.head.children if c.dep_ == "dobj" and (p := object_of(c, *preps)) is not None), None)
            if place is None or place.ent_type_ in ("DATE", "TIME") or not (place.pos_ == "PROPN" or (
                    slot == "employer" and any(c.lower_ == "the" for c in place.children))):
                continue
            said = phrase(place)
            found.append(Reading(subject=SELF, slot=slot, value=value_of(said), text=templated(slot, SELF, said),
                                 change=True, clause=clause.text))
            break
    return found


def mention_of(text: str) -> Reading | None:
    """The person's own words, where they speak of the person and assert something (no question,
    wish, condition, request, mood or someone else's news): what a message holds that the clauses
    could not read, for a judgement by meaning to keep (memory/engine/facts.py judged_facts)."""
    said = [m for doc in parse_all(parts_of(text)) for sent in doc.sents
            if (m := _mentioned(sent, by_word=False)) is not None]
    if not said:
        return None
    return replace(said[0], text="User mentioned: " + " ".join(m.text.removeprefix("User mentioned: ") for m in said),
                   clause=text)


def parse_parts(texts: Iterable[str]) -> None:
    """Many statements' parts parsed in one batch (the parses are cached for what reads them next)."""
    parse_all(part for t in texts for part in parts_of(t))


def read_all(texts: Iterable[str]) -> list[tuple[Reading, ...]]:
    """Many statements read, parsed in one batch."""
    texts = list(texts)
    parse_parts(texts)
    return [read(t) for t in texts]
