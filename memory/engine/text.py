"""Words for the offline engine: tokens, a light stemmer, sentences and content terms.

The shared word lists (function words, chat filler, irregular forms) and the normalisation that
keyword sets, persona patterns, grounded replies and trait lexicons all agree on. Pure and
deterministic; nothing here may load a model.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

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
_FUNCTION_WORD_SET = frozenset(_FUNCTION_WORDS.split())


def sentence_inside(sentence: str) -> str:
    """A sentence to be quoted inside another: its first word lower-cased when it is a function
    word ("Here are my notes" → "here are my notes"); names and "I" keep their capital."""
    head, space, rest = sentence.partition(" ")
    if head != "I" and head.lower() in _FUNCTION_WORD_SET:
        return head.lower() + space + rest
    return sentence

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
WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*")


class Term(NamedTuple):
    """A normalised content word and whether it was written as a name."""

    stem: str
    proper: bool


def clean_text(text: str) -> str:
    return text.replace("’", "'").replace("‘", "'")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text; role labels ("User:") and blank pieces removed."""
    text = _ROLE_LABEL.sub("\n", clean_text(text))
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece and piece.strip()]


def is_question(sentence: str) -> bool:
    return sentence.rstrip(" \"')").endswith("?")


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


def sentence_terms(sentence: str) -> list[Term]:
    words = list(WORD.finditer(sentence))
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
    return [term for sentence in split_sentences(text) for term in sentence_terms(sentence)]


def normalise_words(text: str) -> frozenset[str]:
    """All words of `text` (stopwords too) lowercased and stemmed, for lexicon matching."""
    return frozenset(stem(word.lower()) for word in WORD.findall(clean_text(text)))
