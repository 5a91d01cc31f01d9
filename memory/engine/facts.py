"""Facts at the turn they are told: what a statement says about the person and the people they name.

A turn is read clause by clause. The slots supersession knows (where someone lives, works, their
job, partner, pets, diet, likes; memory/engine/supersession.py) come from its claims, so a fact
stored here is read back the same way when a later statement may end it. Family and friends by
name, plans with dates, trips, health the person chose to share, a name and a birthday come from
readers of their own. Each fact is stored in the third person ("User lives in Porto", "User's
sister lives in Oslo", "Lia is User's brother's daughter"): another person's fact keeps its owner.
Hypotheticals ("if I moved to Berlin"), jokes and questions state nothing. Pure and deterministic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .supersession import SELF, Claim, blocked, claims_of, clauses_of, normalise_statement

# Slots a question can be about, and what each one is called.
SLOTS = ("residence", "employer", "occupation", "partner", "pet", "diet", "preference", "favorite", "activity",
         "family", "plan", "trip", "health", "name", "birthday")


@dataclass(frozen=True)
class Fact:
    """One thing a statement says: whose (SELF or a relation), which slot, the value as said, and
    the text stored for it."""

    subject: str
    slot: str
    key: str
    value: str
    text: str
    ended: str = ""  # a value the statement says is over ("from Lyon")
    change: bool = False


_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_DATE = re.compile(r"\b(?:(?:on|in|next|this|by|until|from|at the end of)\s+)?(?:" + "|".join(_MONTHS + _DAYS)
                   + r")\b(?:\s+\d{1,2}(?:st|nd|rd|th)?)?|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:"
                   + "|".join(_MONTHS) + r")\b|\b(?:tomorrow|tonight|next (?:week|month|year|weekend)|"
                   r"this (?:weekend|summer|winter|spring|autumn|fall)|in (?:two|three|\d+) (?:days|weeks|months))\b",
                   re.I)
_RELATION_WORDS = (r"wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|mom|mum|mother|dad|father|parents|"
                   r"brother|sister|son|daughter|kid|child|niece|nephew|friend|best friend|boss|cousin|aunt|uncle|"
                   r"grandma|grandmother|grandpa|grandfather|neighbou?r|roommate|flatmate|colleague|coworker|"
                   r"stepson|stepdaughter|twin|godson|goddaughter|granddaughter|grandson|mentor|teacher|doctor")
_FAMILY = re.compile(r"\b[Mm]y\s+(?P<relation>(?:(?:" + _RELATION_WORDS + r")'s\s+)?(?:(?:older|younger|little|big|"
                     r"baby|eldest|youngest|best|oldest|new)\s+)?(?:" + _RELATION_WORDS + r"))"
                     r"(?:'s name is|,|\s+is\s+called|\s+is\s+named|\s+named|\s+called|)\s+(?P<name>[A-Z][a-z]+)\b")
_NOT_NAMES = frozenset(_MONTHS + _DAYS + "i i'm is was and but the a an just has had will said told".split())
_HEALTH = (
    re.compile(r"\b(?:I'm|I am|I've been|we're)\s+(?P<value>allergic to [\w' -]+|(?:lactose|gluten) intolerant|"
               r"diabetic|pregnant|asthmatic|colou?r ?blind|deaf in one ear)", re.I),
    re.compile(r"\bI\s+(?:have|'ve got|have got|suffer from|live with|was diagnosed with|got diagnosed with)\s+"
               r"(?P<value>(?:type [12] )?diabetes|asthma|migraines?|celiac disease|coeliac disease|adhd|"
               r"arthritis|anxiety|depression|epilepsy|high blood pressure|a bad back|a (?:\w+ )?allergy|"
               r"(?:a )?(?:peanut|nut|gluten|dairy|shellfish|pollen|cat|dog) allergy|insomnia|eczema|"
               r"long covid|a heart condition|tinnitus|dyslexia|back pain|a broken \w+)", re.I),
)
_NAME = (re.compile(r"\b[Mm]y name(?:'s| is)\s+(?P<value>[A-Z][a-z]+(?: [A-Z][a-z]+)?)"),
         re.compile(r"\b(?:[Cc]all me|[Pp]eople call me)\s+(?P<value>[A-Z][a-z]+)"))
_BIRTHDAY = re.compile(r"\b[Mm]y birthday(?:'s| is)\s+(?:on\s+)?(?P<value>[\w ]+?)(?=[,.!;]|$| and\b| so\b)")
_PLAN = re.compile(r"^(?:\W*(?:and|so|also|then|oh|btw|by the way)\s+)*(?P<who>I'm|I am|I'll|I will|we're|we are|"
                   r"we'll|we will|I|we|my (?:\w+ )?(?:plan|trip|flight|appointment|interview|exam|holiday|vacation|"
                   r"wedding|surgery|operation|move|party|concert|race|marathon|visit|birthday))\b\s*(?P<rest>.+)",
                   re.I)
_PLAN_VERB = re.compile(r"\b(?:going|flying|travell?ing|heading|driving|leaving|moving|starting|visiting|"
                        r"planning|have (?:a|an|my)|has (?:a|an)|got (?:a|an)|is|are|will|'ll|booked|taking|"
                        r"running|getting married|seeing)\b", re.I)
_TRIP = re.compile(r"^(?:\W*(?:and|so|also|then|oh|btw|right now)\s+)*(?:I'm|I am|we're|we are)\s+(?:currently\s+|"
                   r"just\s+|actually\s+)?(?P<value>(?:visiting|in|travell?ing (?:in|to|around)|on a trip to|"
                   r"on holiday in|on vacation in|staying in)\s+[A-Z][\w' -]*)", re.I)
_SOFT = re.compile(r"\b(?:if|unless|would|might|maybe|perhaps|imagine|wish|dream|someday|what if|joking|kidding|"
                   r"lol|haha|jk|pretend)\b", re.I)

_SLOT_TEXT = {
    "residence": "{owner} {lives} in {value}",
    "employer": "{owner} {works} at {value}",
    "occupation": "{owner} {works} as {article}{value}",
    "diet": "{owner} {is} {value}",
}
_PET_SPECIES = ("dog", "cat", "puppy", "kitten", "rabbit", "hamster", "parrot", "bird", "fish", "turtle", "horse",
                "snake", "lizard")
_DIET_WORDS = {"vegetarian": "vegetarian", "vegan": "vegan"}


def _owner(subject: str) -> tuple[str, bool]:
    """How a fact names its subject, and whether that takes a plural verb."""
    return ("User", False) if subject == SELF else (f"User's {subject}", subject in ("parents", "kids"))


def _as_said(value: str, clause: str) -> str:
    """A claim's value with the case it was written in ("porto" → "Porto")."""
    at = clause.lower().find(value.lower()) if value else -1
    return clause[at:at + len(value)] if at >= 0 else value


def _object(clause: str, after: re.Pattern[str]) -> str:
    match = after.search(clause)
    if not match:
        return ""
    rest = re.split(r"[,.!?;:()]|\s+(?:but|because|since|so|and then|although|though)\s", clause[match.end():])[0]
    words = rest.strip().split()
    return " ".join(words[:6]).strip(" '\"")


_LIKE_VERB = re.compile(r"\b(?:really\s+|absolutely\s+|totally\s+)?(?:love|loves|like|likes|enjoy|enjoys|adore|"
                        r"adores|am into|'m into|am a fan of|'m a fan of|am obsessed with|'m obsessed with|"
                        r"am passionate about|'m passionate about)\s+", re.I)
_DISLIKE_VERB = re.compile(r"\b(?:hate|hates|dislike|dislikes|can't stand|cannot stand|detest|don't like|do not like|"
                           r"don't really like|no longer like|am sick of|'m sick of|am tired of|'m tired of|"
                           r"have gone off|'ve gone off|am not a fan of|'m not a fan of)\s+", re.I)
_FAVORITE = re.compile(r"\bfavou?rite\s+(?P<key>[\w ]+?)\s+(?:is|are|has become|became)\s+(?:now\s+)?"
                       r"(?P<value>[^,.!?;]+)", re.I)
_ACTIVITY = re.compile(r"\b(?:play|plays|playing|practice|practise|do|does)\s+", re.I)


def _from_claim(claim: Claim) -> Fact | None:
    if claim.past or not claim.value:
        return _ended_fact(claim)
    owner, plural = _owner(claim.subject)
    value = _as_said(claim.value, claim.clause)
    verb = {"lives": "live" if plural else "lives", "works": "work" if plural else "works",
            "is": "are" if plural else "is"}
    if claim.slot in ("residence", "employer"):
        if claim.slot == "residence" and value[:1].islower():
            value = value.title()
        text = _SLOT_TEXT[claim.slot].format(owner=owner, value=value, **verb)
    elif claim.slot == "occupation":
        article = "" if value == "retired" else ("an " if value[:1].lower() in "aeiou" else "a ")
        text = (f"{owner} {verb['is']} retired" if value == "retired"
                else _SLOT_TEXT["occupation"].format(owner=owner, value=value, article=article, **verb))
    elif claim.slot == "diet":
        text = f"{owner} {verb['is']} {_DIET_WORDS.get(claim.value, claim.value)}"
        if claim.value == "omnivore":
            text = f"{owner} {'eat' if plural else 'eats'} meat"
    elif claim.slot == "partner":
        if claim.value in ("single", "married", "engaged", "divorced", "separated", "widowed"):
            text = f"{owner} {verb['is']} {claim.value}"
        else:
            value = claim.value.title()
            text = f"{owner}'s partner is {value}" if claim.subject == SELF else f"{owner}'s partner is {value}"
    elif claim.slot == "pet":
        name, _, species = claim.key.partition("|")
        value = name.title()
        if claim.value == "gone":
            species = next((w for w in _PET_SPECIES if re.search(rf"\b{w}\b", claim.clause, re.I)), "pet")
            text = f"{owner}'s {species} {value} is gone" if name not in _PET_SPECIES else f"{owner}'s {name} is gone"
        else:
            text = f"{owner} {'have' if plural else 'has'} a {species or 'pet'} named {value}"
    elif claim.slot == "favorite":
        match = _FAVORITE.search(claim.clause)
        if not match:
            return None
        value = " ".join(match.group("value").split()[:6])
        text = f"{owner}'s favourite {match.group('key').strip()} is {value}"
    elif claim.slot == "preference":
        liked = claim.value == "+"
        value = _object(claim.clause, _LIKE_VERB if liked else _DISLIKE_VERB)
        if not value or value.lower() in ("it", "that", "this", "them", "you"):
            return None
        text = f"{owner} {('like' if liked else 'dislike') + ('' if plural else 's')} {value}"
    elif claim.slot == "activity":
        value = _object(claim.clause, _ACTIVITY)
        if claim.value != "does" or not value or len(value.split()) > 3:
            return None
        text = f"{owner} {'play' if plural else 'plays'} {value}"
    else:
        return None
    return Fact(subject=claim.subject, slot=claim.slot, key=claim.key, value=value, text=text,
                ended=claim.ended if claim.ended != "*" else "", change=claim.change)


def _ended_fact(claim: Claim) -> Fact | None:
    """A statement that only ends something ("I quit my job at Acme"): kept, so that it supersedes."""
    if claim.past or not claim.ended or claim.ended == "*" and claim.slot != "partner":
        return None
    owner, _ = _owner(claim.subject)
    ended = _as_said(claim.ended, claim.clause)
    texts = {"residence": f"{owner} moved away from {ended.title() if ended.islower() else ended}",
             "employer": f"{owner} left their job at {ended}",
             "diet": f"{owner} is no longer {ended}",
             "partner": f"{owner} broke up with {ended.title()}" if claim.ended != "*" else f"{owner} is single"}
    if claim.slot not in texts:
        return None
    return Fact(subject=claim.subject, slot=claim.slot, key=claim.key, value="", text=texts[claim.slot],
                ended=claim.ended if claim.ended != "*" else "", change=True)


def _third_person(words: str) -> str:
    """The rest of a first-person clause said of the user ("my flight" → "their flight")."""
    swaps = {"my": "their", "me": "them", "our": "their", "us": "them", "myself": "themselves", "i": "they",
             "i'm": "they're", "we": "they", "we're": "they're", "mine": "theirs"}
    return re.sub(r"[A-Za-z']+", lambda m: swaps.get(m.group(0).lower(), m.group(0)), words)


def _other_facts(clause: str) -> list[Fact]:
    """Family and friends by name, health, a name, a birthday, plans with dates, trips."""
    found: list[Fact] = []
    soft = bool(_SOFT.search(clause))
    for match in _FAMILY.finditer(clause):
        name = match.group("name")
        if name.lower() in _NOT_NAMES or soft:
            continue
        relation = " ".join(match.group("relation").split()).lower()
        found.append(Fact(subject=SELF, slot="family", key=name.lower(), value=relation,
                          text=f"{name} is User's {relation}"))
    if soft:
        return found
    for pattern in _HEALTH:
        match = pattern.search(clause)
        if match and not re.search(r"\b(?:not|no longer|never|don't)\b", clause[:match.start("value")], re.I):
            value = " ".join(match.group("value").split()[:6]).rstrip(" ,")
            found.append(Fact(subject=SELF, slot="health", key=value.lower().split()[0], value=value,
                              text=f"User {'has' if pattern is _HEALTH[1] else 'is'} {value}"))
            break
    for pattern in _NAME:
        match = pattern.search(clause)
        if match:
            found.append(Fact(subject=SELF, slot="name", key="", value=match.group("value"),
                              text=f"User's name is {match.group('value')}"))
            break
    birthday = _BIRTHDAY.search(clause)
    if birthday and _DATE.search(birthday.group("value")):
        value = birthday.group("value").strip()
        found.append(Fact(subject=SELF, slot="birthday", key="", value=value, text=f"User's birthday is {value}"))
    trip = _TRIP.search(clause)
    date = _DATE.search(clause)
    if trip and not date and not re.search(r"\bin (?:love|charge|the\b|a\b|an\b)", trip.group("value"), re.I):
        value = " ".join(trip.group("value").split()[:6])
        found.append(Fact(subject=SELF, slot="trip", key=value.lower(), value=value, text=f"User is {value}"))
    plan = _PLAN.search(clause)
    done = plan is not None and re.search(r"\b(?:was|went|did|had)\b", plan.group("rest"), re.I)
    if plan and date and not birthday and not done and _PLAN_VERB.search(plan.group("rest")):
        rest = " ".join(plan.group("rest").rstrip(" .!").split()[:16])
        who = plan.group("who")
        lead = who if who.lower().startswith("my ") else ""
        value = _third_person(f"{lead} {rest}".strip())
        value = re.sub(r"^(?:am|are|will|'ll)\s+", "", value)
        found.append(Fact(subject=SELF, slot="plan", key=value.lower(), value=value, text=f"User's plan: {value}"))
    return found


def facts_of(text: str) -> list[Fact]:
    """Every fact a statement states about the speaker and the people they name, each once."""
    facts: dict[str, Fact] = {}
    claims = claims_of(text)
    ended = {(c.subject, c.slot, c.ended) for c in claims if c.ended}
    for claim in claims:
        if claim.value and (claim.subject, claim.slot, claim.value) in ended:
            continue  # "I quit my job at Acme" names Acme as the job that ended
        fact = _from_claim(claim)
        if fact is not None:
            facts.setdefault(fact.text.lower(), fact)
    for clause in clauses_of(text):
        if blocked(clause, "") and not _PLAN.search(clause):
            continue
        for fact in _other_facts(clause):
            facts.setdefault(fact.text.lower(), fact)
    return list(facts.values())


# --- reading a stored fact back, and a question about the person -------------------------------

_STORED_FAMILY = re.compile(r"^(?P<name>[A-Z][a-z]+) is User's (?P<relation>.+)$")
_STORED_OTHER = (
    ("plan", re.compile(r"^User's plan: (?P<value>.+)$")),
    ("birthday", re.compile(r"^User's birthday is (?P<value>.+)$")),
    ("name", re.compile(r"^User's name is (?P<value>.+)$")),
    ("health", re.compile(r"^User (?:has|is) (?P<value>(?:allergic|lactose|gluten|diabetic|pregnant|asthmatic).*|"
                          r"(?:type|diabetes|asthma|migraine|celiac|coeliac|adhd|arthritis|anxiety|depression|"
                          r"epilepsy|high blood|a bad back|a \w* ?allergy|insomnia|eczema|long covid|a heart|"
                          r"tinnitus|dyslexia|back pain|a broken).*)$", re.I)),
    ("trip", re.compile(r"^User is (?P<value>(?:visiting|in|travell?ing|on a trip|on holiday|on vacation|staying in)"
                        r"\b.*)$")),
)


def fact_reading(text: str) -> Fact | None:
    """What a stored fact says (subject, slot, value), or None for a fact no reader knows."""
    family = _STORED_FAMILY.match(text)
    if family:
        return Fact(subject=SELF, slot="family", key=family.group("name").lower(), value=family.group("relation"),
                    text=text)
    for slot, pattern in _STORED_OTHER:
        match = pattern.match(text)
        if match:
            return Fact(subject=SELF, slot=slot, key="", value=match.group("value"), text=text)
    found = facts_of(text)
    if not found:
        return None
    fact = found[0]
    return Fact(subject=fact.subject, slot=fact.slot, key=fact.key, value=fact.value, text=text, ended=fact.ended)


# --- the model's extraction ----------------------------------------------------------------------

TURN_FACTS_PROMPT = (
    "You keep a memory of facts about a user. From the user's message below, list the lasting facts it "
    "states about the user and the people they name: where they live, work, their job, family and friends, "
    "pets, plans with dates, likes and dislikes, diet, health they chose to share. Write each in the third "
    "person starting with \"User\" (\"User lives in Porto\", \"User's sister lives in Oslo\", \"Lia is User's "
    "brother's daughter\"). A hypothetical, a visit, a joke or a question states no fact about where they "
    "live. Answer with JSON: {\"facts\": [\"...\", ...]} (an empty list when there are none)."
)
MAX_MODEL_FACTS = 8


def validate_turn_facts(value: object) -> tuple[str, ...]:
    """The model's facts, read tolerantly: {"facts": [...]}, a bare list, or objects with a "text"
    (or "fact"); blank and overlong entries are left out. Anything else is a ValueError."""
    if isinstance(value, dict):
        value = value.get("facts", value.get("items"))
    if not isinstance(value, list):
        raise ValueError("expected {'facts': [...]} or a list of facts")
    facts = []
    for entry in value:
        if isinstance(entry, dict):
            entry = entry.get("text", entry.get("fact"))
        if not isinstance(entry, str):
            continue
        text = " ".join(entry.split()).rstrip(".")
        if 3 <= len(text) <= 200:
            facts.append(text)
    return tuple(dict.fromkeys(facts))[:MAX_MODEL_FACTS]


def as_statement(text: str) -> str:
    """A stored fact read in the speaker's words (used by the readers)."""
    return normalise_statement(text)
