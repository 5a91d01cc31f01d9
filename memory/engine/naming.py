"""Names for mid-term segments as people read them: the segment's most distinctive keywords, written
as its pages write them.

A segment's stored keywords are stems (what Fscore's Jaccard term compares; recall keeps using them
unchanged). Shown as they are, a list of them reads badly: sorted alphabetically its first three
say little ("birthday, boa, book" for a move to Porto), and a stem cut out of a word the keyword
tokenizer splits ("sa", "ne" from "Saône") is no word at all. Here each stem is matched to the whole
words of the segment's own text: a stem no whole word of the text has is a fragment and is left out;
the others are ranked by tf·idf (how often the segment's pages say it, against how many of the
user's segments have it) and shown in the form the pages use most.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memory.engine.text import stem

# Whole words in any script: "Saône" is one word here (the keyword tokenizer sees "Sa" and "ne").
WHOLE_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
SPEAKER = re.compile(r"(?m)(?:^|(?<=\s))[A-Z][\w'-]{0,30}:\s")


@dataclass(frozen=True)
class SegmentName:
    name: str  # its most distinctive words, "" when none of its keywords is a word of its text
    keywords: tuple[str, ...]  # every keyword that is a word, most distinctive first, as written


def _forms(word: str) -> set[str]:
    lower = word.lower()
    return {lower, stem(lower), stem(lower, keep_plural=True)}


def _surface_counts(texts: Iterable[str], keywords: frozenset[str]) -> dict[str, Counter[str]]:
    """For each keyword, the whole words of `texts` that normalise to it, counted."""
    found: dict[str, Counter[str]] = {}
    for text in texts:
        for match in WHOLE_WORD.finditer(SPEAKER.sub(" ", text)):
            word = match.group().replace("’", "'")
            if word.lower().endswith("'s"):
                word = word[:-2]
            for form in _forms(word) & keywords:
                found.setdefault(form, Counter())[word] += 1
    return found


def _written(forms: Counter[str]) -> str:
    """The form a keyword is shown in: lower case unless the text always capitalises it (a name)."""
    lower = Counter()
    for word, count in forms.items():
        lower[word.lower()] += count
    word = lower.most_common(1)[0][0]
    capitalised = sum(n for w, n in forms.items() if w.lower() == word and w[:1].isupper())
    return next(w for w, _ in forms.most_common() if w.lower() == word) if capitalised == lower[word] else word


def name_segments(segments: Mapping[str, tuple[frozenset[str], Sequence[str]]], *,
                  document_frequency: Mapping[str, int], total: int, words: int = 3) -> dict[str, SegmentName]:
    """Each segment's name and shown keywords, from (its keyword stems, its pages' texts).

    `document_frequency[k]` is how many of the user's `total` segments have keyword k.
    """
    named = {}
    for sid, (keywords, texts) in segments.items():
        counts = _surface_counts(texts, keywords)
        scored = []
        for keyword, forms in counts.items():
            idf = math.log((1 + total) / (1 + document_frequency.get(keyword, 1))) + 1.0
            scored.append((sum(forms.values()) * idf, _written(forms)))
        scored.sort(key=lambda item: (-item[0], item[1].lower()))
        shown = tuple(dict.fromkeys(word for _, word in scored))
        named[sid] = SegmentName(name=", ".join(shown[:words]), keywords=shown)
    return named
