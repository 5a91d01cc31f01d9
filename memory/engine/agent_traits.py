"""Agent traits from the assistant's words: what it suggested, promised or said about itself.

Part of the offline engine (DESIGN.md, "The offline engine"): "You should try yoga" becomes
"Assistant suggested the user try yoga". The person's facts are read by the language pipeline
(memory/engine/reading/), never here. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .text import content_terms, is_question, split_sentences

# --- first-person statements ------------------------------------------------------------------


_CLAUSE_CUT = re.compile(
    r"[.!?;:]|\s[-–—]\s|\s\((?!\w+\))|,?\s+but\s|,\s*so\s|,?\s+because\s|,\s*which\s|,\s*though\s"
    r"|,?\s+and\s+(?:it|that|this|he|she|they|we|i|I|i'm|I'm)\b")
_SELF_PRONOUNS = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves", "i": "they",
                  "i'm": "they're", "i've": "they've", "i'll": "they'll", "i'd": "they'd",
                  "we": "they", "our": "their", "ours": "theirs", "us": "them",
                  "ourselves": "themselves", "we're": "they're", "we've": "they've",
                  "we'll": "they'll"}
_LISTENER = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|u|ur|ya)\b", re.I)
_LISTENER_PRONOUNS = {"you": "the user", "ya": "the user", "your": "the user's", "yours": "the user's",
                      "yourself": "themselves", "you're": "the user is", "you've": "the user has",
                      "you'll": "the user will", "you'd": "the user would"}
_MAX_OBJECT_WORDS = 16


def _swap_pronouns(text: str, *, listener: bool = False, speaker: str | None = None) -> str:
    """First person to third ("my dog" -> "their dog"); optionally "you" -> "the user".

    With `speaker`, "me" and "my" name the speaker: in "my sister taught me" a "them" would
    point at the sister.
    """
    def replace(match: re.Match[str]) -> str:
        word = match.group()
        lower = word.lower()
        if lower == "us" and word == "US":  # the country
            return word
        if speaker and lower in {"me", "myself", "my", "mine"}:
            return speaker if lower in {"me", "myself"} else f"{speaker}'s"
        swapped = _SELF_PRONOUNS.get(lower)
        if swapped is None and listener:
            swapped = _LISTENER_PRONOUNS.get(lower)
        if swapped is None:
            return word
        return swapped[0].upper() + swapped[1:] if word[0].isupper() and lower != "i" else swapped
    swapped = re.sub(r"[A-Za-z]+(?:'[a-z]+)?", replace, text)
    for wrong, right in (("was they", "were they"), ("they was", "they were"), ("they am", "they are")):
        swapped = re.sub(rf"\b{wrong}\b", right, swapped)
    return swapped


_DANGLING = re.compile(r"(?:[\s,]+(?:for|to|with|of|and|or|that|which|the|a|an|in|on|at|about|from|by|"
                       r"as|like|when|while|if|but|so|because|my|our|your|their|then|thanks|too|"
                       r"now|though|anyway|lol|haha|btw|right|either))+$", re.I)
_TRAILING_NAME = re.compile(r",\s*[A-Z][a-z]+$")  # "..., James": the person addressed


def _clause_object(rest: str) -> str:
    """The complement of a clause: up to its end, at most a short phrase, no loose words."""
    rest = _CLAUSE_CUT.split(rest, maxsplit=1)[0].strip(" ,")
    words = rest.split()
    if len(words) > _MAX_OBJECT_WORDS:
        head = " ".join(words[:_MAX_OBJECT_WORDS])
        rest = head[: head.rfind(",")] if head.rfind(",") > 20 else head
    rest = _DANGLING.sub("", " " + _TRAILING_NAME.sub("", rest.strip(" ,"))).strip(" ,")
    if rest.count('"') % 2:  # a quotation cut in half loses its stray mark
        rest = rest.replace('"', "")
    return rest


def _has_content(text: str) -> bool:
    return bool(content_terms(text))


_WORD_AHEAD = re.compile(r"\s*([A-Za-z]+(?:'[A-Za-z]+)?)")


def _peel(rest: str) -> tuple[str, str]:
    """The next word of `rest` and what follows it ("" when there is no word)."""
    match = _WORD_AHEAD.match(rest)
    return (match.group(1), rest[match.end():]) if match else ("", rest)


def _finish_fact(parts: Sequence[str], obj: str, *, listener: bool = False,
                 speaker: str | None = None) -> str | None:
    """Join subject, verb and object; None when the object says nothing lasting."""
    obj = _clause_object(obj)
    if not _has_content(obj) or (not listener and _LISTENER.search(obj)):
        return None
    swapped = _swap_pronouns(obj, listener=listener, speaker=speaker)
    return " ".join([*(p for p in parts if p), swapped])


_CONDITIONAL = re.compile(r"^\W*(?:if|unless|whether|hopefully)\b", re.I)


def _dedupe(facts: Sequence[str | None], limit: int) -> list[str]:
    seen: dict[str, str] = {}
    for fact in facts:
        if fact and fact.lower() not in seen:
            seen[fact.lower()] = fact
    return list(seen.values())[:limit]


# --- the assistant's side: suggestions, commitments, self-descriptions -------------------------

_TRY_GERUNDS = {"considered": "considering", "tried": "trying", "thought about": "thinking about",
                "checked out": "checking out", "looked into": "looking into"}
_SUGGESTION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:you|u)\s+(?:should|could|might want to|may want to|ought to|have to|"
                r"gotta|must)\s+(?:definitely\s+|really\s+|totally\s+|also\s+)?(?!be\b|feel\b|"
                r"know\b|keep\b|let\b|have\b)(.+)", re.I | re.S), "suggested the user"),
    (re.compile(r"\b(?:why don't you|why not)\s+(.+)", re.I | re.S), "suggested the user"),
    (re.compile(r"^\W*(?:maybe\s+|just\s+)?try\s+(.+)", re.I | re.S), "suggested the user try"),
    (re.compile(r"\b(?:how|what) about\s+(.+\?)", re.I | re.S), "suggested"),
)
_HAVE_YOU = re.compile(r"\bhave you (?:ever )?(considered|tried|thought about|checked out|looked into)"
                       r"\s+(.+)", re.I | re.S)
_RECOMMEND = re.compile(r"(?:^|\b(?:I|I'd|would|highly|strongly|really|definitely|totally|also|"
                        r"def)\s+)(recommend|suggest)\s+(.+)", re.I | re.S)
_COMMITMENT = re.compile(r"(?:^|(?<=[\s,;:]))(I'll|I will|I'm going to|I am going to|I promise to|"
                         r"I promise I'll|Let me|I can)\s+(.+)", re.S)
_SELF_DESCRIPTION: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:^|(?<=[\s,;:]))(?:I'm|I am)\s+(an?\s+(?!bit\b|little\b|lot\b).+)", re.S), "is"),
    (re.compile(r"^\W*As\s+(an?\s+[^,]+),", re.S), "is"),
    (re.compile(r"(?:^|(?<=[\s,;:]))I\s+work\s+(as|at|in|for)\s+(.+)", re.S), "works"),
    (re.compile(r"(?:^|(?<=[\s,;:]))I\s+speciali[sz]e\s+in\s+(.+)", re.S), "specializes in"),
    (re.compile(r"\b[Mm]y name is\s+(.+)", re.S), "'s name is"),
)
_COMMITMENT_VERBS = {"i promise to": "promised to", "i promise i'll": "promised to",
                     "let me": "offered to", "i can": "offered to"}


def _suggestions(sentence: str, subject: str) -> list[str | None]:
    found: list[str | None] = []
    recommend = _RECOMMEND.search(sentence)
    if recommend:
        verb = "recommended" if recommend.group(1).lower() == "recommend" else "suggested"
        obj = re.sub(r"^(?:that\s+)?(?:you|u)\s+(?:should\s+|could\s+)?", "the user ",
                     recommend.group(2).lstrip(), flags=re.I)
        found.append(_finish_fact([subject, verb], obj, listener=True))
    have_you = _HAVE_YOU.search(sentence)
    if have_you:
        gerund = _TRY_GERUNDS[have_you.group(1).lower()]
        found.append(_finish_fact([subject, "suggested", gerund], have_you.group(2), listener=True))
    for pattern, verb in _SUGGESTION_PATTERNS:
        match = pattern.search(sentence)
        if match and not recommend and not have_you:
            found.append(_finish_fact([subject, verb], match.group(1), listener=True))
            break
    return found


def _statements(sentence: str, subject: str) -> list[str | None]:
    found: list[str | None] = []
    commitment = _COMMITMENT.search(sentence)
    if commitment:
        verb = _COMMITMENT_VERBS.get(commitment.group(1).lower(), "will")
        rest = commitment.group(2)
        if _peel(rest)[0].lower() not in {"let", "see", "think", "know", "be", "do", "just"}:
            found.append(_finish_fact([subject, verb], rest, listener=True))
    for pattern, verb in _SELF_DESCRIPTION:
        match = pattern.search(sentence)
        if match:
            groups = [g for g in match.groups() if g]
            if verb == "works":
                found.append(_finish_fact([subject, "works", groups[0]], groups[1], listener=True))
            elif verb.startswith("'s"):
                found.append(_finish_fact([subject + verb], groups[0], listener=True))
            else:
                found.append(_finish_fact([subject, verb], groups[0], listener=True))
    return found


# What the assistant quotes ("you told me: “I'm a pharmacist”") is the person's, never the assistant's.
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
# Saying what it keeps of the person ("I'll remember that you …", "I noted that you …") is about the
# person, not a promise or a trait of the assistant's.
_ABOUT_MEMORY = re.compile(r"\b(?:remember|recall|noted|note|know|keep in mind|forget|forgotten|corrected)\b", re.I)


def extract_agent_traits(text: str, *, subject: str = "Assistant") -> list[str]:
    """What the assistant recommended, promised or said about itself, in the third person.

    "You should try yoga" -> "Assistant suggested the user try yoga". Quotes of the person and what
    the assistant says it remembers of them are left out: those are the person's facts.
    """
    traits: list[str | None] = []
    for sentence in split_sentences(_QUOTED.sub("", text)):
        if _ABOUT_MEMORY.search(sentence):
            continue
        if not _CONDITIONAL.match(sentence):
            traits.extend(_suggestions(sentence, subject))
            if not is_question(sentence):
                traits.extend(_statements(sentence, subject))
    return _dedupe(traits, limit=8)
