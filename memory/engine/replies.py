"""The offline engine's replies: questions answered from the best-matching recalled evidence,
statements acknowledged with what the turn stores of them, and nothing else.

A question is answered with the sentence, among the recalled items, that matches it best by
meaning (the retrieval's cosine) and by the words it shares, said with when it was said and what
its "yesterday" meant. A statement is acknowledged in the user's words, turned to the second
person, and may be linked to a related memory. "I don't recall" is only for a question that no
memory supports. The assistant's own persona is never presented as a fact about the user.
Pure and deterministic: the caller passes `now`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from .fact_answers import KnownFact, answer_from_facts
from .supersession import asks_about_the_past, says_superseded, successor_in, superseded_text
from .text import WORD, clean_text, content_terms, is_question, sentence_inside, split_sentences, stem
from .types import RecalledItem
from .when import day_text, relative_dates
from .wording import to_person

# Evidence: things said (utterances, pages) and what was noted from them (facts, agent traits).
# The profile answers only questions about the person themself; the persona (agent_profile) only
# questions about the assistant; trait scores are never quoted.
_SAID_KINDS = frozenset({"turn", "stm_page", "mtm_page", "memoria_page"})
_NOTED_KINDS = frozenset({"kb_fact", "agent_trait", "memoria_note"})
# Words that name what is asked rather than what it is about: "What is my dog's name?" is
# answered by "called Biscuit", which shares no word with it but "dog" in meaning.
_FRAME_WORDS = frozenset(stem(w) for w in """name called kind type sort colour color age old many much long often
    time date place number job favourite favorite""".split())
_FRAME_WEIGHT = 0.25
# Relevance = cosine + 0.6 × the share of the message's words a passage holds + up to 0.2 for
# the policy's own rank (the hybrid policy's fuses BM25, feedback and neighbours, which the
# cosine alone misses). Chosen on LoCoMo with `manage.py bench answer` (BENCHMARKS.md).
_LEXICAL_WEIGHT = 0.6
_RANK_BONUS = 0.2
_RANKED_KINDS = ("turn", "mtm_page", "memoria_page")
# Cosine (MiniLM) above which an item is on topic without a shared word: the dog question and
# its golden retriever answer score 0.55; unrelated pairs of the same person score under 0.25.
_SEMANTIC_FLOOR = 0.35
_MIN_TERMS = 2
# A sentence of one word that says something is on topic by meaning alone where the meaning is
# plain: "I'm divorced" to "What's my marital status?" scores 0.55.
_CLEAR_FLOOR = 0.5
_ALSO_RATIO = 0.8  # further memories are cited only when nearly as relevant as the best
_MAX_CITED = 3
_STALE_WEIGHT = 0.5  # a sentence stating a superseded memory's value, for a question about now
_MAX_WORDS = 120
_SNIPPET_WORDS = 40
_ROLE_SPLIT = re.compile(r"(?im)(?:^|\s\|)\s*(user|assistant)\s*:\s*")
# A label that names a time or a topic ("April: Kyoto first", "Update: …") is no speaker.
_NOT_SPEAKERS = ("January|February|March|April|May|June|July|August|September|October|November|December|Monday|"
                 "Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Today|Tonight|Tomorrow|Yesterday|Update|News|"
                 "Note|Edit|PS|Plans?|Reminder|Summary|Also|Answer|Question|Morning|Evening|Weekend|Spring|Summer|"
                 "Autumn|Fall|Winter")
_SPEAKER = re.compile(r"(?:(?<=^)|(?<=\s))(?!(?:" + _NOT_SPEAKERS + r"):)([A-Z][\w'-]{0,30}):\s")
# Earlier offline replies restate memory; quoting them would cite a citation.
_OWN_REPLY = re.compile(r"^\s*(?:(?:Here's what I remember|I don't recall anything|Got it|Okay|You're welcome|Bye"
                        r"|Hi|I have kept|Before that, you|You live in|Corrected:|Noted:)\b|I'm [^,.]{1,40}, )"
                        r"|.*\(you told me on ")  # an answer from facts says when it was told
# A page's attached files follow "Attached:" (memory/models.py): what the file says, no speaker's.
_ATTACHED = "attached"
_ASKS_FILE = re.compile(r"\b(?:file|files|document|doc|attachment|attached|pdf|list|notes|sheet)\b|\.\w{2,4}\b",
                        re.IGNORECASE)
_FILE_BONUS = 0.5
# A question without its question mark, as people type them: "what is my dog's name", "tell me
# about…"; "When I was a kid…" is a statement.
_ASKS_START = re.compile(
    r"^\s*(?:(?:who|what|when|where|which|why|how)(?:'s|s)?\s+(?:is|are|was|were|do|does|did|can|could|will|would|"
    r"should|have|has|had|old|many|much|long|often|about|kind|time)\b|what's\b"
    r"|(?:please\s+)?(?:tell me|remind me|do you (?:remember|know|recall))\b)", re.IGNORECASE)
_ABOUT_ME = re.compile(r"\b(?:my (?:full )?name|who am i|how old am i|my age|when was i born|my birth ?(?:year|day)"
                       r"|my gender)\b", re.IGNORECASE)
_ABOUT_YOU = re.compile(r"\b(?:who are you|what are you|your name|about yourself|who am i talking to)\b",
                        re.IGNORECASE)
_RECALL_ALL = re.compile(r"\b(?:remember|recall|know)\b.*\b(?:me|my|I)\b|\bwhat do you know\b", re.IGNORECASE)
_GREETINGS = frozenset("hi hello hey hiya yo howdy greetings morning afternoon evening".split())
_THANKS = frozenset("thanks thank thx ty cheers".split())
_BYES = frozenset("bye goodbye cya farewell goodnight".split())
_FILLERS = frozenset("lol haha ok okay oh ah well yeah yes cool great nice right alright aw".split())
_TO_YOU = {"is": "you are", "was": "you were", "has": "you have", "does": "you do", "doesn't": "you don't",
           "isn't": "you aren't", "wasn't": "you weren't", "hasn't": "you haven't"}
_TO_ME = {"is": "I am", "was": "I was", "has": "I have", "does": "I do", "doesn't": "I don't"}
_NOTED_SUBJECT = [(re.compile(p), r) for p, r in (
    (r"^User's\b", "your"), (r"^User (is|was|has|does|doesn't|isn't|wasn't|hasn't)\b", _TO_YOU),
    (r"^Assistant (is|was|has|does|doesn't)\b", _TO_ME), (r"^User\b", "you"), (r"^Assistant\b", "I"),
    (r"\bUser's\b", "your"), (r"\bUser\b", "you"), (r"\bthe user's\b", "your"), (r"\bthe user\b", "you"),
    (r"\btheir\b", "your"))]


@dataclass(frozen=True)
class Evidence:
    """One sentence of a recalled item, with how well it answers the message."""

    relevance: float
    semantic: float
    matched: int  # query words it shares (frame words aside)
    item: RecalledItem
    speaker: str  # "user", "assistant", or the name of whoever said it
    sentence: str
    order: int  # the item's position among the recalled items: ties go to the retrieval's order


def _addressed(name: str | None) -> str:
    return f", {name}" if name else ""


def _words(text: str) -> list[str]:
    return [word.lower() for word in WORD.findall(clean_text(text))]


def small_talk(message: str, *, user_name: str | None, sona_name: str | None, topical: bool) -> str | None:
    """Greetings, thanks and goodbyes that carry no topic get a short friendly answer."""
    words = _words(message)
    while words[1:] and words[0] in _FILLERS:  # "lol ok, thanks!"
        words = words[1:]
    if not words or topical:
        return None
    if words[0] in _GREETINGS or words[:2] in (["good", "morning"], ["good", "afternoon"], ["good", "evening"]):
        intro = f" {sona_name} here, good to see you." if sona_name else " Good to see you."
        return f"Hi{' ' + user_name if user_name else ''}!{intro} What's on your mind today?"
    if words[0] in _THANKS:
        return f"You're welcome{_addressed(user_name)}! Anything else on your mind?"
    if words[0] in _BYES:
        return f"Bye{_addressed(user_name)}! Talk soon."
    return None


def asks(message: str) -> bool:
    """A question or a request to recall ("Tell me about…", "Remind me…"), not a statement."""
    sentences = split_sentences(message) or [message]
    return any(is_question(s) for s in sentences) or bool(_ASKS_START.match(sentences[-1]))


# --- evidence ---------------------------------------------------------------------------------

def _said_parts(item: RecalledItem) -> list[tuple[str, str]]:
    """(speaker, words) of an item: "User: … | Assistant: …" pages, "Caroline: …" utterances."""
    text = clean_text(item.text)
    if item.kind == "turn":  # "<speaker>: <words>", the speaker possibly of several words
        speaker, _, words = text.partition(": ")
        return [(speaker, words)] if words else [("", text)]
    text, _, attached = text.partition(" | Attached: ")
    pieces = _ROLE_SPLIT.split(text)
    roles = [("", pieces[0])] + [(role.lower(), body) for role, body in zip(pieces[1::2], pieces[2::2], strict=True)]
    parts: list[tuple[str, str]] = []
    for role, body in roles:
        if not body.strip() or (role == "assistant" and _OWN_REPLY.match(body)):
            continue
        labelled = _SPEAKER.split(body)
        if labelled[0].strip():
            parts.append((role or "user", labelled[0]))
        parts += list(zip(labelled[1::2], labelled[2::2], strict=True))
    if attached.strip():
        parts.append((_ATTACHED, re.sub(r"^\[[^\]]{1,120}\]\s*", "", attached.strip())))
    return parts


def _speaker_of(label: str, *, user_names: frozenset[str], sona_name: str | None) -> str:
    lowered = label.lower()
    if lowered == _ATTACHED:
        return _ATTACHED
    if lowered in ("user", *user_names):
        return "user"
    if lowered == "assistant" or (sona_name and lowered == sona_name.lower()):
        return "assistant"
    return label


def _weighted(terms: frozenset[str]) -> float:
    return sum(_FRAME_WEIGHT if term in _FRAME_WORDS else 1.0 for term in terms)


def _semantic(item: RecalledItem) -> float:
    """The retrieval's cosine between the message and the item, whatever the item's kind."""
    if item.kind == "turn":
        return float(item.breakdown.get("cosine", 0.0))
    if item.kind == "stm_page":
        return float(item.breakdown.get("similarity", 0.0))
    if item.kind in ("memoria_page", "memoria_note"):  # Memoria's score is a weighted sum: its vector term
        return float(item.breakdown.get("vector", 0.0))
    if item.kind in ("mtm_page", *_NOTED_KINDS):
        return float(item.score)
    if item.kind == "profile":
        return 1.0  # only ever offered for a question about the person themself
    return 0.0


def _passages(text: str) -> list[str]:
    """Each statement of a text with the sentence after it: an answer often follows the sentence
    that names its topic ("I took my kids to a pottery workshop. We all made our own pots")."""
    sentences = split_sentences(text)
    result = []
    for index, sentence in enumerate(sentences):
        if is_question(sentence):
            continue  # a question remembers nothing (and may be the message itself)
        following = sentences[index + 1] if index + 1 < len(sentences) else ""
        if following and not is_question(following):
            sentence = f"{sentence} {following}"
        result.append(words_cut(sentence, _SNIPPET_WORDS))
    return result


def _item_parts(item: RecalledItem, *, question: str) -> list[tuple[str, str]]:
    """What of an item may answer: who said it and the words. Profile and persona only when asked."""
    if item.kind in _SAID_KINDS:
        return _said_parts(item)
    if item.kind in _NOTED_KINDS:
        return [("noted", item.text)]
    if item.kind == "profile" and _ABOUT_ME.search(question):
        return [("profile", item.text)]
    return []


def gather_evidence(message: str, items: Sequence[RecalledItem], *, query_terms: frozenset[str],
                    user_names: frozenset[str], sona_name: str | None) -> list[Evidence]:
    """Every recalled sentence that may answer the message, most relevant first, each once."""
    best: dict[str, Evidence] = {}
    ranked = {kind: [item.ref for item in items if item.kind == kind] for kind in _RANKED_KINDS}
    for order, item in enumerate(items):
        semantic = _semantic(item)
        if item.kind in ranked:  # best first, as the policy ranked them
            semantic += _RANK_BONUS * (1 - ranked[item.kind].index(item.ref) / len(ranked[item.kind]))
        for label, words in _item_parts(item, question=message):
            speaker = _speaker_of(label, user_names=user_names, sona_name=sona_name)
            # Whoever said it counts as a shared word when the message names them.
            extra = ({label.lower(), stem(label.lower())} if speaker not in ("user", "assistant", "noted", "profile")
                     else set())
            for sentence in _passages(words) if item.kind != "profile" else [words]:
                terms = {t.stem for t in content_terms(sentence)}
                shared = query_terms & (terms | extra)
                lexical = _weighted(shared) / _weighted(query_terms) if query_terms else 0.0
                strong = len((shared & terms) - _FRAME_WORDS)  # who said it is no answer by itself
                # Meaning alone vouches only for words that say something ("Wow, Mel!" does not).
                on_topic = semantic >= _SEMANTIC_FLOOR and len(terms) >= _MIN_TERMS or (
                    semantic >= _CLEAR_FLOOR and terms)
                about_file = speaker == _ATTACHED and bool(_ASKS_FILE.search(message))
                if not (strong or on_topic or about_file or item.kind == "profile" and shared):
                    continue
                key = " ".join(sentence.lower().split())
                bonus = _FILE_BONUS if about_file else 0.0
                found = Evidence(semantic + _LEXICAL_WEIGHT * lexical + bonus, semantic, strong, item, speaker,
                                 sentence.strip(), order)
                if key not in best or best[key].relevance < found.relevance:
                    best[key] = found
    return sorted(best.values(), key=lambda e: (-e.relevance, e.order, e.sentence))


# --- saying it --------------------------------------------------------------------------------

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


def when_said(timestamp: datetime | None, now: datetime | None) -> str:
    if timestamp is None:
        return "Earlier"
    relative = _ago(timestamp, now) if now else ""
    return f"On {day_text(timestamp)} ({relative})" if relative else f"On {day_text(timestamp)}"


def words_cut(text: str, limit: int) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]).rstrip(",;:") + "…"


def second_person(noted: str) -> str:
    """A noted fact ("User has a cat", "Assistant suggested the user try yoga") said to the user."""
    text = noted.strip()
    if not text.startswith("Assistant"):
        return to_person(text, capital=False)
    for pattern, replacement in _NOTED_SUBJECT:
        if isinstance(replacement, dict):
            text = pattern.sub(lambda m, table=replacement: table[m.group(1)], text)
        else:
            text = pattern.sub(replacement, text)
    words = text.split(" ", 2)
    if len(words) > 1 and words[0] == "you" and re.fullmatch(r"[a-z]+s", words[1]) and not words[1].endswith("ss"):
        verb = words[1]  # "you loves" → "you love"
        words[1] = verb[:-2] if verb.endswith(("ches", "shes", "xes", "oes")) else verb[:-1]
    return " ".join(words)


def cite(evidence: Evidence, now: datetime | None) -> str:
    """One remembered sentence: when, whose words, the words, and the dates they point at."""
    when = when_said(evidence.item.timestamp, now)
    snippet = words_cut(evidence.sentence, _SNIPPET_WORDS)
    dates = relative_dates(snippet, said_at=evidence.item.timestamp) if evidence.item.timestamp else []
    note = "".join(f" ({expression}: {resolved})" for expression, resolved in dates[:2])
    if evidence.speaker == "profile":
        return f"Your profile says {snippet}."
    if evidence.speaker == "noted":
        sentence = second_person(snippet)
        return f"{when} I noted that {sentence}{'' if sentence[-1] in '.!?…' else '.'}{note}"
    who = {"user": "you told me", "assistant": "I said", _ATTACHED: "the file you attached said"}.get(
        evidence.speaker, f"{evidence.speaker} said")
    return f"{when} {who}: “{snippet}”{note}"


def _dont_know(user_name: str | None) -> str:
    return f"I don't recall anything about that yet{_addressed(user_name)}. Tell me about it if you like."


# --- the reply --------------------------------------------------------------------------------

def _overlapping(first: str, second: str) -> bool:
    """The same words twice: an utterance quoted from its page and on its own, or a passage that
    shares a sentence with its neighbour's."""
    def normal(text: str) -> str:
        return " ".join(_words(text))

    a, b = normal(first.rstrip("…")), normal(second.rstrip("…"))
    shared = {normal(s) for s in split_sentences(first)} & {normal(s) for s in split_sentences(second)}
    return a in b or b in a or bool(shared - {""})


def answer(evidence: Sequence[Evidence], *, user_name: str | None, now: datetime | None) -> str:
    """The best evidence first; nearly as relevant others after it, within the word budget."""
    if not evidence:
        return _dont_know(user_name)
    chosen: list[Evidence] = []
    for candidate in evidence:
        if len(chosen) == _MAX_CITED or candidate.relevance < _ALSO_RATIO * evidence[0].relevance:
            break
        if not any(_overlapping(candidate.sentence, other.sentence) for other in chosen):
            chosen.append(candidate)
    reply = f"Here's what I remember{_addressed(user_name)}:"
    for index, item in enumerate(chosen):
        extended = f"{reply} {cite(item, now)}"
        if index and len(extended.split()) > _MAX_WORDS:
            break  # fewer memories rather than a cut one; only the first may be cut
        reply = extended
    return words_cut(reply, _MAX_WORDS)


# "Big news: …", "Guess what, …": a lead-in is not part of what is remembered.
_LEAD_IN = re.compile(r"^\s*(?:(?:big |good |some |great |exciting |sad )?news|update|guess what|so|okay|ok|well|"
                      r"oh|hey|btw|fyi|by the way|fun fact|quick update)\s*[:,!.-]+\s*", re.IGNORECASE)


def _listed(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def acknowledge(message: str, evidence: Sequence[Evidence], *, user_name: str | None,
                now: datetime | None, noted: Sequence[str] = ()) -> str:
    """A statement answered: what it told that will be remembered (`noted`, the facts the turn
    stores, and only those), said back in the second person, and a related memory."""
    statements = [s for s in split_sentences(message) if not is_question(s) and content_terms(s)]
    if not statements and not noted:
        return f"Okay{_addressed(user_name)}. Tell me more whenever you like."
    statements = statements or [message]
    if noted:
        said = words_cut(_listed([sentence_inside(to_person(t, capital=False)) for t in noted[:3]]), _SNIPPET_WORDS)
        reply = f"Got it{_addressed(user_name)}. I'll remember that {said}{'' if said.endswith('…') else '.'}"
    else:
        reply = f"Okay{_addressed(user_name)}, thanks for telling me."
    first = _LEAD_IN.sub("", statements[0]) or statements[0]
    related = next((e for e in evidence if e.matched and e.semantic >= _SEMANTIC_FLOOR
                    and " ".join(e.sentence.lower().split()) != " ".join(first.lower().split())), None)
    if related is not None:
        reply += f" It goes with something I remember: {cite(related, now)}"
    return words_cut(reply, _MAX_WORDS)


def about_you(items: Sequence[RecalledItem], *, sona_name: str | None) -> str | None:
    """The assistant describes itself from its persona: the persona is not a fact about the user."""
    persona = next((item for item in items if item.kind == "agent_profile"), None)
    if persona is None and not sona_name:
        return None
    description = persona.text.split(":", 1)[-1].strip() if persona else ""
    name = sona_name or (persona.text.split(":", 1)[0].strip() if persona else "your assistant")
    if not description:
        return f"I'm {name}."
    return f"I'm {name}, {description[:1].lower()}{description[1:].rstrip('.')}."


def compose_reply(message: str, items: Sequence[RecalledItem], *, user_name: str | None = None,
                  sona_name: str | None = None, now: datetime | None = None,
                  user_aliases: Collection[str] = (), facts: Sequence[KnownFact] = (),
                  persona: str = "", noted: Sequence[str] = ()) -> str:
    """The offline answer to a message, from what is known and what was recalled for it.

    `user_aliases` are the names the user's own words are stored under ("Sam: …"), so that they
    are cited as "you told me". `facts` are the person's long-term facts: a question about them is
    answered from the current ones first (the past ones when it asks about the past), then from the
    turns recalled. `persona` is the sona's description: "keeps answers short" makes them short.
    At most three memories and about 120 words.
    """
    reply = _compose(message, items, user_name=user_name, sona_name=sona_name, now=now, user_aliases=user_aliases,
                     facts=facts, noted=noted)
    return shorten(reply) if wants_short(persona) else reply


_SHORT = re.compile(r"\b(?:short|brief|briefly|concise|terse|succinct|few words|to the point|laconic)\b", re.I)


def wants_short(persona: str) -> bool:
    """A sona described as keeping answers short."""
    return bool(_SHORT.search(persona or ""))


def shorten(reply: str) -> str:
    """A reply cut to its point: no preamble, its first sentence or citation, at most 30 words."""
    text = re.sub(r"^(?:Here's what I remember(?:, [^:]+)?:|Got it(?:, [^.]+)?\.)\s*", "", reply)
    text = text.split(" It goes with something I remember:")[0]
    first = re.match(r"(.+?[.!?…”])(?:\s|$)", text)
    return words_cut(first.group(1) if first else text, 30)


def _compose(message: str, items: Sequence[RecalledItem], *, user_name: str | None, sona_name: str | None,
             now: datetime | None, user_aliases: Collection[str], facts: Sequence[KnownFact],
             noted: Sequence[str] = ()) -> str:
    names = {w.lower() for name in (user_name, sona_name, *user_aliases) if name for w in name.split()}
    user_names = frozenset(a.lower() for a in (*user_aliases, user_name or "") if a)
    query_terms = frozenset(t.stem for t in content_terms(message)) - names - {stem(n) for n in names}
    greeting = small_talk(message, user_name=user_name, sona_name=sona_name, topical=bool(query_terms))
    if greeting:
        return greeting
    if asks(message) and _ABOUT_YOU.search(message):
        itself = about_you(items, sona_name=sona_name)
        if itself:
            return itself
    if asks(message):
        known = answer_from_facts(message, facts)
        if known is not None:
            return known
    evidence = gather_evidence(message, items, query_terms=query_terms, user_names=user_names, sona_name=sona_name)
    evidence = current_first(message, evidence, items, facts)
    if not asks(message):
        return acknowledge(message, evidence, user_name=user_name, now=now, noted=noted)
    if not query_terms and _RECALL_ALL.search(message):
        evidence = _everything(items, user_names=user_names, sona_name=sona_name)
    return answer(evidence, user_name=user_name, now=now)


def current_first(message: str, evidence: list[Evidence], items: Sequence[RecalledItem],
                  facts: Sequence[KnownFact] = ()) -> list[Evidence]:
    """What a superseded memory said ("I live in Leeds", once they moved) gives way to what took its
    place, unless the message asks about the past ("where did I live before York?"): a sentence
    that says it is answered by its successor, from when it took over, or counts for less where no
    successor is known. The superseded memories are those recalled and those among `facts`."""
    stale = [item for item in items if item.kind in _NOTED_KINDS and "superseded" in item.breakdown]
    stale += [RecalledItem(kind="kb_fact", ref=fact.id, text=superseded_text(fact.text, fact.valid_until,
                                                                             fact.successor),
                           breakdown={"superseded": 1.0, "until": fact.valid_until.timestamp()})
              for fact in facts if fact.valid_until is not None]
    if not stale or asks_about_the_past(message):
        return evidence
    weighed: list[Evidence] = []
    for found in evidence:
        ended = [item for item in stale if says_superseded(found.sentence, [item.text])]
        if not ended:
            weighed.append(found)
            continue
        successors = {successor_in(item.text): item for item in ended if successor_in(item.text)}
        if not successors:
            weighed.append(replace(found, relevance=found.relevance * _STALE_WEIGHT))
        for successor, item in successors.items():  # what took its place answers in its stead
            until = item.breakdown.get("until")
            newer = replace(item, text=successor, breakdown={},
                            timestamp=datetime.fromtimestamp(until, UTC) if until else None)
            weighed.append(Evidence(found.relevance, found.semantic, found.matched, newer, "noted", successor,
                                    found.order))
    unique: dict[tuple[str, str], Evidence] = {}
    for found in sorted(weighed, key=lambda e: -e.relevance):  # a successor found twice, once
        unique.setdefault((found.speaker, found.sentence), found)
    return sorted(unique.values(), key=lambda e: (-e.relevance, e.order, e.sentence))


def _everything(items: Sequence[RecalledItem], *, user_names: frozenset[str], sona_name: str | None) -> list[Evidence]:
    """"What do you remember about me?": what the user said, most relevant (then most recent) first."""
    found: dict[str, Evidence] = {}
    for order, item in enumerate(items):
        if item.kind not in _SAID_KINDS and item.kind not in _NOTED_KINDS:
            continue
        for label, words in _item_parts(item, question=""):
            speaker = _speaker_of(label, user_names=user_names, sona_name=sona_name)
            for sentence in _passages(words)[:1]:
                key = " ".join(sentence.lower().split())
                found.setdefault(key, Evidence(_semantic(item), _semantic(item), 0, item, speaker, sentence, order))
    return sorted(found.values(), key=lambda e: (e.order, e.sentence))
