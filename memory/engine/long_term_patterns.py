"""Long-term memory patterns: facts from the user's first-person statements, traits from the assistant's.

Part of the offline engine (DESIGN.md, "The offline engine"): "I love hiking" becomes "User loves
hiking", "You should try yoga" becomes "Assistant suggested the user try yoga". Pure and
deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .text import content_terms, is_question, split_sentences

# --- first-person statements ------------------------------------------------------------------

# Base forms that, after "I", state something lasting about the speaker.
_FACT_VERBS = frozenset("""
love like enjoy adore hate dislike prefer have own work live play study teach run collect volunteer
practice practise write cook bake paint draw sing dance swim hike ride drive watch listen want need
plan attend take use visit support believe care miss struggle speak follow identify mentor coach
train meditate garden knit sew travel camp fish surf ski climb jog blog build make do go keep
""".split())
_PAST_OF = {"have": "had", "love": "loved", "like": "liked", "enjoy": "enjoyed", "go": "went",
            "make": "made", "take": "took", "want": "wanted", "need": "needed", "try": "tried"}
_PAST_VERBS = frozenset("""
went got bought made took saw met ran won lost began wrote drew sang swam rode drove ate had did
found built gave left sold read taught became came grew flew spent brought chose held threw fell
hurt broke tore
""".split())
# -ed forms that report thinking or talking, not doing.
_NON_FACT_PAST = frozenset("""
guessed wondered figured supposed agreed appreciated noticed realized realised imagined assumed
wished hoped expected remembered mentioned said asked answered replied thanked
""".split())
_ADVERBS = frozenset("""
just really also always usually often sometimes recently finally actually totally absolutely
definitely still even already once mostly truly personally currently now literally kinda so
""".split())
_FILLER_ADVERBS = frozenset("really actually totally absolutely definitely truly literally "
                            "personally kinda so".split())
_RELATIONS = frozenset("""
wife husband partner boyfriend girlfriend fiance fiancee kids kid children child son sons daughter
daughters mom mum mother dad father parents brother brothers sister sisters siblings family grandma
grandmother grandpa grandfather aunt uncle cousin dog dogs cat cats pet pets puppy kitten friend
friends boss team job name goal dream plan hobby favorite favourite
""".split())
_CLAUSE_LEADS = frozenset("""
and but so because cause since then now also recently yesterday today tonight lately finally
actually honestly well oh yeah yes plus though anyway eventually earlier later first once ago week
weekend month year night morning afternoon evening summer winter spring fall monday tuesday
wednesday thursday friday saturday sunday
""".split())
_BE_PREDICATES = ("going to ", "planning to ", "planning on ", "thinking about ", "thinking of ",
                  "hoping to ", "trying to ", "about to ", "keen on ", "into ", "interested in ",
                  "passionate about ", "obsessed with ", "allergic to ", "married", "engaged",
                  "single", "divorced", "pregnant", "vegetarian", "vegan", "from ",
                  "originally from ", "a fan of ", "part of ", "learning ", "studying ",
                  "working ", "retired")
_NON_FACT_ING = frozenset("feeling doing going thinking getting looking wondering trying hoping "
                          "saying telling kidding joking".split())

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


def _third_person(verb: str) -> str:
    lower = verb.lower()
    irregular = {"have": "has", "do": "does", "go": "goes"}
    if lower in irregular:
        return irregular[lower]
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def _clause_starts(sentence: str, pattern: re.Pattern[str]) -> list[re.Match[str]]:
    """Matches of `pattern` that open a clause (not "the book that I read")."""
    starts = []
    for match in pattern.finditer(sentence):
        before = sentence[: match.start()].rstrip()
        previous = before.split()[-1].lower().strip("\"'") if before.split() else ""
        if not before or before[-1] in ",;:-–—(\"" or previous in _CLAUSE_LEADS:
            starts.append(match)
    return starts


_WORD_AHEAD = re.compile(r"\s*([A-Za-z]+(?:'[A-Za-z]+)?)")


def _peel(rest: str) -> tuple[str, str]:
    """The next word of `rest` and what follows it ("" when there is no word)."""
    match = _WORD_AHEAD.match(rest)
    return (match.group(1), rest[match.end():]) if match else ("", rest)


def _peel_adverbs(rest: str) -> tuple[list[str], str]:
    """Leading adverbs split off; fillers ("really") are dropped, others ("recently") kept."""
    kept: list[str] = []
    word, after = _peel(rest)
    while word.lower() in _ADVERBS:
        if word.lower() not in _FILLER_ADVERBS:
            kept.append(word.lower())
        rest = after
        word, after = _peel(rest)
    return kept, rest


def _finish_fact(parts: Sequence[str], obj: str, *, listener: bool = False,
                 speaker: str | None = None) -> str | None:
    """Join subject, verb and object; None when the object says nothing lasting."""
    obj = _clause_object(obj)
    if not _has_content(obj) or (not listener and _LISTENER.search(obj)):
        return None
    swapped = _swap_pronouns(obj, listener=listener, speaker=speaker)
    return " ".join([*(p for p in parts if p), swapped])


def _be_fact(subject: str, copula: str, rest: str) -> str | None:
    """ "I'm a nurse", "I'm keen on X", "I'm putting together X", "I was born in X"."""
    adverbs, rest = _peel_adverbs(rest)
    word = _peel(rest)[0]
    lower = rest.strip().lower()
    article = re.match(r"an?\s+(\w+)", lower)
    lasting = (lower.startswith((*_BE_PREDICATES, "born "))
               or bool(article and article.group(1) not in {"bit", "little", "lot"})
               or (word.lower().endswith("ing") and len(word) > 4
                   and word.lower() not in _NON_FACT_ING))
    return _finish_fact([subject, copula, *adverbs], rest) if lasting else None


def _verb_phrase(rest: str) -> tuple[list[str], str] | None:
    """The verb after "I" in the third person ("love" -> "loves"), with the remainder."""
    adverbs, rest = _peel_adverbs(rest)
    word, after = _peel(rest)
    lower = word.lower()
    if lower in {"don't", "didn't", "never"}:
        verb, remainder = _peel(after)
        if verb.lower() in _FACT_VERBS:
            negated = {"don't": "doesn't", "didn't": "didn't"}.get(lower)
            phrase = f"{negated} {verb.lower()}" if negated else f"never {_third_person(verb)}"
            return [*adverbs, phrase], remainder
        return None
    if lower in {"do", "did"}:  # emphatic: "I do have a dog" says "I have a dog"
        verb, remainder = _peel(after)
        if verb.lower() in _FACT_VERBS:
            base = verb.lower()
            tense = _third_person(base) if lower == "do" else _PAST_OF.get(base, f"did {base}")
            return [*adverbs, tense], remainder
    if lower in _FACT_VERBS:
        return [*adverbs, _third_person(lower)], after
    regular_past = (lower.endswith("ed") and len(lower) > 4 and not lower.endswith("eed")
                    and lower not in _NON_FACT_PAST)
    if lower in _PAST_VERBS or regular_past:
        return [*adverbs, lower], after
    return None


def _perfect_fact(rest: str, subject: str) -> str | None:
    """After "I've" / "I have": been X, got X, a participle, or plain possession."""
    word, remainder = _peel(rest)
    if word.lower() == "been":
        if remainder.lstrip().lower().startswith("to "):  # "I've been to Paris"
            return _finish_fact([subject, "has been to"], remainder.lstrip()[3:])
        return _be_fact(subject, "has been", remainder)
    if word.lower() == "got":
        return _finish_fact([subject, "has"], remainder)
    phrase = _verb_phrase(rest)
    if phrase and phrase[0][-1] in _PAST_VERBS | {w for w in phrase[0] if w.endswith("ed")}:
        return _finish_fact([subject, "has", *phrase[0]], phrase[1])
    return _finish_fact([subject, "has"], rest)


# Spelled-out forms read like their contractions: "I am" as "I'm".
_EXPANDED = {"am": "I'm", "have": "I've", "would": "I'd", "will": "I'll"}


def _i_fact(pronoun: str, rest: str, subject: str) -> str | None:
    """A clause opened by I / I'm / I've / I'd / I'll."""
    head, after = _peel(rest)
    if pronoun == "I" and head.lower() in _EXPANDED:
        pronoun, rest = _EXPANDED[head.lower()], after
    if pronoun == "I'm":
        return _be_fact(subject, "is", rest)
    if pronoun == "I" and head.lower() == "was":
        return _be_fact(subject, "was", after)
    if pronoun == "I've":
        return _perfect_fact(rest, subject)
    if pronoun == "I'd":
        wish = re.match(r"\s*(love|like)\s+to\s+(.*)", rest, re.S)
        return _finish_fact([subject, "would", wish.group(1), "to"], wish.group(2)) if wish else None
    if pronoun == "I'll":
        skip = _peel(rest)[0].lower() in {"let", "see", "think"}
        return None if skip else _finish_fact([subject, "will"], rest)
    phrase = _verb_phrase(rest)
    return _finish_fact([subject, *phrase[0]], phrase[1]) if phrase else None


def _my_fact(rest: str, subject: str) -> str | None:
    """ "My kids love X", "my name is X", "my favorite book is X", "my wife and I went X"."""
    together = re.match(r"\s*((?:[A-Za-z']+\s+){0,2}?[A-Za-z']+)\s+and\s+I\s+(.*)", rest, re.S)
    if together:
        phrase = _verb_phrase(" " + together.group(2))
        verb = phrase[0] if phrase else []
        if phrase and verb and not verb[-1].endswith("s"):
            return _finish_fact([subject, "and their", together.group(1), *verb], phrase[1])
        return None
    words = [w.lower().strip(",'") for w in rest.split()[:4]]
    if not words:
        return None
    modifiers = {"favorite", "favourite", "best", "little", "older", "younger", "new", "old",
                 "oldest", "youngest", "eldest", "two", "three", "big", "baby", "whole"}
    noun = next((w for w in words if w not in modifiers), "")
    has_copula = any(w in {"is", "are", "was", "were", "'s"} for w in words[1:])
    if noun not in _RELATIONS and not has_copula:
        return None
    return _finish_fact([f"{subject}'s"], rest, speaker=subject)


_WE_PAST = frozenset("went took saw met ran won built made bought drove flew rode swam".split())
_SELF_OPENER = re.compile(r"(?<![\w'])(I'm|I've|I'd|I'll|I|[Mm]y|[Ww]e)(?![\w'])")
_CONDITIONAL = re.compile(r"^\W*(?:if|unless|whether|hopefully)\b", re.I)
_COLLOQUIAL = ((re.compile(r"\bgonna\b"), "going to"), (re.compile(r"\bwanna\b"), "want to"))
# "my wife and I went": the "I" belongs to a "my ..." subject already handled.
_SHARED_SUBJECT = re.compile(r"\b[Mm]y\s+(?:[A-Za-z']+\s+){1,3}and\s+$")


def _we_fact(rest: str, subject: str) -> str | None:
    """ "We went camping": shared events are facts about the speaker too."""
    word, after = _peel(rest)
    lower = word.lower()
    if lower in _WE_PAST or (lower.endswith("ed") and len(lower) > 4 and lower not in _NON_FACT_PAST):
        return _finish_fact([subject, "and others", lower], after)
    return None


def _dedupe(facts: Sequence[str | None], limit: int) -> list[str]:
    seen: dict[str, str] = {}
    for fact in facts:
        if fact and fact.lower() not in seen:
            seen[fact.lower()] = fact
    return list(seen.values())[:limit]


def extract_user_facts(text: str, *, subject: str = "User") -> list[str]:
    """Short third-person facts from the user's first-person statements; questions skipped.

    "I love hiking with my dog Max" -> "User loves hiking with their dog Max".
    """
    facts: list[str | None] = []
    for sentence in split_sentences(text):
        if is_question(sentence) or _CONDITIONAL.match(sentence):
            continue
        for pattern, replacement in _COLLOQUIAL:
            sentence = pattern.sub(replacement, sentence)
        for match in _clause_starts(sentence, _SELF_OPENER):
            pronoun, rest = match.group(1), sentence[match.end():]
            if pronoun == "I" and _SHARED_SUBJECT.search(sentence[: match.start()]):
                continue
            if pronoun.lower() == "my":
                facts.append(_my_fact(rest, subject))
            elif pronoun.lower() == "we":
                facts.append(_we_fact(rest, subject))
            else:
                facts.append(_i_fact(pronoun, rest, subject))
    return _dedupe(facts, limit=8)


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


def extract_agent_traits(text: str, *, subject: str = "Assistant") -> list[str]:
    """What the assistant recommended, promised or said about itself, in the third person.

    "You should try yoga" -> "Assistant suggested the user try yoga".
    """
    traits: list[str | None] = []
    for sentence in split_sentences(text):
        if not _CONDITIONAL.match(sentence):
            traits.extend(_suggestions(sentence, subject))
            if not is_question(sentence):
                traits.extend(_statements(sentence, subject))
    return _dedupe(traits, limit=8)
