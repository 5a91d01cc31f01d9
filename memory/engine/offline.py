"""The offline engine: what the system does with language when no LLM is configured.

Keywords by frequency over stemmed content words, extractive summaries by closeness to the
centroid of the texts, persona facts and agent traits by first-person patterns, and replies
grounded only in the recalled items (DESIGN.md, "The offline engine"). Pure, deterministic and
fast: every imported turn goes through these functions, so nothing here may load a model.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import NamedTuple

from .types import RecalledItem

# --- vocabulary -------------------------------------------------------------------------------

_FUNCTION_WORDS = """
a about above after again against all almost already also although always am among an and another
any anybody anyone anything anyway anywhere are around as at away back be became because become been
before being below between both but by can cannot could did do does doing done down during each
either else enough even ever every everybody everyone everything everywhere few for from further get
gets getting got gotten had has have having he her here hers herself him himself his how however i
if in into is it its itself just least less let lets made make makes many may maybe me might mine
more most much must my myself neither never no nobody none nor not nothing now of off often on once
one only onto or other others otherwise our ours ourselves out over own per perhaps please quite
rather same say says said see seem seemed seems several shall she should since so some somebody
someone something sometimes somewhat soon still such than that the their theirs them themselves then
there these they thing things this those though through thus till to together too toward towards
under until up upon us very via was we well were what whatever when whenever where whether which
while who whoever whole whom whose why will with within without would yet you your yours yourself
yourselves ya yall cause cuz gonna wanna gotta kinda sorta lemme dunno plus
"""

# Chat filler, small talk and evaluative words: frequent in any conversation, topical in none.
_CHATTER_WORDS = """
hey hi hello yo hiya yeah yes yep yup nope nah wow oh ooh ah aw aww haha hahaha lol omg hmm um uh
yay thanks thank thx cheers bye goodbye congrats congratulations sorry really truly totally
definitely absolutely certainly actually basically literally seriously honestly super pretty great
good nice cool awesome amazing wonderful fantastic incredible terrific lovely sweet glad happy
excited exciting fun stoked thrilled proud inspiring inspired interesting special huge big little
small lot lots bit stuff kind sort way time day today tonight tomorrow yesterday week month year
recently lately guess think thought know knew known feel felt mean meant hope wish want love like
enjoy take took taken go goes going gone went come came look keep kept try tell told talk say hear
heard sound share appreciate agree remember sure right true real new old first last next able
ready busy tired hard tough easy long whole best better bad life moment experience people help
check idea thing awesome beautiful gorgeous cute brave strong glad dear man dude guys folks put
similar favorite favourite two three four five six seven eight nine ten morning afternoon evening night
wait happen spoke give gave set stay find start welcome forget mind
""".split()

_STOPWORDS = frozenset(_FUNCTION_WORDS.split()) | frozenset(_CHATTER_WORDS)

# Words after which a capitalised word is someone being addressed ("Hey Mel!", "Thanks, John").
_VOCATIVE_LEADS = frozenset("hey hi hello yo hiya thanks thank bye goodbye dear congrats "
                            "congratulations cheers".split())
_LOOSE_VOCATIVE_LEADS = frozenset("wow yeah yes oh aw aww haha lol omg yay sorry ok okay great "
                                  "awesome nice cool sure right exactly absolutely totally "
                                  "definitely agreed welcome morning night".split())

# Irregular forms mapped to one stem so "ran"/"running" and "children"/"child" coincide.
_IRREGULAR = {
    "children": "child", "women": "woman", "men": "man", "feet": "foot", "teeth": "tooth",
    "mice": "mouse", "ran": "run", "swam": "swim", "sang": "sing", "wrote": "write",
    "written": "write", "drew": "draw", "drawn": "draw", "bought": "buy", "taught": "teach",
    "won": "win", "met": "meet", "began": "begin", "begun": "begin", "grew": "grow",
    "grown": "grow", "flew": "fly", "drove": "drive", "driven": "drive", "rode": "ride",
    "ridden": "ride", "ate": "eat", "eaten": "eat", "built": "build", "sold": "sell",
    "caught": "catch", "chose": "choose", "chosen": "choose", "threw": "throw", "broke": "break",
    "broken": "break", "fell": "fall", "taken": "take", "gave": "give", "given": "give",
    # plurals of -ie nouns, which the -ies rule would turn into -y
    "movies": "movie", "cookies": "cookie", "selfies": "selfie", "brownies": "brownie",
    "zombies": "zombie", "calories": "calorie", "smoothies": "smoothie", "hoodies": "hoodie",
    "foodies": "foodie", "rookies": "rookie", "goalies": "goalie", "pies": "pie", "ties": "tie",
}
# Words the suffix rules would damage.
_KEEP_AS_IS = frozenset("""
morning evening wedding sibling ceiling during pudding nothing something anything everything news
series species lens bus gas chaos physics mathematics politics economics athletics gymnastics
aerobics chess always perhaps yes this his its thus tennis christmas texas paris bias canvas atlas
alias vegas kansas
""".split())


# --- stemming ---------------------------------------------------------------------------------

def _is_consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in "aeiou":
        return False
    if char == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in [C](VC)^m[V]."""
    pattern = "".join("c" if _is_consonant(stem, i) else "v" for i in range(len(stem)))
    return re.sub(r"(.)\1+", r"\1", pattern).count("vc")


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_cvc(stem: str) -> bool:
    """Consonant-vowel-consonant ending (not w, x, y): "hik" of "hiking" takes its e back.

    A two-letter vowel-consonant stem counts too, so "used" meets "use".
    """
    n = len(stem)
    if n == 2:
        return not _is_consonant(stem, 0) and _is_consonant(stem, 1)
    return (n >= 3 and _is_consonant(stem, n - 3) and not _is_consonant(stem, n - 2)
            and _is_consonant(stem, n - 1) and stem[-1] not in "wxy")


def _strip_plural(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-3] + "y" if len(word) > 4 else word[:-1]
    if word.endswith(("ches", "shes", "xes", "zzes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is", "ias")) or not word.endswith("s"):
        return word
    return word[:-1]


# Endings no English base word has without its final e ("introduc", "inspir", "structur"), so
# the e that -ed/-ing removed goes back and "structured" meets "structure".
_DROPPED_E = re.compile(r"(?:c|v|z|[rd]g)$")
_DROPPED_E_LONG = re.compile(r"(?:[^aeiou](?:ur|ir|ut|in)|com|pos)$")


def _restore_base(base: str) -> str:
    """Porter step 1b clean-up after removing -ed or -ing."""
    if base.endswith(("at", "bl", "iz")):
        return base + "e"
    if len(base) > 2 and base[-1] == base[-2] and base[-1] not in "aeioulsz":
        return base[:-1]
    if base.endswith("ll") and _measure(base[:-1]) > 1:  # British "travelled"
        return base[:-1]
    if _measure(base) == 1 and _ends_cvc(base):
        return base + "e"
    if _DROPPED_E.search(base) or (_DROPPED_E_LONG.search(base) and _measure(base) > 1):
        return base + "e"
    return base


def _strip_verb_suffix(word: str) -> str:
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("eed"):
        return word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            return _restore_base(word[: -len(suffix)])
    return word


@lru_cache(maxsize=16384)
def stem(word: str, *, keep_plural: bool = False) -> str:
    """Light, Porter-like stem: plural and -ed/-ing only, so stems stay readable ("paint")."""
    word = word.lower()
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word in _KEEP_AS_IS or not word.isalpha():
        return word
    if not keep_plural:
        word = _strip_plural(word)
        if word in _KEEP_AS_IS:
            return word
    return _strip_verb_suffix(word)


_STOP_STEMS = frozenset(stem(word) for word in _STOPWORDS)
# Manner adverbs ("slowly", "especially") describe, they are no topic; "family" keeps its -ly.
_ADVERB_ENDINGS = ("ally", "ously", "ively", "fully", "ently", "antly", "lessly", "ably", "ibly",
                   "ingly", "edly", "wly", "kly", "tly", "rly", "dly", "sly")


# --- tokens -----------------------------------------------------------------------------------

# Role labels open a line ("User: ...") or follow a bar ("User: ... | Assistant: ...").
_ROLE_LABEL = re.compile(r"(?im)(?:^|\s\|)\s*(user|assistant|system)\s*:\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*")


class Term(NamedTuple):
    """A normalised content word and whether it was written as a name."""

    stem: str
    proper: bool


def _clean(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text; role labels ("User:") and blank pieces removed."""
    text = _ROLE_LABEL.sub("\n", _clean(text))
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece and piece.strip()]


def _is_vocative(sentence: str, match: re.Match[str], previous: re.Match[str] | None) -> bool:
    """A capitalised word that addresses someone: the speaker's partner is no topic."""
    word = match.group()
    if not (word[0].isupper() and word[1:].islower()):
        return False
    after = sentence[match.end():match.end() + 1]
    closes = after in {"", ",", "!", ".", "?"}
    if previous is None:
        return after in {",", "!"}
    lead = previous.group().lower()
    if lead in _VOCATIVE_LEADS:
        return True
    comma_between = "," in sentence[previous.end():match.start()]
    return closes and (lead in _LOOSE_VOCATIVE_LEADS or (comma_between and after != ","))


def _sentence_terms(sentence: str) -> list[Term]:
    words = list(_WORD.finditer(sentence))
    terms: list[Term] = []
    for index, match in enumerate(words):
        word = match.group()
        if "'" in word:
            if not word.lower().endswith("'s"):
                continue  # contractions (I'm, don't, we've) are all function words
            word = word[:-2]
        lower = word.lower()
        if len(lower) < 2 or lower.isdigit() or lower in _STOPWORDS:
            continue
        if _is_vocative(sentence, match, words[index - 1] if index else None):
            continue
        acronym = word.isupper() and len(word) > 1
        proper = acronym or (word[0].isupper() and index > 0)
        if not proper and (stem(lower) in _STOP_STEMS or lower.endswith(_ADVERB_ENDINGS)):
            continue
        # A capitalised first word may be a name ("James"): keep its final s.
        normalised = lower if proper else stem(lower, keep_plural=word[0].isupper())
        if normalised not in _STOP_STEMS and len(normalised) > 1:
            terms.append(Term(normalised, proper))
    return terms


def content_terms(text: str) -> list[Term]:
    """Every content word of `text` in order, normalised as the keyword sets are."""
    return [term for sentence in split_sentences(text) for term in _sentence_terms(sentence)]


def normalise_words(text: str) -> frozenset[str]:
    """All words of `text` (stopwords too) lowercased and stemmed, for lexicon matching."""
    return frozenset(stem(word.lower()) for word in _WORD.findall(_clean(text)))


def extract_keywords(text: str, *, limit: int = 8) -> frozenset[str]:
    """The keyword set K of a page or segment (MemoryOS Eq. 2, Jaccard part of Fscore).

    Stemmed content words ranked by frequency, names first among equals, then longer words,
    then earlier ones.
    """
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    proper: set[str] = set()
    for position, term in enumerate(content_terms(text)):
        counts[term.stem] += 1
        first_seen.setdefault(term.stem, position)
        if term.proper:
            proper.add(term.stem)
    ranked = sorted(counts, key=lambda word: (-counts[word], word not in proper,
                                              -min(len(word), 8), first_seen[word]))
    return frozenset(ranked[:max(0, limit)])


# --- extractive summary -----------------------------------------------------------------------

def _truncate(text: str, max_chars: int) -> str:
    """Cut at a word boundary and mark the cut, never exceeding `max_chars`."""
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return text[:max_chars]
    cut = text[: max_chars - 1]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-–—") + "…"


def summarize(texts: Sequence[str], *, max_sentences: int = 3, max_chars: int = 400) -> str:
    """Extractive summary: the sentences closest to the centroid of all texts, in their order.

    A sentence scores Σ freq(w) / √|S| over its distinct content words w (freq over all
    texts): the cosine between the sentence and the term-frequency centroid, up to a constant.
    Questions count half: in a dialogue they ask rather than tell.
    """
    sentences = list(dict.fromkeys(s for text in texts for s in split_sentences(text)))
    if not sentences or max_sentences < 1 or max_chars < 1:
        return ""
    term_sets = [{term.stem for term in _sentence_terms(s)} for s in sentences]
    frequency = Counter(word for terms in term_sets for word in terms)
    scores = []
    for index, (sentence, terms) in enumerate(zip(sentences, term_sets, strict=True)):
        score = sum(frequency[w] for w in terms) / len(terms) ** 0.5 if terms else 0.0
        scores.append((score * (0.5 if sentence.endswith("?") else 1.0), index))
    ranked = [index for score, index in sorted(scores, key=lambda p: (-p[0], p[1])) if score > 0]
    chosen = sorted((ranked or [0])[:max_sentences])
    while len(chosen) > 1 and len(" ".join(sentences[i] for i in chosen)) > max_chars:
        chosen.remove(max(chosen, key=ranked.index))  # the weakest goes first
    return _truncate(" ".join(sentences[i] for i in chosen), max_chars)


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


def _is_question(sentence: str) -> bool:
    return sentence.rstrip(" \"')").endswith("?")


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
        if _is_question(sentence) or _CONDITIONAL.match(sentence):
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
            if not _is_question(sentence):
                traits.extend(_statements(sentence, subject))
    return _dedupe(traits, limit=8)


# --- replies grounded in what was recalled ----------------------------------------------------

_GREETING_WORDS = frozenset("hi hello hey hiya yo howdy greetings morning afternoon evening".split())
_THANKS_WORDS = frozenset("thanks thank thx ty cheers".split())
_BYE_WORDS = frozenset("bye goodbye cya farewell goodnight".split())
_RECALL_QUESTION = re.compile(r"\b(?:remember|recall|know)\b.*\b(?:me|my|I)\b|"
                              r"\bwhat do you know\b", re.I)
_ROLE_SPLIT = re.compile(r"(?im)(?:^|\s\|)\s*(user|assistant)\s*:\s*")
# Earlier offline replies restate memory; quoting them would cite a citation.
_OWN_REPLY = re.compile(r"^\s*(?:Here's what I remember|I don't recall anything|You're welcome|Bye|Hi)\b")
_PAGE_KINDS = frozenset({"stm_page", "mtm_page"})
# Retrieval scores this high (cosine) mean the item is on topic even without shared words.
# STM pages are all recalled (their score says nothing), so they need a shared word.
_STRONG_SCORE = 0.8
_CITABLE_BY_SCORE = frozenset({"mtm_page", "kb_fact", "agent_trait"})
_STM_SCORE = 0.5
_MAX_CITED = 3
_MAX_WORDS = 120
_SNIPPET_WORDS = 30


class _Citation(NamedTuple):
    relevance: float
    item: RecalledItem
    role: str | None
    snippet: str


def _addressed(name: str | None) -> str:
    return f", {name}" if name else ""


def _small_talk(query: str, *, user_name: str | None, sona_name: str | None,
                topical: bool) -> str | None:
    """Greetings, thanks and goodbyes that carry no topic get a short friendly answer."""
    words = [word.lower() for word in _WORD.findall(_clean(query))]
    if topical or not words:
        return None
    if words[0] in _GREETING_WORDS or words[:2] in (["good", "morning"], ["good", "afternoon"],
                                                    ["good", "evening"]):
        intro = f" {sona_name} here, good to see you." if sona_name else " Good to see you."
        name = f" {user_name}" if user_name else ""
        return f"Hi{name}!{intro} What's on your mind today?"
    if words[0] in _THANKS_WORDS:
        return f"You're welcome{_addressed(user_name)}! Anything else on your mind?"
    if words[0] in _BYE_WORDS:
        return f"Bye{_addressed(user_name)}! I'll remember what we talked about."
    return None


def _role_parts(text: str) -> list[tuple[str | None, str]]:
    """ "User: ...\\nAssistant: ..." page text split by speaker; unlabelled text has no role."""
    pieces = _ROLE_SPLIT.split(_clean(text))
    parts: list[tuple[str | None, str]] = [(None, pieces[0])] if pieces[0].strip() else []
    parts += [(role.lower(), body) for role, body in zip(pieces[1::2], pieces[2::2], strict=True)]
    return parts


def _best_passage(text: str, query_terms: frozenset[str]) -> tuple[int, str | None, str]:
    """The statement sharing most words with the query (a very short one takes the next along),
    with the number of words shared and whose words they were."""
    best: tuple[int, str | None, str] = (-1, None, "")
    for role, part in _role_parts(text):
        if role == "assistant" and _OWN_REPLY.match(part):
            continue
        sentences = split_sentences(part)
        for index, sentence in enumerate(sentences):
            if _is_question(sentence):
                continue  # a question remembers nothing (and may be the query itself)
            overlap = len(query_terms & {term.stem for term in _sentence_terms(sentence)})
            if overlap > best[0]:
                following = sentences[index + 1] if index + 1 < len(sentences) else "?"
                if len(sentence.split()) < 6 and not _is_question(following):
                    sentence = f"{sentence} {following}"
                best = (overlap, role, sentence)
    return best


def _select(query_terms: frozenset[str], items: Sequence[RecalledItem], *,
            recall_all: bool) -> list[_Citation]:
    """Items that share a word with the query (or are very close to it), most relevant first."""
    citations: dict[str, _Citation] = {}
    for item in items:
        overlap, role, snippet = _best_passage(item.text, query_terms)
        strong = item.score >= _STRONG_SCORE and item.kind in _CITABLE_BY_SCORE
        if not (overlap > 0 or strong or recall_all):
            continue
        key = " ".join(snippet.lower().split())
        score = _STM_SCORE if item.kind == "stm_page" else min(1.0, max(0.0, item.score))
        relevance = overlap / max(1, len(query_terms)) + 0.5 * score
        if snippet and (key not in citations or citations[key].relevance < relevance):
            citations[key] = _Citation(relevance, item, role, snippet)
    ranked = sorted(citations.values(), key=lambda c: (-c.relevance, c.item.ref))
    return ranked[:_MAX_CITED]


def _ago(when: datetime, now: datetime) -> str:
    days = (now.date() - when.date()).days
    if days < 0:
        return ""
    if days <= 1:
        return "today" if days == 0 else "yesterday"
    for limit, size, unit in ((14, 1, "day"), (60, 7, "week"), (730, 30, "month"), (10**9, 365, "year")):
        if days < limit:
            count = days // size
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return ""


def _when(timestamp: datetime | None, now: datetime | None) -> str:
    if timestamp is None:
        return "Earlier"
    dated = f"On {timestamp.day} {timestamp:%B} {timestamp.year}"
    relative = _ago(timestamp, now) if now else ""
    return f"{dated} ({relative})" if relative else dated


def _words_cut(text: str, limit: int) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]).rstrip(",;:") + "…"


def _cite(citation: _Citation, now: datetime | None) -> str:
    """One remembered thing, said with its date and whose words they were."""
    when = _when(citation.item.timestamp, now)
    snippet = _words_cut(citation.snippet, _SNIPPET_WORDS)
    kind = citation.item.kind
    if kind in _PAGE_KINDS or citation.role:
        speaker = {"user": "you told me", "assistant": "I said"}.get(citation.role or "",
                                                                     "we talked about this")
        return f"{when} {speaker}: “{snippet}”"
    sentence = snippet if snippet[-1] in ".!?…" else snippet + "."
    if kind in {"profile", "user_trait", "agent_profile"}:
        return f"From what I know of you: {sentence}"
    return f"{when} I noted: {sentence}"


def _dont_know(user_name: str | None) -> str:
    return (f"I don't recall anything about that yet{_addressed(user_name)}. "
            "Tell me about it and I'll remember what you say.")


def compose_reply(query: str, items: Sequence[RecalledItem], *, user_name: str | None = None,
                  sona_name: str | None = None, now: datetime | None = None) -> str:
    """The offline answer: what was recalled about the query, with dates, and nothing else.

    At most three memories and about 120 words; an honest "I don't recall" when nothing
    recalled shares a word with the query.
    """
    names = {word.lower() for name in (user_name, sona_name) if name for word in name.split()}
    names |= {stem(name) for name in names}
    query_terms = frozenset(term.stem for term in content_terms(query)) - names
    small_talk = _small_talk(query, user_name=user_name, sona_name=sona_name,
                             topical=bool(query_terms))
    if small_talk:
        return small_talk
    recall_all = not query_terms and bool(_RECALL_QUESTION.search(query))
    citations = _select(query_terms, items, recall_all=recall_all)
    if not citations:
        return _dont_know(user_name)
    reply = f"Here's what I remember{_addressed(user_name)}:"
    for index, citation in enumerate(citations):
        extended = f"{reply} {_cite(citation, now)}"
        if index and len(extended.split()) > _MAX_WORDS:
            break  # fewer memories rather than a cut one; only the first may be cut
        reply = extended
    return _words_cut(reply, _MAX_WORDS)
