"""A sentence parsed into its clauses, and of each: whose it is (the speaker, "my sister",
someone else), whether it is asserted (not a question, a condition, a wish, a report, a joke), its
tense and whether it is negated. Also the `Reading` that the reader makes of a clause."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import lexicon as lx

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


# --- the parse, clause by clause ------------------------------------------------------------------

_CLAUSE_DEPS = frozenset({"ROOT", "conj", "ccomp", "advcl", "parataxis"})
SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})
_WH = frozenset({"what", "when", "where", "who", "whom", "whose", "which", "why", "how"})
_CONDITIONS = frozenset({"if", "unless", "whether", "when", "once", "whenever", "til", "till", "until"})
_MODALS = frozenset({"would", "'d", "could", "might", "may", "should", "ought", "must", "shall"})
_FUTURE = frozenset({"will", "'ll", "wo", "gonna"})
JOKES = frozenset({"jk", "kidding", "joking", "lol", "lmao", "haha", "hahaha", "rofl"})
DROP_LEADS = frozenset({"and", "but", "so", "also", "then", "plus", "or", "honestly", "basically", "actually",
                        "anyway", "anyways", "btw", "well", "oh", "yeah", "yes", "yep", "ok", "okay", "lol",
                        "haha", "um", "uh", "hmm", "fyi", "tbh", "like", "though", "because", "cause", "since",
                        "although", "while", "as", "no", "nope", "sorry", "hey", "hi", "hello", "ah", "wow",
                        "fun", "fact", "news", "update"})
# Participles that open a sentence as a way of speaking, not as what the speaker does.
_DISCOURSE = frozenset({"speaking", "talking", "considering", "given", "assuming", "judging", "looking", "saying",
                        "coming", "going", "getting"})
PRONOUNS_SELF = frozenset({"i", "we", "me", "us"})


def asks(sent: Span) -> bool:
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
    if first.pos_ == "AUX" and len(words) > 1 and words[1].dep_ in SUBJECTS and first.i < words[1].i:
        return first.lower_ not in ("'m", "am")
    return False


def _shares_words(token: Token) -> bool:
    """A verb that is no clause of its own: "bred" in "Born and bred in Cork" (it shares its first
    verb's subject, and that verb has nothing of its own), "swell" in "Shellfish makes my throat swell"
    (what a causative verb makes happen)."""
    if token.dep_ == "conj" and not any(c.dep_ in SUBJECTS for c in token.children):
        first = token.head
        return not any(c.dep_ in ("dobj", "prep", "attr", "acomp", "xcomp", "oprd") for c in first.children)
    return token.dep_ == "ccomp" and token.head.lemma_ in ("make", "let", "help") and token.i > token.head.i


def _clause_heads(sent: Span) -> list[Token]:
    heads = [t for t in sent if t.dep_ in _CLAUSE_DEPS and (t.dep_ == "ROOT" or t.pos_ in ("VERB", "AUX") or any(
        c.dep_ in SUBJECTS for c in t.children)) and not _shares_words(t)]
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
class Clause:
    head: Token
    tokens: tuple[Token, ...]
    subject: Token | None

    @property
    def lemmas(self) -> frozenset[str]:
        return frozenset(t.lemma_.lower() for t in self.tokens) | frozenset(t.lower_ for t in self.tokens)

    @property
    def text(self) -> str:
        return "".join(t.text_with_ws for t in self.tokens).strip()


def subject_of(head: Token) -> Token | None:
    subjects = [c for c in head.children if c.dep_ in SUBJECTS]
    if subjects:  # "Long story short, I bought …": a misread lead-in is no subject beside "I"
        return next((c for c in subjects if c.lower_ in PRONOUNS_SELF), subjects[0])
    if head.dep_ in ("conj", "xcomp") and head.head.i != head.i:
        return subject_of(head.head)
    return None


def clauses(sent: Span) -> list[Clause]:
    """The sentence's clauses: each verb that heads one, with its own words (not those of the
    clauses inside it) and its subject (a conjoined verb shares its first verb's)."""
    heads = _clause_heads(sent)
    ids = frozenset(h.i for h in heads)
    owned: dict[int, list[Token]] = {h.i: [] for h in heads}
    for token in sent:
        owner = _clause_of(token, ids)
        if owner in owned:
            owned[owner].append(token)
    return [Clause(h, tuple(owned[h.i]), subject_of(h)) for h in heads]


# --- whose, and whether it is asserted ----------------------------------------------------------

def possessor(token: Token) -> Token | None:
    return next((c for c in token.children if c.dep_ == "poss"), None)


_THE_ONES = frozenset({"hubby", "husband", "wife", "missus", "kids", "kid", "mum", "mom", "dad", "mam", "ma", "pa",
                       "children", "baby", "twins", "folks", "parents"})


def relation_of(token: Token) -> str | None:
    """ "my older sister" → "older sister"; "my brother's daughter" → "brother's daughter"; "the
    hubby", "the kids", "dad" said alone → theirs; None when the noun is no relation of the speaker's."""
    owner = possessor(token)
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
    inner = relation_of(owner)
    return f"{inner.split()[-1]}'s {word}" if inner else None


def whose_of(clause: Clause, sent: Span) -> str | None:
    """SELF, a relation ("sister"), or None (someone or something else)."""
    subject = clause.subject
    if subject is None:
        head = clause.head
        while head.dep_ == "conj" and head.head.i != head.i and subject_of(head.head) is None:
            head = head.head  # "Born and bred in Cork": the first verb's
        first = next((t for t in sent if not t.is_punct and t.lower_ not in DROP_LEADS
                      and t.dep_ not in ("neg", "det", "advmod", "aux", "auxpass")), None)
        if first is None:
            return None
        if first.i < head.i - 1:
            # "Left Tesco finally, working at Barclays now": a sentence that opened without its
            # subject goes on without it
            opener = first if first.pos_ in ("VERB", "AUX") else None
            subjectless = opener is not None and subject_of(opener) is None and head.pos_ in ("VERB", "AUX") \
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
    if subject.lower_ in PRONOUNS_SELF:
        return SELF
    if any(c.lower_ in ("i", "me") for c in subject.conjuncts):
        return SELF  # "my wife and I"
    relation = relation_of(subject)
    if relation is not None:
        return relation
    if possessor(subject) is not None and possessor(subject).lower_ in ("my", "our"):
        return SELF  # "my hobby", "my flight", "my first language"
    if (subject.lemma_.lower() in OWN_NOUNS or any(c.lower_ in ("favourite", "favorite", "fave")
                                                   for c in subject.children)) \
            and not any(c.dep_ in ("det", "poss") for c in subject.children):
        return SELF  # "Home's a farmhouse", "Birthday's in May", "Favourite colour is green"
    return None


# Nouns that, said without an owner, are the speaker's own: "Home's a farmhouse".
OWN_NOUNS = frozenset({"home", "birthday", "name", "job", "hobby", "diet", "commute", "flight", "surgery",
                       "appointment", "interview", "exam", "wedding", "thesis", "defense", "defence", "operation",
                       "shift", "rota", "mortgage", "rent", "contract", "weekend", "morning", "evening", "night",
                       "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})


# Verbs by which a thing (not a person) says something of the speaker: "gluten is off the table for
# me", "peanuts put me in hospital", "pollen doesn't bother me", "spicy food doesn't agree with me".
_ABOUT_ME_VERBS = frozenset({"be", "make", "put", "give", "bother", "agree", "affect", "trigger", "send", "keep",
                             "do", "wreck", "kill", "upset", "suit", "bring", "leave", "cause", "hurt", "diagnose",
                             "prescribe", "start", "take", "taste", "smell"})


def mentions_self(clause: Clause) -> bool:
    """ "Gluten is off the table for me", "Spanish is my first language": another subject, but
    the clause is about the speaker ("a lad on my course" is still the lad; "Daniel laughs at my
    Portuguese" is Daniel's doing)."""
    subject = clause.subject
    care = clause.lemmas & (lx.HEALTH | lx.ALLERGY)  # "doc put me on lisinopril": the person's health
    liking = subject is not None and subject.lower_ in ("that", "this") and any(
        c.dep_ == "attr" and possessor(c) is not None and possessor(c).lower_ == "my" and (
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


def _governed_by(clause: Clause) -> Token | None:
    return clause.head.head if clause.head.dep_ in ("ccomp", "advcl", "conj", "parataxis") else None


def _hedge(head: Token) -> bool:
    """ "I think", "I'm pretty sure", "I guess": the speaker's frame around what they assert."""
    subject = subject_of(head)
    if subject is None or subject.lower_ not in ("i", "we"):
        return False
    if head.lemma_.lower() in lx.HEDGE_HEADS:
        return True
    return any(c.dep_ == "acomp" and c.lemma_.lower() in lx.SURE_WORDS for c in head.children)


def unasserted(clause: Clause) -> str:
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
    if head.lemma_ not in ("be", "have") and any(c.dep_ == "advmod" and c.lower_ in lx.SPECULATIVE
                                                 for c in head.children):
        return "speculative"  # "maybe we move to Spain someday": a thought, not a move
    if _hedge(head) and any(c.dep_ in ("ccomp", "parataxis") for t in (head, *head.children) for c in t.children):
        return "frame"  # "I'm pretty sure …": what it frames is read on its own
    lowered = {t.lower_ for t in clause.tokens}
    if lowered & {"jk", "kidding", "joking"}:
        return "joke"
    auxes = [c for c in head.children if c.dep_ in ("aux", "auxpass")]
    rather = any(c.lower_ == "rather" for c in head.children)  # "I'd rather walk than drive": a preference
    modals = {a.lower_ for a in auxes} & _MODALS
    if modals and not rather and not (modals <= _LIKELY and _speaker_hedges(clause)):
        return "modal"
    if head.lemma_.lower() in lx.WISH_VERBS or (head.lemma_.lower() == "like" and any(a.lower_ in ("'d", "would")
                                                                                     for a in auxes)):
        return "wish"
    if head.lemma_.lower() in ("think", "consider", "plan") and head.tag_ == "VBG":
        return "wish"  # "I'm thinking about moving"
    governor = _governed_by(clause)
    wishing = lx.WISH_VERBS | {"say", "suppose", "pretend"}
    if governor is not None and clause.head.dep_ == "ccomp" and governor.lemma_.lower() in wishing \
            and governor.lower_ == governor.lemma_.lower() and subject_of(governor) is None:
        return "wish"  # "Wish I was a pilot", "Say I quit my job tomorrow"
    if governor is not None and clause.head.dep_ == "ccomp" and governor.lemma_.lower() in lx.REPORTING \
            and clause.head.i > governor.i:
        speaker = subject_of(governor)
        if speaker is not None and speaker.lower_ not in ("i", "we", "you"):  # "you could say I'm …" hedges
            return "reported"  # "My mum says I'm stubborn"
    if governor is not None and clause.head.dep_ == "conj":
        return unasserted(Clause(governor, (), subject_of(governor)))
    return ""


# "I might be lactose intolerant", "might move back to Dublin next spring": the speaker's own
# guess about themselves, told as a hedge (kept, as "I think I'm …" is), unlike "would" and "could".
_LIKELY = frozenset({"might", "may"})


def hedged(clause: Clause) -> bool:
    """Said under "might" or "may": kept in the person's words, never as a value ("User might be a
    nurse", not "User works as a nurse")."""
    return any(c.dep_ in ("aux", "auxpass") and c.lower_ in _LIKELY for c in clause.head.children)


def _speaker_hedges(clause: Clause) -> bool:
    """The person's own state or plan under "might" or "may", with no dreaming word ("maybe
    someday I might …", "one day", "in another life")."""
    subject = clause.subject
    if subject is not None and subject.lower_ not in ("i", "we"):
        return False
    sent = clause.head.sent
    return not any(t.lower_ in lx.SPECULATIVE or t.lower_ in ("day", "life") and t.dep_ in ("npadvmod", "pobj")
                   or t.lower_ == "if" for t in sent)


def tense_of(clause: Clause) -> str:
    """ "future", "perfect", "past" or "present"."""
    head = clause.head
    auxes = [c for c in head.children if c.dep_ in ("aux", "auxpass")]
    words = {a.lower_ for a in auxes}
    going = head.lemma_ == "go" and head.tag_ == "VBG" and any(c.dep_ == "xcomp" for c in head.children)
    if words & _FUTURE or going or words & _LIKELY and head.lemma_ not in ("be", "have"):
        return "future"  # "might move back to Dublin next spring" is a plan, "might be coeliac" a state
    if any(c.lower_ in ("going", "gonna") and c.dep_ == "aux" for c in auxes):
        return "future"
    if any(a.lemma_ == "have" and a.tag_ in ("VBP", "VBZ") for a in auxes):
        return "perfect"
    if head.tag_ == "VBD" or any(a.tag_ == "VBD" for a in auxes):
        return "past"
    return "present"


def is_negated(clause: Clause) -> bool:
    """ "I don't drink", "I have no children", "never": a negation of the clause's own verb or object."""
    for token in clause.tokens:
        if token.dep_ == "neg" and token.head.i == clause.head.i:
            return True
        if token.lower_ in ("no", "never") and token.dep_ in ("det", "neg", "advmod") and (
                token.head.i == clause.head.i or token.head.head.i == clause.head.i):
            return True
    return "no longer" in clause.text.lower()
