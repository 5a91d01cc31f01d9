"""The offline engine: what the system does with language when no LLM is configured.

Keywords by frequency over stemmed content words, extractive summaries by closeness to the
centroid of the texts, persona facts and agent traits by first-person patterns, and replies
grounded only in the recalled items (DESIGN.md, "The offline engine"). Pure, deterministic and
fast: every imported turn goes through these functions, so nothing here may load a model.

Tokens and stems live in `text`, persona patterns in `persona_patterns`; the public names of both
are re-exported here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from .persona_patterns import extract_agent_traits, extract_user_facts
from .text import (
    _WORD,
    Term,
    _clean,
    _is_question,
    _sentence_terms,
    content_terms,
    normalise_words,
    split_sentences,
    stem,
)
from .types import RecalledItem

__all__ = [
    "Term",
    "compose_reply",
    "content_terms",
    "extract_agent_traits",
    "extract_keywords",
    "extract_user_facts",
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
