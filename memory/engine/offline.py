"""The offline engine: what the system does with language when no LLM is configured.

Keywords by frequency over stemmed content words, extractive summaries by closeness to the
centroid of the texts, agent traits by the assistant's patterns, and replies grounded only in the
recalled items (DESIGN.md, "The offline engine"). Pure, deterministic and fast: every imported
turn goes through these functions, so nothing here may load a model. (The person's facts are read
by the language pipeline, memory/engine/reading/.)

Tokens and stems live in `text`, the assistant's patterns in `agent_traits`, replies in `replies`;
their public names are re-exported here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .agent_traits import extract_agent_traits
from .replies import compose_reply
from .text import Term, content_terms, normalise_words, sentence_terms, split_sentences, stem

__all__ = [
    "Term",
    "compose_reply",
    "content_terms",
    "extract_agent_traits",
    "extract_keywords",
    "normalise_words",
    "split_sentences",
    "stem",
    "summarize",
]


# --- keywords ---------------------------------------------------------------------------------

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


def summarize(texts: Sequence[str], *, max_sentences: int = 3, max_chars: int = 400,
              context: Sequence[str] = ()) -> str:
    """Extractive summary: the sentences closest to the centroid of all texts, in their order.

    A sentence scores Σ freq(w) / √|S| over its distinct content words w (freq over all
    texts): the cosine between the sentence and the term-frequency centroid, up to a constant.
    Questions count half: in a dialogue they ask rather than tell. Each content word of `context`
    (a prompt the summary answers to) counts as much as the texts' most frequent word, so that
    sentences about the prompt come first; the context's own sentences are never chosen.
    """
    sentences = list(dict.fromkeys(s for text in texts for s in split_sentences(text)))
    if not sentences or max_sentences < 1 or max_chars < 1:
        return ""
    term_sets = [{term.stem for term in sentence_terms(s)} for s in sentences]
    frequency = Counter(word for terms in term_sets for word in terms)
    focus = {term.stem for text in context for s in split_sentences(text) for term in sentence_terms(s)}
    top = max(frequency.values(), default=1)
    frequency.update({word: top for word in focus})
    scores = []
    for index, (sentence, terms) in enumerate(zip(sentences, term_sets, strict=True)):
        score = sum(frequency[w] for w in terms) / len(terms) ** 0.5 if terms else 0.0
        scores.append((score * (0.5 if sentence.endswith("?") else 1.0), index))
    ranked = [index for score, index in sorted(scores, key=lambda p: (-p[0], p[1])) if score > 0]
    chosen = sorted((ranked or [0])[:max_sentences])
    while len(chosen) > 1 and len(" ".join(sentences[i] for i in chosen)) > max_chars:
        chosen.remove(max(chosen, key=ranked.index))  # the weakest goes first
    return _truncate(" ".join(sentences[i] for i in chosen), max_chars)
