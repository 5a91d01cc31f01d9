"""Talking to memory in the chat: which requests are about memory itself, what they point at, and
which memories match. Pure and deterministic (no Django); memory/services/memory_talk.py acts.

Four requests, recognised offline: "what do you know about me?" (WHAT), "forget that I …" (FORGET),
"that's wrong, I …" (CORRECT) and "why do you think I …?" (WHY); "undo" (UNDO) takes back the last
correction. A target phrase is matched against memories by its content words (stemmed); memories
that share a word besides the target's are one memory told several times, others are distinct
(two distinct matches make the request ambiguous: the service asks which one).
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.engine.language import parse, parse_all
from memory.engine.long_term import normalise_fact
from memory.engine.reading import (
    EXCLUSIVE_SLOTS,
    Reading,
    in_plain_order,
    kept_back,
    normalise_statement,
    parts_of,
    read,
)
from memory.engine.text import clean_text, content_terms, is_question
from memory.engine.wording import to_person

# Words that name no memory: how a fact is phrased ("User has a cat named Miso").
_NO_TOPIC = frozenset({"user", "name", "call", "anymore", "actually", "really", "wrong", "right", "correct"})


class Intent(enum.StrEnum):
    WHAT = "what"
    FORGET = "forget"
    CORRECT = "correct"
    WHY = "why"
    UNDO = "undo"


@dataclass(frozen=True)
class Request:
    """A request about memory: its intent and the words it points at (the new statement, for a
    correction). `soft`: a correction said in passing ("No, my dog is called Rex, not Max"), which
    is one only when it contradicts something remembered."""

    intent: Intent
    target: str = ""
    soft: bool = False


_ME = r"(?:me|myself)"
_WHAT = re.compile(
    r"^\s*(?:so\s*,?\s*|ok(?:ay)?\s*,?\s*|hey\s*,?\s*|please\s*,?\s*)?(?:can you\s+|could you\s+)?"
    r"(?:tell me\s+|show me\s+|list\s+)?(?:what|everything)\s+(?:do|did|have)?\s*you\s+"
    r"(?:know|remember|recall|have learned|learned|learnt|have|keep|store)"
    r"\s+(?:about|of|on)\s+" + _ME + r"\b", re.I)
_FORGET = re.compile(
    r"^\s*(?:please\s*,?\s*|ok(?:ay)?\s*,?\s*|and\s+)?(?:can you\s+|could you\s+|would you\s+)?(?:please\s+)?"
    r"(?:forget|erase|delete|remove|drop|unlearn|stop remembering|don't remember|do not remember)\s+"
    r"(?:(?:that|about|the fact that|what I (?:said|told you) about|everything about|all about|"
    r"what you know about)\s+)*"
    r"(?P<target>.+?)\s*[.!?]*\s*$", re.I)
_CORRECT = re.compile(
    r"^\s*(?:no\s*[,.!]?\s*)?(?:that's|that is|that was|this is|you're|you are|you've got that|you got that|"
    r"you have that)\s+"
    r"(?:wrong|not right|not true|incorrect|mistaken|not correct)\s*[,.!:;–—-]*\s*(?P<target>.*?)\s*[.!]*\s*$"
    r"|^\s*correction\s*[:,–—-]\s*(?P<target2>.+?)\s*[.!]*\s*$", re.I)
_WHY = re.compile(
    r"^\s*(?:so\s*,?\s*)?(?:why\s+(?:do|did|would)\s+you\s+(?:think|believe|say|assume|know)|"
    r"what\s+makes\s+you\s+(?:think|believe|say)|how\s+do\s+you\s+know|where\s+did\s+you\s+(?:get|hear|learn)"
    r"(?:\s+(?:that|the idea that))?|why\s+are\s+you\s+saying)\s+(?:that\s+)?(?P<target>.+?)\s*[?.!]*\s*$", re.I)
# "No, my dog is called Rex, not Max", "Actually, it's the 16th", "Sorry, I meant Porto": a correction
# when it contradicts a memory (the service decides), an ordinary message otherwise.
_SOFT_CORRECT = re.compile(
    r"^\s*(?:(?:no|nope|nah|actually|oops|sorry|wait|scratch that|my bad|correction|let me fix that|ugh)\b"
    r"\s*[,.!:;–—-]*\s*)+(?:I\s+meant\s+|I\s+mean\s+)?"
    r"(?P<target>.+?)\s*[.!]*\s*$|^\s*I\s+meant\s+(?P<target2>.+?)\s*[.!]*\s*$", re.I)
_UNDO = re.compile(r"^\s*(?:please\s+)?(?:undo(?: that| it| the (?:last )?(?:change|correction))?|put it back)"
                   r"\s*[.!]*\s*$", re.I)


@functools.lru_cache(maxsize=8192)  # read by several steps of a turn and of maintenance
def detect(message: str) -> Request | None:
    """The memory request a message makes, or None for an ordinary message."""
    text = clean_text(message).strip()
    if not text or len(text) > 500:
        return None
    if _UNDO.match(text):
        return Request(Intent.UNDO)
    if _WHAT.match(text):
        return Request(Intent.WHAT)
    if match := _WHY.match(text):
        return Request(Intent.WHY, match.group("target"))
    if match := _CORRECT.match(text):
        target = (match.group("target") or match.group("target2") or "").strip()
        return Request(Intent.CORRECT, target)
    if match := _FORGET.match(text):
        target = match.group("target").strip()
        # "forget it" is a way of speaking; erasing everything is the page's, confirmed
        if not (target.lower() == "that" or re.match(r"(?:it|this|everything|all|me)\b(?![' ]s\b)", target, re.I)):
            return Request(Intent.FORGET, target)
    if (kept := kept_back(text)) is not None:  # "never store this: …", "can you not remember where I work?"
        return Request(Intent.FORGET, kept.target) if kept.target else None
    if not is_question(text) and (match := _SOFT_CORRECT.match(text)):
        target = (match.group("target") or match.group("target2") or "").strip()
        if target and len(target.split()) <= 30:
            return Request(Intent.CORRECT, target, soft=True)
    if not is_question(text) and re.search(r"\bnot\b", text, re.I) and says_correction(text) and denial(text):
        return Request(Intent.CORRECT, text, soft=True)  # "Camille's in Quebec City, not Montreal"
    words = {w.lower() for w in re.findall(r"[A-Za-z']+", text)}
    if re.match(r"\s*(?:it'?s|it is)\b", text, re.I) and words & _CORRECTION_WORDS:
        return Request(Intent.CORRECT, text, soft=True)  # "it's actually Rocco, autocorrect"
    meant = re.search(r"\bI\s+meant\s+(?!to\b)(?P<target>.+?)\s*[.!]*\s*$", text, re.I)
    if meant:  # "I said economics? I meant statistics"
        return Request(Intent.CORRECT, meant.group("target"), soft=True)
    return None


# ------------------------------------------------------------------ matching

@dataclass(frozen=True)
class Candidate:
    """A memory the target may point at: a fact, a profile value or a turn."""

    kind: str  # "fact", "profile" or "page"
    ident: str
    text: str


@dataclass(frozen=True)
class Group:
    """Memories that say the same thing (a fact and the turns it was told in)."""

    members: tuple[Candidate, ...]

    @property
    def label(self) -> Candidate:
        """What names the group to a person: its fact, else its profile value, else its first turn."""
        order = {"fact": 0, "profile": 1, "page": 2}
        return min(self.members, key=lambda c: order.get(c.kind, 3))


def topic_words(text: str) -> frozenset[str]:
    """The content words of a text, stemmed, and its numbers ("dish number 7" is not dish 17),
    without the words every fact is phrased with."""
    numbers = frozenset(re.findall(r"\b\d+\b", text))
    return (frozenset(term.stem for term in content_terms(text)) | numbers) - _NO_TOPIC


def matches(target: str, text: str) -> bool:
    """Whether `text` says what `target` points at: every name and number the target gives, or,
    when it gives none, every content word of the target (all but one of four or more)."""
    wanted = topic_words(target)
    if not wanted:
        return False
    have = topic_words(text)
    found = len(wanted & have)
    # Names and numbers identify: "my cat Miso" is the profile's "Pet: Miso" too, and never a cat without it.
    names = names_in([target]) | frozenset(re.findall(r"\b\d+\b", target))
    if names:
        return names <= have
    return found == len(wanted) or (len(wanted) >= 4 and found >= len(wanted) - 1)


def group(target: str, candidates: Sequence[Candidate]) -> list[Group]:
    """The candidates that match `target`, grouped (cluster)."""
    return cluster([c for c in candidates if matches(target, c.text)], topic_words(target))


def cluster(found: Sequence[Candidate], wanted: frozenset[str]) -> list[Group]:
    """Candidates grouped: two belong together when they share a word besides `wanted` ("Miso"),
    or one of them has no other word. Order: first seen first."""
    rest = [topic_words(c.text) - wanted for c in found]
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(found)):
        for j in range(i + 1, len(found)):
            if not rest[i] or not rest[j] or rest[i] & rest[j]:
                parent[root(j)] = root(i)
    groups: dict[int, list[Candidate]] = {}
    for i, candidate in enumerate(found):
        groups.setdefault(root(i), []).append(candidate)
    return [Group(tuple(members)) for members in groups.values()]


def names_in(texts: Sequence[str]) -> frozenset[str]:
    """The names (proper nouns, stemmed) the texts hold: what marks a memory as this one ("Miso")."""
    return frozenset(term.stem for text in texts for term in content_terms(text) if term.proper) - _NO_TOPIC


def quotes(memory: Group, target: str, text: str) -> bool:
    """Whether a turn (a question, a reply) speaks of the memory. When the target names it (names,
    numbers): the turn has every number and one of the names, and another of the target's words
    besides a number; otherwise the turn names one of the memory's names, or, when it has none,
    says everything the target says."""
    have = topic_words(text)
    numbers = frozenset(re.findall(r"\b\d+\b", target))
    names = names_in([target])
    if numbers or names:
        rest = topic_words(target) - numbers
        return numbers <= have and (not names or bool(names & have)) and (not numbers or bool(rest & have))
    names = names_in([c.text for c in memory.members])
    return bool(names & have) if names else matches(target, text)


_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "two": 2, "third": 3, "3rd": 3, "three": 3,
             "fourth": 4, "4th": 4, "four": 4, "fifth": 5, "5th": 5, "five": 5}
_ALL = re.compile(r"\b(?:all|both|every ?one|each|all of them|both of them)\b", re.I)
_NONE = re.compile(r"^\s*(?:none|neither|no|nothing|cancel|never ?mind|stop|don't|do not)\b", re.I)
_YES = re.compile(r"^\s*(?:yes|yep|yeah|sure|ok(?:ay)?|go ahead|do it|please do)\b", re.I)


def choose(answer: str, labels: Sequence[str]) -> list[int] | None:
    """Which of the listed options (0-based) an answer picks: a number, an ordinal, "both"/"all"/"yes",
    or words of one option's label; [] for "none"/"cancel"; None when it picks nothing (an
    ordinary message: the question lapses)."""
    text = clean_text(answer).strip()
    if _NONE.match(text):
        return []
    if _ALL.search(text) or _YES.match(text):
        return list(range(len(labels)))
    picked = {n for word in re.findall(r"[A-Za-z0-9]+", text.lower())
              if (n := int(word) if word.isdigit() else _ORDINALS.get(word, 0)) and 1 <= n <= len(labels)}
    if picked:
        return sorted(n - 1 for n in picked)
    said = topic_words(text)
    if said:
        scored = [len(said & topic_words(label)) for label in labels]
        best = max(scored)
        if best and scored.count(best) == 1:
            return [scored.index(best)]
    return None


# ------------------------------------------------------------------ corrections

_NEGATIVE_CLAUSE = re.compile(r"\bnot\b|n't\b|\bnever\b|\bno longer\b", re.I)


def correction_parts(statement: str, *, sentences: bool = False) -> tuple[str, str]:
    """A correction's new statement and the words that name the old value: "I don't live in Lyon,
    I live in Porto" -> ("I live in Porto", "lyon"); "my dog is called Rex, not Max" -> ("my dog is
    called Rex", "max"); "I live in Porto" -> ("I live in Porto", "")."""
    clauses = [c.strip(" ,;.!") for c in re.split(r"[,;]|\s+but\s+|\s+—\s+|\s+-\s+", statement) if c.strip(" ,;.!")]
    positive = [c for c in clauses if not _NEGATIVE_CLAUSE.search(c)]
    negative = [c for c in clauses if _NEGATIVE_CLAUSE.search(c)]
    # `sentences`: the clauses read one by one, as the fact a correction stores is ("it's hazelnuts
    # I'm allergic to — I got muddled…" joined by a comma loses the cleft's focus).
    new = (". " if sentences else ", ").join(positive) if positive else statement.strip(" .!")
    denied = [r.ended for c in negative for r in read(c) if r.ended] + [
        " ".join(t.stem for t in content_terms(c) if t.proper or t.stem[:1].isdigit()) for c in negative]
    denied += [re.sub(r"^not\s+(?:the\s+)?", "", c, flags=re.I).lower() for c in negative
               if re.match(r"^not\s+\S+(?:\s+\S+)?$", c, re.I)]
    old = next((d for d in denied if d), "")
    return new, old


def slot_words(statement: str) -> frozenset[str]:
    """What a statement is about, without its value: its content words that are not names or
    numbers ("I live in Porto" -> {"live"}); all of them when every word is a name."""
    terms = [t for t in content_terms(statement) if t.stem not in _NO_TOPIC]
    slot = frozenset(t.stem for t in terms if not t.proper and not t.stem.isdigit())
    return slot or frozenset(t.stem for t in terms)


def _same_thing(new: Reading, old: Reading) -> bool:
    """Two readings about the same thing of the same person: a kind one value fills, or keys that
    share a word."""
    if new.subject != old.subject:
        return False
    if new.slot == old.slot and new.slot in EXCLUSIVE_SLOTS:
        return True
    keys = set(new.key.replace("|", " ").split()) & set(old.key.replace("|", " ").split())
    return bool(keys) and (new.slot == old.slot or {new.slot, old.slot} <= {"plan", "activity", "other"})


def contradicts(statement: str, text: str, old_value: str = "") -> bool:
    """Whether a stored memory says something else about what the correction is about: read by the
    language pipeline, the same thing with another value (or the old value the person denied);
    else, by words, it has the statement's slot words and lacks its value."""
    have = topic_words(text)
    if old_value and set(old_value.split()) & (have | {w.lower() for w in text.split()}):
        return True
    news, olds = read(statement), read(text)
    if news and olds:
        return any(_same_thing(n, o) and normalise_fact(n.text) != normalise_fact(o.text) and (
            n.value != o.value or n.negated != o.negated or not topic_words(n.text) <= topic_words(o.text))
            for n in news for o in olds)
    slot = slot_words(statement)
    if not slot or not slot <= have:
        return False
    return not topic_words(statement) <= have


def third_person(statement: str) -> str:
    """A statement as facts are stored: "I live in Porto" -> "User lives in Porto" (as the reader
    writes it; the words as said when it finds no fact in them)."""
    found = read(statement)
    if found:
        return found[0].text
    text = statement.strip().rstrip(".!")
    return re.sub(r"^(?:I'm|I am)\b", "User is", re.sub(r"^my\b", "User's", text, flags=re.I), flags=re.I)


_NOUNISH = frozenset({"PROPN", "NOUN", "NUM", "ADJ"})
_CORRECTION_WORDS = frozenset({"sorry", "no", "nope", "actually", "oops", "correction", "wait", "meant", "mean",
                               "typo", "misspoke", "muddled", "mixed", "wrong", "scratch", "autocorrect"})


def _run_before(doc, end: int) -> list:
    """The name or noun phrase that ends just before position `end` ("a Norwegian Forest cat",
    "Hailey", "electrician" in "an electrician actually, not …")."""
    i = end - 1
    while i >= 0 and (doc[i].is_punct or doc[i].pos_ in ("ADV", "INTJ") or doc[i].lower_ in ("actually", "though")):
        i -= 1
    words = []
    while i >= 0 and doc[i].pos_ in _NOUNISH and not doc[i].is_punct:
        words.insert(0, doc[i])
        i -= 1
    return words


def denial(text: str) -> tuple[str, str] | None:
    """The value a message gives and the one it denies: "she's called Hailey, not Bailey" →
    ("Hailey", "Bailey"); "it's Thursday at 3, not Tuesday" → ("Thursday", "Tuesday"); "Not Warwick —
    Exeter" → ("Exeter", "Warwick"). None when it denies nothing by name. Read on the parse: the
    words after "not", and before it the name of the same kind (an entity of the same label, else
    the noun phrase that ends there)."""
    # the reader's parses (cached), a cleft in its plain order: "it's pecans I react to, not walnuts"
    docs = [in_plain_order(doc) for doc in parse_all(parts_of(clean_text(text)))]
    for doc, after in zip(docs, [*docs[1:], None], strict=True):
        found = _denial_in(doc, after)
        if found is not None:
            return found
    return None


def _denial_in(doc, after_doc=None) -> tuple[str, str] | None:
    for token in doc:
        if token.lower_ != "not":
            continue
        after = [t for t in doc[token.i + 1:token.i + 6]]
        old_words = []
        # "Violin, not viola!": after a comma, a last word the tagger took for a verb is the value denied
        lone = (token.i > 0 and doc[token.i - 1].text == "," and len(after) > 1 and after[1].is_punct
                and after[0].tag_ in ("VB", "VBP"))
        for t in after:
            if t.is_punct or t.pos_ in ("AUX", "PRON", "CCONJ", "SCONJ") or (t.pos_ == "VERB" and not lone):
                break
            if t.pos_ != "DET" or old_words:
                old_words.append(t)
        if not old_words:
            continue
        old = " ".join(t.text for t in old_words)
        first = next((t for t in doc if not t.is_punct), None)
        if first is not None and first.i == token.i:  # "Not Warwick — Exeter"
            rest = [t for t in doc[old_words[-1].i + 1:] if not t.is_punct] or list(after_doc or ())
            new_words = [t for t in rest if not t.is_punct][:4]
            new_words = new_words[:next((k for k, t in enumerate(new_words) if t.pos_ not in _NOUNISH),
                                        len(new_words))]
        else:
            label = old_words[0].ent_type_
            same = [e for e in doc.ents if label and e.label_ == label and e.end <= token.i]
            new_words = list(same[-1]) if same else _run_before(doc, token.i)
        new = " ".join(t.text for t in new_words)
        if new and new.lower() != old.lower():
            return new, old
    return None


def replace_value(fact: str, old: str, new: str) -> str:
    """A fact with the value a correction denies replaced by the one it gives ("User has a beagle named
    Bailey", "Bailey" → "Hailey"; "… on 14 March", "14th" → "16 March"); "" when the fact does not
    hold the old value."""
    found = re.search(rf"\b{re.escape(old)}\b", fact, re.I)
    if found is None and (number := re.match(r"(\d+)(?:st|nd|rd|th)?$", old.strip(), re.I)):
        found = re.search(rf"\b{number.group(1)}(?:st|nd|rd|th)?\b(?:\s+(?:of\s+)?[A-Z][a-z]+)?", fact)
    if found is None:
        return ""
    before = fact[:found.start()]
    article = re.search(r"\b(a|an)\s+$", before)
    if article:  # "a plumber" → "an electrician"
        before = before[:article.start(1)] + ("an" if new[:1].lower() in "aeiou" else "a") + " "
    return before + new + fact[found.end():]


def says_correction(text: str) -> bool:
    """A message that says it corrects ("sorry", "actually", "I meant", "typo") or is short enough that
    "X, not Y" can be nothing else."""
    words = [w.lower() for w in re.findall(r"[A-Za-z']+", text)]
    return bool(set(words) & _CORRECTION_WORDS) or len(words) <= 12


def given_value(text: str):
    """The value a correction gives, read on the parse: what "it's" or "I meant" names ("it's Khloe
    with a K" → Khloe, "I meant statistics" → statistics, "it's July 12" → July 12), else its first
    name, number or date. None when it names nothing."""
    return next(iter(given_values(text)), None)


def given_values(text: str) -> list:
    """Every value a correction may give, the likeliest first (given_value's order, then each other
    name, number or date): "the Perth move is in July" gives Perth and July, and the one the fact
    does not already hold is the correction."""
    found = []
    for doc in parse_all(parts_of(clean_text(text))):
        first = next((t for t in doc if not t.is_punct), None)
        if first is not None and first.pos_ in ("PROPN", "NOUN", "NUM"):
            found.append(_value_span(first))  # "I meant statistics, economics was …"
        found += [_value_span(token) for token in doc if token.dep_ in ("attr", "dobj", "oprd") and (
            token.head.lemma_ in ("be", "mean") or token.head.lower_ in ("'s", "is"))
            and token.pos_ in ("PROPN", "NOUN", "NUM")]
        found += [_value_span(t) for t in doc if t.pos_ in ("PROPN", "NUM") and t.lower_ not in ("i", "sorry")]
    spans = {}
    for span in found:
        spans.setdefault((span.start, span.end, span.doc.text), span)
    return list(spans.values())


def _value_span(token):
    """A value with its name or date around it ("July 12", "Quebec City", "Baldur's Gate 3")."""
    doc = token.doc
    for entity in doc.ents:
        if entity.start <= token.i < entity.end:
            return entity
    start = min([token.i, *[c.i for c in token.children if c.dep_ in ("compound", "nummod", "amod")]])
    return doc[start:token.i + 1]


_NAMES = frozenset({"PERSON", "GPE", "LOC", "ORG", "NORP", "FAC", "PRODUCT", "WORK_OF_ART"})


def replace_given(fact: str, given, *, same_label: bool = False) -> str:
    """A fact with the value of the same kind as `given` replaced by it ("Chloe is User's daughter",
    Khloe → "Khloe is User's daughter"; "User's birthday is June 12", July 12 → "… is July 12"); ""
    when the fact holds no value of that kind (`same_label`: no entity of the given one's label)."""
    doc = parse(normalise_statement(fact))
    label = given.label_ if hasattr(given, "label_") else given.root.ent_type_
    same = [e for e in doc.ents if label and e.label_ == label]
    if same_label and not same:
        return ""
    if not same and label in _NAMES:  # the tagger calls one name a person, another a place
        same = [e for e in doc.ents if e.label_ in _NAMES]
    if not same:
        kind = given.root.pos_ if hasattr(given, "root") else given.pos_
        same = [doc[t.i:t.i + 1] for t in doc if t.pos_ == kind and t.lower_ not in ("i", "user") and (
            kind != "NOUN" or t.dep_ in ("attr", "dobj", "pobj", "oprd"))]
    if not same:
        return ""
    old = same[-1].text
    found = re.search(rf"\b{re.escape(old)}\b", fact)
    if found is None or old.lower() == given.text.lower():
        return ""
    return fact[:found.start()] + given.text + fact[found.end():]


def with_value(fact: str, value: str) -> str:
    """A fact with its value said again ("User lives in Lisbon", "Porto" → "User lives in Porto");
    "" when the fact has no value its words show."""
    found = read(fact)
    old = next((r.value for r in found if r.value and r.value not in ("yes", "no", "+", "-", "alive")), "")
    at = fact.lower().rfind(old) if old else -1
    if at < 0:
        return ""
    return fact[:at] + value.strip(" .!") + fact[at + len(old):]


def first_person(fact: str) -> str:
    """A stored fact as the person would read it: "User lives in Porto" -> "you live in Porto"."""
    return to_person(fact, capital=False)


def day(moment: datetime | None) -> str:
    """A date as a person reads it: "27 November 2026"."""
    return f"{moment.day} {moment:%B %Y}" if moment is not None else "an unknown date"


def period(valid_until: datetime | None, successor: str = "") -> str:
    """A superseded memory's period: "until March 2026; since then: Porto"."""
    if valid_until is None:
        return ""
    text = f"until {valid_until:%B %Y}"
    return f"{text}; since then: {successor}" if successor else text
