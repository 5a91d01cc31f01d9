"""Facts said to the person they are about: one way, wherever a person reads them (their page, the
chat's notices, replies, answers to "what do you know about me?").

A fact is stored in the third person ("User is coeliac", "Ingrid is User's sister", "User doesn't
have any children"); said to the person, "User" becomes "you" with its verb agreeing ("You're
coeliac", "Ingrid is your sister", "You don't have any children"). Pure.
"""

from __future__ import annotations

import re

from .language import parse

_AGREEING = {"is": "you're", "isn't": "you aren't", "was": "you were", "wasn't": "you weren't", "has": "you have",
             "hasn't": "you haven't", "does": "you do", "doesn't": "you don't", "goes": "you go"}
_OWN = {"their": "your", "theirs": "yours", "themselves": "yourself", "they're": "you're", "they've": "you've"}
# "User lives" → "you live": a verb after "User" in the third person singular.
# "User also plays", "User still lives": an adverb may come between.
_VERB_AFTER_USER = re.compile(r"\bUser (?!and\b)((?:(?:also|still|just|really|now|never|always|usually|often|only|"
                              r"even|actually|finally|recently|mostly|basically) )?)([a-z]+n't|[a-z]+)\b")


def _base(verb: str) -> str:
    """ "lives" → "live", "studies" → "study", "watches" → "watch", "misses" → "miss"."""
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes", "zzes", "oes")):
        return verb[:-2]
    if verb.endswith("s") and not verb.endswith(("ss", "us", "is")):
        return verb[:-1]
    return verb


def _agree(match: re.Match[str]) -> str:
    adverb, verb = match.group(1), match.group(2)
    if verb in _AGREEING:
        said = _AGREEING[verb]  # "you're", "you have"
        return f"you {adverb}{said.removeprefix('you').lstrip()}" if adverb and not said.startswith("you'") else (
            f"{said} {adverb.strip()}" if adverb else said)
    return f"you {adverb}{_base(verb) if verb.endswith('s') else verb}"


def to_person(text: str, *, capital: bool = True) -> str:
    """A stored fact said to the person: "User lives in Porto" → "You live in Porto"."""
    said = re.sub(r"\b(?:User|the user)'s\b", "your", " ".join(text.split()))
    said = _VERB_AFTER_USER.sub(_agree, said)
    said = re.sub(r"\b(?:User|the user)\b", "you", said)
    said = re.sub(r"\b(?:their|theirs|themselves|they're|they've)\b", lambda m: _OWN[m.group(0)], said)
    if capital:
        return said[:1].upper() + said[1:]
    return said[:1].lower() + said[1:] if said[:4] in ("You ", "Your", "You'") else said


_STORED_LEADS = {"you're": "User is", "you are": "User is", "you were": "User was", "you have": "User has",
                 "you've": "User has", "you do": "User does", "you don't": "User doesn't", "you aren't": "User isn't",
                 "you haven't": "User hasn't", "you weren't": "User wasn't", "i'm": "User is", "i am": "User is",
                 "i was": "User was", "i have": "User has", "i've": "User has", "i do": "User does",
                 "i don't": "User doesn't"}
_MODALS = frozenset("can can't cannot could will won't would should must may might".split())


def to_stored(text: str) -> str:
    """A fact as the person writes it (to them, "You live in Porto", or as they would say it, "I live
    in Porto") in the third person it is stored in ("User lives in Porto"); a text already about
    "User" is kept as it is."""
    said = " ".join(text.split()).rstrip(".!")
    if re.search(r"\bUser\b", said):
        return said
    said = stored_lead(said)
    def owner(match: re.Match[str]) -> str:  # "their" once "User" is said, else "User's"
        return "their" if "User" in said[:match.start()] else "User's"

    said = re.sub(r"\b(?:your|my)\b", owner, said, flags=re.I)
    said = re.sub(r"\b(?:yourself|myself)\b", "themselves", said, flags=re.I)
    return re.sub(r"\b(?:you|me)\b", "User", said, flags=re.I)


def stored_lead(text: str) -> str:
    """The subject a text opens with, "I" or "you", as "User" with its verb agreeing ("I am having
    …" → "User is having …", "you live …" → "User lives …"); the rest of the text as it is."""
    lowered = text.lower()
    for lead, stored in _STORED_LEADS.items():
        if lowered == lead or lowered.startswith(lead + " "):
            return stored + text[len(lead):]
    lead = re.match(r"^(?:you|i)\s+([a-z]+)\b", text, re.I)
    if not lead:
        return text
    verb = lead.group(1).lower()
    tag = parse(f"I {verb} it.")[1].tag_  # "left" stays, "live" takes its s
    return f"User {verb if verb in _MODALS or tag in ('VBD', 'VBN', 'MD') else _third(verb)}{text[lead.end():]}"


def _third(verb: str) -> str:
    """ "live" → "lives", "study" → "studies", "watch" → "watches"."""
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in ("a", "e", "i", "o", "u"):
        return verb[:-1] + "ies"
    return verb + "s"
