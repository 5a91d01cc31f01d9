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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from .text import clean_text, is_question, split_sentences, stem

SELF = "self"
# Slots one value at a time fills: a new value ends the old one.
EXCLUSIVE_SLOTS = frozenset({"residence", "employer", "occupation", "partner", "diet", "favorite"})
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


@dataclass(frozen=True)
class Claim:
    """What one clause says about a slot."""

    subject: str
    slot: str
    key: str  # within keyed slots (a pet's name, a liked thing); "" for exclusive slots
    value: str  # normalised; "" when the clause only says the old value is over
    ended: str = ""  # a value the clause says is over ("from Leeds", "quit the bakery"); "*" any
    change: bool = False
    past: bool = False  # about the past only ("I used to live in Leeds")
    clause: str = ""


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    confidence: float
    slot: str
    old_id: str | None
    reason: str


NO_VERDICT = Verdict(decision=Decision.NONE, confidence=0.0, slot="", old_id=None,
                     reason="no clash with a current memory")

# --- reading a clause --------------------------------------------------------------------------

_STORED_SUBJECT = (  # stored facts speak of "User"; read them as the speaker's own words
    (re.compile(r"\bUser and others\b"), "we"), (re.compile(r"\b(?:User|the user)'s\b"), "my"),
    (re.compile(r"\b(?:User|the user) is\b"), "I'm"), (re.compile(r"\b(?:User|the user) has\b"), "I have"),
    (re.compile(r"\b(?:User|the user)\b"), "I"), (re.compile(r"\btheir\b"), "my"),
    (re.compile(r"\b(?:they're|they are)\b"), "I'm"), (re.compile(r"\bthey\b"), "I"),
)
_CLAUSE_SPLIT = re.compile(r"[;:]|\s[-–—]\s|,?\s+but\s+|,\s*so\s+|,?\s+and\s+(?=(?:now|then|I|we|my|started|"
                           r"got|moved|joined|am|I'm|we're)\b)|,?\s+because\s+|,?\s+since\s+(?=I|we)|"
                           r",\s+(?=now\b)", re.I)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|whether|might|may|maybe|could|would|should|wish|imagine|someday|one day|dream(?:s|ing)? of|"
    r"thinking (?:about|of)|considering|consider|want(?:s|ed)? to|wanna|hope|hoping|planning|plan to|plans to|"
    r"going to|gonna|about to|tempted|pretend|what if|i'd|we'd|i'll|we'll|will|rather|wondering|or not)\b",
    re.I)
_JOKE = re.compile(r"\b(?:lol|lmao|haha\w*|jk|just kidding|kidding|joking|basically|practically|"
                   r"pretty much|might as well|technically)\b", re.I)
_REPORTED = re.compile(r"\b(?:he|she|they|his|her|their|him|them)\b", re.I)
_CHANGE = re.compile(r"\b(?:moved|move|moving|relocated|relocating|quit|quitting|left|leaving|no longer|"
                     r"anymore|any more|now|nowadays|these days|started|starting|switched|switching|changed|"
                     r"became|become|went|gone|turned|finally|new|just|recently|since|stopped|gave up|"
                     r"retired|broke up|split up|divorced|got married|got engaged|not anymore|instead)\b",
                     re.I)
_PAST = re.compile(r"\b(?:used to|grew up|was born|back when|years ago|as a kid|as a child|in the past|"
                   r"before (?:that|we|i))\b", re.I)
_NEGATION = re.compile(r"\b(?:don't|do not|doesn't|does not|didn't|never|not|no longer|isn't|aren't|"
                       r"won't|can't|cannot)\b", re.I)
_SUBJECT_WORDS = re.compile(r"\b(I|I'm|I've|[Ww]e|[Ww]e're|[Ww]e've|us|me|[Hh]e|[Ss]he|[Tt]hey|it|"
                            r"[Mm]y\s+(?:\w+\s+)?\w+|[Oo]ur\s+(?:\w+\s+)?\w+|[A-Z][a-z]+)\b")
_FILLERS = frozenset("just finally recently also now actually really so well oh yeah and then anyway guess what "
                     "officially since last this month week year ago already still".split())
_RELATIONS = frozenset("""
wife husband partner boyfriend girlfriend fiance fiancee spouse mom mum mother dad father parents
brother sister son daughter kids children friend boss cousin aunt uncle grandma grandpa neighbor
neighbour roommate colleague coworker
""".split())
_VALUE_STOP = re.compile(
    r"\s+(?:now|anymore|any more|these days|nowadays|since|for|with|because|after|before|when|while|"
    r"last|this|next|in (?:january|february|march|april|may|june|july|august|september|october|"
    r"november|december|spring|summer|autumn|fall|winter|the spring|the summer|the autumn|the fall|"
    r"the winter)|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|and|but|which|where|who|"
    r"instead|again|too|already|"
    r"a (?:few|couple)|from|to|ago|so|as|at the moment|right now|lately|recently)\b.*$", re.I)
_ARTICLES = re.compile(r"^(?:the|a|an|my|our|their|his|her|some|this|that|new|old|little|local|"
                       r"full[- ]time|part[- ]time)\s+", re.I)


def _value(text: str, *, max_words: int = 5) -> str:
    """The value at the start of `text`, normalised: lowercase, no article, no trailing adverbs."""
    text = re.split(r"[,.!?;:()\"]", text.strip(), maxsplit=1)[0]
    text = _VALUE_STOP.sub("", " " + text).strip()
    previous = None
    while previous != text:
        previous, text = text, _ARTICLES.sub("", text)
    return " ".join(text.lower().split()[:max_words])


def _subject(head: str) -> str | None:
    """Whose claim, from the words before its verb: the speaker, a relation, or someone else (None)."""
    words = [w for w in head.strip(" ,").split() if w.lower().strip(",") not in _FILLERS]
    head = " ".join(words)
    # "my girlfriend", "our new address": the speaker's own
    if re.search(r"\b(?:my|our)(?:\s+(?:new|old|current|first|own|lovely))?$", head, re.I):
        return SELF
    if not head or re.search(r"\band (?:I|me)$", head) or re.fullmatch(r"(?:I|I'm|I've|we|we're|we've)", head):
        return SELF
    found = list(_SUBJECT_WORDS.finditer(head))
    if not found:
        return SELF
    last = found[-1].group(1)
    lower = last.lower()
    if found[-1].start() == 0 and len(found) == 1 and lower.endswith(("ed", "ing")):
        return SELF  # "Started working at ...": the subject is left out, as chat does
    if lower.endswith("'s") or head.endswith("'s"):
        return lower.removesuffix("'s").split()[-1] if lower.startswith(("my ", "our ")) else None
    if lower in {"i", "i'm", "i've", "we", "we're", "we've"}:
        return SELF
    if lower.startswith(("my ", "our ")):
        relation = lower.split()[-1]
        return relation if relation in _RELATIONS else None
    return None


_PLACE = r"(?P<value>[A-Za-z][\w' .-]*)"
_SUBJ = r"(?P<head>(?:^|.*?\b))"


class _Headed:
    """A reader's pattern that opens with its lazy `head` group, `(?P<head>.*?)`.

    The head takes in whatever comes before the words the reader looks for, so wherever `search`
    would find a match starting later in a clause, the head can stretch back to the clause's start
    and the same words match from there: `search` returns the match that starts at 0, which is
    what `match` returns. `match` only skips trying every later start, each one again through the
    head: quadratic in the clause, 16x the time on LoCoMo's turns (scripts/claims_cost.py). `.`
    stops at a newline, so a text holding one is searched as before (clauses_of splits on
    newlines). The head's closing `\b` is tested at the same position whichever start it came
    from; a pattern that refers back to the head (`(?P=head)`, `(?(head)...)`) could tell them
    apart, and is refused.
    """

    __slots__ = ("pattern",)

    def __init__(self, pattern: str, flags: int = 0) -> None:
        if not pattern.startswith((_SUBJ, "(?P<head>.*?)")) or "(?P=head)" in pattern or "(?(head)" in pattern:
            raise ValueError(f"not a headed pattern: {pattern[:40]!r}")
        self.pattern = re.compile(pattern, flags)

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.match(text) if "\n" not in text else self.pattern.search(text)


_RESIDENCE = (
    _Headed(_SUBJ + r"(?:moved|move|moving|relocated|relocating)\s+(?:all the way\s+|back\s+)?"
            r"from\s+(?P<old>[A-Z][\w' .-]*?)\s+(?:to|into)\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:moved|move|moving|relocated|relocating)\s+(?:all the way\s+|back\s+|over\s+)?"
            r"(?:to|into)\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:live|lives|living|lived|reside|resides|residing)\s+(?:with\s+(?:[\w']+\s+){1,3}?)?"
            r"(?:in|near)\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:am|'m|are|'re|is|'s)?\s*(?:based|settled|living)\s+in\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:home|house|flat|apartment|place|address)\s+is\s+(?:now\s+)?in\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:moved|moving)\b.*?\binto\s+(?:an?\s+|the\s+|our\s+|my\s+)?(?:new\s+)?"
            r"(?:flat|house|place|apartment|home|condo)\s+in\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"grew up in\s+" + _PLACE, re.I),
)
_RESIDENCE_LEFT = _Headed(_SUBJ + r"(?:moved|moving)\s+(?:away\s+)?(?:from|out of)\s+" + _PLACE, re.I)
_RESIDENCE_NO_LONGER = _Headed(r"(?P<head>.*?)\b(?:no longer|don't|do not|doesn't)\s+live\s+in\s+" + _PLACE
                               + r".*\b(?:anymore|any more)?", re.I)

_EMPLOYER = (
    _Headed(_SUBJ + r"(?:work|works|working|worked)\s+(?:now\s+)?(?:at|for)\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:job|position|role|internship)\s+(?:is\s+)?(?:at|with)\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:started|start|starting|began|begun)\s+(?:a\s+new\s+job\s+|a\s+job\s+|work\s+|working\s+|"
            r"my\s+new\s+job\s+|a\s+new\s+position\s+)?at\s+" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:joined|hired by|hired at|employed by|employed at|got a job at|got hired at|"
            r"took a job at|accepted a job at|got an offer from)\s+" + _PLACE, re.I),
)
_GROUPS = re.compile(r"\b(?:club|group|team|class|classes|gym|band|choir|community|league|course|workshop|"
                     r"program|programme|society|circle|meetup|forum|movement|cause|party|crew|squad)\b", re.I)
_EMPLOYER_LEFT = (
    _Headed(_SUBJ + r"(?:quit|left|leaving|quitting)\s+(?:my\s+(?:job|position|role)\s+(?:at|with)\s+)?"
            + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:retired|laid off|fired|let go|resigned)\s+from\s+" + _PLACE, re.I),
)
_EMPLOYER_NO_LONGER = _Headed(r"(?P<head>.*?)\b(?:no longer|don't|do not|doesn't)\s+work\s+(?:at|for)\s+"
                              + _PLACE, re.I)
_OCCUPATIONS = frozenset("""
teacher nurse doctor engineer developer programmer lawyer accountant chef cook baker librarian designer
writer journalist student barista cashier manager electrician plumber carpenter mechanic pharmacist dentist
architect scientist researcher professor lecturer firefighter paramedic pilot driver farmer photographer
editor consultant analyst therapist counselor counsellor social worker tutor waiter waitress receptionist
clerk secretary banker salesperson translator vet veterinarian midwife surgeon cleaner gardener butcher
florist tailor artist musician actor freelancer
""".split())
_OCCUPATION = (
    _Headed(_SUBJ + r"(?:work|works|working|worked)\s+as\s+(?:an?\s+)?" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:job|career)\s+as\s+(?:an?\s+)?" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:became|become|becoming|trained as|retrained as|qualified as)\s+(?:an?\s+)?" + _PLACE, re.I),
    _Headed(_SUBJ + r"(?:am|'m|is|are)\s+(?:now\s+|officially\s+)?(?:an?\s+)(?P<value>[\w-]+(?:\s+\w+)?)", re.I),
    _Headed(_SUBJ + r"(?:am|'m|is)\s+(?:now\s+|officially\s+)?(?P<value>retired)\b", re.I),
)
_PARTNER_WORDS = r"(?:wife|husband|partner|boyfriend|girlfriend|fiance|fiancee|fiancé|fiancée|spouse)"
_NAME = r"(?P<value>[A-Z][a-z]+)"
_PARTNER = (
    _Headed(_SUBJ + r"\b" + _PARTNER_WORDS + r"(?:'s name)?\s*(?:,\s*|\s+is\s+(?:called\s+|named\s+)?|\s+)"
            + _NAME),
    _Headed(_SUBJ + r"(?:seeing|dating|met)\s+someone(?:\s+new)?\b.{0,20}?\b(?:her|his|their)\s+name\s+is\s+"
            + _NAME),
    _Headed(_SUBJ + r"(?:dating|going out with|married to|engaged to|in a relationship with|together with|"
            r"seeing someone called|proposed to|marrying|moved in with)\s+" + _NAME),
)
_PARTNER_STATUS = _Headed(_SUBJ + r"(?:am|'m|is|are|'re|got|getting)\s+(?:now\s+|officially\s+|happily\s+)?"
                          r"(?P<value>single|married|engaged|divorced|separated|widowed)\b", re.I)
_PARTNER_LEFT = _Headed(_SUBJ + r"(?:broke up|split up|separated|divorced)(?:\s+(?:with|from))?"
                        r"(?:\s+(?P<value>[A-Z][a-z]+))?")
_PARTNER_EX = _Headed(r"(?P<head>.*?)\bex(?:-| )?(?:wife|husband|partner|boyfriend|girlfriend|fiance|fiancee)?,?\s+"
                      r"(?P<value>[A-Z][a-z]+)")
_APART = frozenset({"single", "divorced", "separated", "widowed"})
_PET_WORDS = (r"(?:dog|cat|puppy|kitten|rabbit|bunny|hamster|parrot|bird|fish|turtle|tortoise|horse|guinea pig|"
              r"snake|lizard)")
_PET_HAS = (
    _Headed(_SUBJ + r"(?:have|has|got|adopted|own|owns)\s+(?:an?\s+)?(?:\w+\s+)?(?P<species>" + _PET_WORDS
            + r")\s+(?:named|called)\s+" + _NAME, re.I),
    _Headed(_SUBJ + r"\b(?P<species>dog|cat|puppy|kitten|rabbit|bunny|hamster|parrot|bird|turtle|horse|snake)"
            r"(?:'s name is|,|\s+is\s+called|\s+named|\s+called|)\s+" + _NAME),
)
_PET_GONE = (
    _Headed(r"(?P<head>.*?)(?:\b(?P<species>" + _PET_WORDS + r")\s+)?(?P<value>[A-Z][a-z]+)?\s*"
            r"(?:died|passed away|passed|ran away|went missing|was put down|had to be put down)\b"),
    _Headed(_SUBJ + r"(?:lost|put down|rehomed|gave away|buried)\s+(?:our|my)\s+(?:\w+\s+)?"
            r"(?P<species>" + _PET_WORDS + r")(?:,?\s+(?P<value>[A-Z][a-z]+))?", re.I),
    _Headed(_SUBJ + r"(?:lost|put down|rehomed|gave away|buried)\s+(?P<value>[A-Z][a-z]+)"),
    _Headed(_SUBJ + r"put\s+(?P<value>[A-Z][a-z]+)\s+(?:down|to sleep)\b"),
)
_DIETS = {"vegetarian": "vegetarian", "veggie": "vegetarian", "vegan": "vegan", "pescatarian": "pescatarian",
          "pescetarian": "pescatarian", "keto": "keto", "gluten-free": "gluten-free", "carnivore": "carnivore"}
_DIET = (
    _Headed(_SUBJ + r"(?:am|'m|is|are|'re|went|gone|going|turned|became|become|been|eat|eats|eating)\s+"
            r"(?:not\s+|no longer\s+)?(?:now\s+|fully\s+|completely\s+|strictly\s+|officially\s+|a\s+|an\s+)*"
            r"(?P<value>vegetarian|veggie|vegan|pescatarian|pescetarian|keto|gluten-free|carnivore)\b", re.I),
)
_DIET_MEAT_OFF = _Headed(_SUBJ + r"(?:stopped|quit|gave up|cut out|don't|do not|no longer|never)\s+"
                         r"(?:eating\s+|eat\s+)?(?:meat|animal products)\b", re.I)
_DIET_GIVEN_UP = _Headed(_SUBJ + r"(?:given up|gave up|quit|stopped|dropped|ditched|abandoned)\s+(?:being\s+)?"
                         r"(?:an?\s+)?(?P<value>vegetarian|veggie|vegan|pescatarian|pescetarian|keto|gluten-free)\b",
                         re.I)
_DIET_MEAT_ON = _Headed(_SUBJ + r"(?:eat|eats|eating|started eating|back to eating)\s+meat\b", re.I)
_LIKE = r"(?:love|loves|loved|like|likes|liked|enjoy|enjoys|enjoyed|adore|adores|am into|'m into|is into|" \
        r"am a fan of|'m a fan of|is a fan of|am obsessed with|'m obsessed with|is obsessed with|" \
        r"am passionate about|'m passionate about|is passionate about)"
_DISLIKE = r"(?:hate|hates|dislike|dislikes|can't stand|cannot stand|detest|am sick of|'m sick of|" \
           r"am tired of|'m tired of|is tired of|have gone off|'ve gone off|went off|am over|'m over|" \
           r"am not into|'m not into|is not into|am not a fan of|'m not a fan of|not a fan of)"
_PREFERENCE = (
    (_Headed(_SUBJ + r"(?:don't|do not|doesn't|does not|no longer|never)\s+(?:really\s+)?"
             r"(?:like|love|enjoy|care for)\s+(?P<value>.+)", re.I), "-"),
    (_Headed(_SUBJ + r"\b" + _DISLIKE + r"\s+(?P<value>.+)", re.I), "-"),
    (_Headed(_SUBJ + r"(?:used to|once)\s+(?:love|like|enjoy|adore)\s+(?P<value>.+)", re.I), "past+"),
    (_Headed(_SUBJ + r"(?:really\s+|absolutely\s+|totally\s+)?\b" + _LIKE + r"\s+(?P<value>.+)", re.I), "+"),
)
_FAVORITE = _Headed(_SUBJ + r"favou?rite\s+(?P<key>[\w ]+?)\s+(?:is|are|has become|became)\s+(?:now\s+)?"
                    r"(?P<value>.+)", re.I)
_ACTIVITY_ON = _Headed(_SUBJ + r"(?:play|plays|playing|practice|practices|practise|practises|do|does)\s+"
                       r"(?P<value>(?:the\s+)?[a-z]+(?:\s+[a-z]+)?)", re.I)
_ACTIVITY_OFF = _Headed(_SUBJ + r"(?:stopped|quit|gave up|don't|do not|no longer|never)\s+"
                        r"(?:playing\s+|doing\s+|practicing\s+|practising\s+|play\s+|do\s+)?"
                        r"(?P<value>(?:the\s+)?[a-z]+(?:\s+[a-z]+)?)", re.I)


def normalise_statement(text: str) -> str:
    """A statement as the readers take it: a stored fact's "User" read as the speaker's "I"."""
    text = clean_text(text)
    for pattern, replacement in _STORED_SUBJECT:
        text = pattern.sub(replacement, text)
    return text


def clauses_of(text: str) -> Iterator[str]:
    """The clauses of a statement's sentences that are not questions."""
    for sentence in split_sentences(normalise_statement(text)):
        if is_question(sentence):
            continue
        yield from (c.strip() for c in _CLAUSE_SPLIT.split(sentence) if c and c.strip())


def blocked(clause: str, head: str) -> bool:
    """A clause that claims nothing about now: a hypothetical, a plan, a joke."""
    return bool(_HYPOTHETICAL.search(head) or _JOKE.search(clause)
                or re.match(r"\W*(?:if|when|once|unless|what if|imagine)\b", clause, re.I))


def _claim(clause: str, match: re.Match[str], slot: str, *, key: str = "", value: str | None = None,
           ended: str = "", past: bool | None = None) -> Claim | None:
    head = match.group("head") if "head" in match.groupdict() else ""
    if blocked(clause, head or ""):
        return None
    subject = _subject(head or "")
    if subject is None:
        return None
    if value is None:
        value = _value(match.group("value") or "")
    return Claim(subject=subject, slot=slot, key=key, value=value, ended=ended,
                 change=bool(_CHANGE.search(clause)),
                 past=bool(_PAST.search(clause)) if past is None else past, clause=clause)


def _negated(head: str) -> bool:
    return bool(_NEGATION.search(head or ""))


def _residence(clause: str) -> list[Claim | None]:
    claims: list[Claim | None] = []
    for index, pattern in enumerate(_RESIDENCE):
        match = pattern.search(clause)
        if not match or _negated(match.group("head")):
            continue
        value = _value(match.group("value"))
        if index == 0:
            return [_claim(clause, match, "residence", value=value, ended=_value(match.group("old")))]
        past = True if index == 6 or re.search(r"\blived\b", match.group(0)) else None
        if re.search(r"\blive[sd]?\s+at\b|\bliving\s+at\b", match.group(0), re.I):
            continue
        claims.append(_claim(clause, match, "residence", value=value, past=past))
        break
    left = _RESIDENCE_LEFT.search(clause)
    if left and not claims:
        claims.append(_claim(clause, left, "residence", value="", ended=_value(left.group("value"))))
    negated = _RESIDENCE_NO_LONGER.search(clause)
    if negated and re.search(r"\bno longer\b|\banymore\b|\bany more\b", clause, re.I):
        claims.append(_claim(clause, negated, "residence", value="", ended=_value(negated.group("value"))))
    return claims


def _employer(clause: str) -> list[Claim | None]:
    claims: list[Claim | None] = []
    for pattern in _EMPLOYER:
        match = pattern.search(clause)
        if match and re.search(r"\bjoined\b", match.group(0), re.I) and (
                _GROUPS.search(match.group("value"))
                or not re.match(r"(?:(?:the|a|an)\s+)?[A-Z]", match.group("value").strip())):
            continue  # joining a club, a platform or a tournament is no job; joining Microsoft is
        if match and not _negated(match.group("head")):
            past = True if re.search(r"\bworked\b", match.group(0)) else None
            claims.append(_claim(clause, match, "employer", past=past))
            break
    for index, pattern in enumerate(_EMPLOYER_LEFT):
        match = pattern.search(clause)
        if not match:
            continue
        said = match.group(0)
        # "left the party early" is no job: leaving counts when the clause says it was the job
        if index == 0 and not re.search(r"\b(?:quit|quitting|job|position|role|work)\b", said, re.I) \
                and not re.search(r"\band (?:started|joined|now)\b|\bfor a job\b", clause, re.I):
            continue
        claims.append(_claim(clause, match, "employer", value="", ended=_value(match.group("value"))))
        break
    negated = _EMPLOYER_NO_LONGER.search(clause)
    if negated and re.search(r"\bno longer\b|\banymore\b|\bany more\b", clause, re.I):
        claims.append(_claim(clause, negated, "employer", value="", ended=_value(negated.group("value"))))
    return claims


def _occupation(clause: str) -> list[Claim | None]:
    for index, pattern in enumerate(_OCCUPATION):
        match = pattern.search(clause)
        if not match or _negated(match.group("head")):
            continue
        value = _value(match.group("value"), max_words=2)
        words = value.split()
        if index in (2, 3) and not (words and (words[-1] in _OCCUPATIONS or words[0] in _OCCUPATIONS)):
            continue  # "became interested", "becoming a mom", "I'm a big fan": no job
        if words and words[0] in _OCCUPATIONS:
            value = words[0]
        past = True if re.search(r"\bworked\b", match.group(0)) else None
        return [_claim(clause, match, "occupation", value=value, past=past)]
    return []


def _partner(clause: str) -> list[Claim | None]:
    claims: list[Claim | None] = []
    left = _PARTNER_LEFT.search(clause)
    if left:
        name = (left.group("value") or "").lower()
        claims.append(_claim(clause, left, "partner", value="single", ended=name or "*"))
        return claims
    ex = _PARTNER_EX.search(clause)
    if ex:
        claims.append(_claim(clause, ex, "partner", value="", ended=ex.group("value").lower()))
        return claims
    for pattern in _PARTNER:
        match = pattern.search(clause)
        if match and not _negated(match.group("head")):
            claims.append(_claim(clause, match, "partner", value=match.group("value").lower()))
            return claims
    status = _PARTNER_STATUS.search(clause)
    if status and not _negated(status.group("head")):
        claims.append(_claim(clause, status, "partner"))
    return claims


def _pet(clause: str) -> list[Claim | None]:
    for pattern in _PET_GONE:
        match = pattern.search(clause)
        if match and (match.groupdict().get("species") or match.group("value")):
            species = (match.groupdict().get("species") or "").lower()
            name = (match.group("value") or "").lower()
            if name and name in {"i", "we", "my", "our", "he", "she", "it", "they"}:
                continue
            head = match.group("head") or ""
            subject = _subject(head)
            if blocked(clause, head) or subject is None:
                return []
            return [Claim(subject=subject, slot="pet", key=name or species, value="gone", change=True, clause=clause)]
    for pattern in _PET_HAS:
        match = pattern.search(clause)
        if match and not _negated(match.group("head")):
            species = (match.groupdict().get("species") or "").lower()
            name = match.group("value").lower()
            return [_claim(clause, match, "pet", key=f"{name}|{species}", value="alive")]
    return []


def _diet(clause: str) -> list[Claim | None]:
    off = _DIET_MEAT_OFF.search(clause)
    if off:
        claim = _claim(clause, off, "diet", value="vegetarian")
        return [claim and Claim(**{**claim.__dict__, "change": claim.change or "stopped" in off.group(0)})]
    given_up = _DIET_GIVEN_UP.search(clause)
    if given_up:
        return [_claim(clause, given_up, "diet", value="", ended=_DIETS[given_up.group("value").lower()])]
    on = _DIET_MEAT_ON.search(clause)
    if on and not _negated(on.group("head")):
        return [_claim(clause, on, "diet", value="omnivore")]
    for pattern in _DIET:
        match = pattern.search(clause)
        if not match:
            continue
        label = _DIETS[match.group("value").lower()]
        if re.search(r"\bno longer\b|\bnot\b[^.]*\banymore\b|\bstopped being\b|\bquit being\b", clause, re.I):
            return [_claim(clause, match, "diet", value="", ended=label)]
        if _negated(match.group("head")):
            return []
        return [_claim(clause, match, "diet", value=label)]
    return []


def _key(text: str) -> str:
    """A liked thing's key: its content words, stemmed, in order."""
    words = re.findall(r"[a-z]+", _value(text, max_words=4).lower())
    stop = {"the", "a", "an", "my", "of", "and", "to", "it", "that", "this", "so", "much", "very", "really",
            "going", "doing", "having", "all", "about", "them", "those", "lot", "any", "more"}
    return " ".join(stem(w) for w in words if w not in stop)


def _preference(clause: str) -> list[Claim | None]:
    favorite = _FAVORITE.search(clause)
    if favorite:
        return [_claim(clause, favorite, "favorite", key=_key(favorite.group("key")))]
    for pattern, polarity in _PREFERENCE:
        match = pattern.search(clause)
        if not match:
            continue
        key = _key(match.group("value"))
        if not key:
            return []
        if polarity == "past+":
            return [_claim(clause, match, "preference", key=key, value="+", past=True)]
        return [_claim(clause, match, "preference", key=key, value=polarity)]
    return []


def _activity(clause: str) -> list[Claim | None]:
    off = _ACTIVITY_OFF.search(clause)
    if off and re.search(r"\b(?:stopped|quit|gave up|no longer|anymore|any more)\b", clause, re.I):
        key = _key(off.group("value"))
        return [_claim(clause, off, "activity", key=key, value="stopped")] if key else []
    on = _ACTIVITY_ON.search(clause)
    if on and not _negated(on.group("head")):
        key = _key(on.group("value"))
        return [_claim(clause, on, "activity", key=key, value="does")] if key else []
    return []


_READERS = (_residence, _employer, _occupation, _partner, _pet, _diet, _preference, _activity)


def claims_of(text: str) -> list[Claim]:
    """Every slot claim the text makes, clause by clause."""
    return list(_claims(text))


@lru_cache(maxsize=8192)
def _claims(text: str) -> tuple[Claim, ...]:
    # The current memories are read again for every new statement: a long conversation's are cached.
    found: list[Claim] = []
    for clause in clauses_of(text):
        for reader in _READERS:
            found += [c for c in reader(clause) if c is not None]
    return tuple(found)


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
    if not new_claims:
        return []
    verdicts: dict[str, Verdict] = {}
    for memory in current:
        for old in claims_of(memory.text):
            for new in new_claims:
                if (new.subject, new.slot) != (old.subject, old.slot):
                    continue
                if new.key or old.key:
                    if not _same_key(new.slot, new.key, old.key):
                        continue
                reason = _clash(new, old)
                if not reason:
                    continue
                confidence = _confidence(new, old, reason, params)
                decision = (Decision.SUPERSEDE if confidence >= params.supersede_at
                            else Decision.REVIEW if confidence >= params.review_at else Decision.NONE)
                if decision is Decision.NONE:
                    continue
                whose = "their" if new.subject == SELF else f"their {new.subject}'s"
                text = (f"{SLOT_TITLES[new.slot].replace('their', whose, 1)}: {reason}"
                        f" (\"{new.clause}\"{', a change word' if new.change else ''})")
                verdict = Verdict(decision=decision, confidence=confidence, slot=new.slot, old_id=memory.id,
                                  reason=text)
                if memory.id not in verdicts or verdicts[memory.id].confidence < confidence:
                    verdicts[memory.id] = verdict
    return sorted(verdicts.values(), key=lambda v: -v.confidence)


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


_PAST_QUESTION = re.compile(r"\b(?:before|used to|use to|previous(?:ly)?|former(?:ly)?|earlier|old|originally|"
                            r"back then|in the past|first)\b", re.I)


def asks_about_the_past(query: str) -> bool:
    """ "Where did I live before York?": a question a superseded memory answers."""
    return bool(_PAST_QUESTION.search(query))


def says_superseded(sentence: str, superseded: Sequence[str]) -> bool:
    """Whether a sentence states a value that a superseded memory held: once Leeds is history,
    "I live in Leeds" answers "where do I live?" only about the past."""
    old = [c for text in superseded for c in claims_of(text) if c.value and not c.past]
    if not old:
        return False
    return any(claim.value and not claim.past and (claim.subject, claim.slot) == (stale.subject, stale.slot)
               and (claim.key == stale.key or _same_key(claim.slot, claim.key, stale.key))
               and same_value(claim.value, stale.value)
               for claim in claims_of(sentence) for stale in old)


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
