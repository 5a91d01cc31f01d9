"""Facts said to the person they are about: one way, wherever a person reads them (their page, the
chat's notices, replies, answers to "what do you know about me?").

A fact is stored in the third person ("User is coeliac", "Ingrid is User's sister", "User doesn't
have any children"); said to the person, "User" becomes "you" with its verb agreeing ("You're
coeliac", "Ingrid is your sister", "You don't have any children"). Pure.
"""

from __future__ import annotations

import re

_AGREEING = {"is": "you're", "isn't": "you aren't", "was": "you were", "wasn't": "you weren't", "has": "you have",
             "hasn't": "you haven't", "does": "you do", "doesn't": "you don't", "goes": "you go"}
_OWN = {"their": "your", "theirs": "yours", "themselves": "yourself", "they're": "you're", "they've": "you've"}
# "User lives" → "you live": a verb after "User" in the third person singular.
_VERB_AFTER_USER = re.compile(r"\bUser (?!and\b)([a-z]+n't|[a-z]+)\b")


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
    verb = match.group(1)
    if verb in _AGREEING:
        return _AGREEING[verb]
    return f"you {_base(verb)}" if verb.endswith("s") else f"you {verb}"


def to_person(text: str, *, capital: bool = True) -> str:
    """A stored fact said to the person: "User lives in Porto" → "You live in Porto"."""
    said = re.sub(r"\b(?:User|the user)'s\b", "your", " ".join(text.split()))
    said = _VERB_AFTER_USER.sub(_agree, said)
    said = re.sub(r"\b(?:User|the user)\b", "you", said)
    said = re.sub(r"\b(?:their|theirs|themselves|they're|they've)\b", lambda m: _OWN[m.group(0)], said)
    if capital:
        return said[:1].upper() + said[1:]
    return said[:1].lower() + said[1:] if said[:4] in ("You ", "Your", "You'") else said
