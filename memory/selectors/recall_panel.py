"""The recall panel beside a reply: what entered the prompt, read back from the stored trace, with
each item's scores and why it was recalled, in words."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.config import memory_params
from memory.engine.heat import recency
from memory.engine.text import WORD, stem
from memory.engine.traits import TRAITS_BY_KEY
from memory.models import DialoguePage, Recollection, RetrievalTrace, Segment, Sona
from memory.recall.base import policies, policy_or_none
from memory.selectors.ids import uuid_or_none
from memory.selectors.traces import trace_timings
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

# The prompt's section titles speak to the model; these speak to the person reading the panel,
# in the order that says most: what was searched for first, what is always there last (then the
# kinds only one policy makes: RecallPolicy.item_kinds).
RECALL_TITLES = {
    "mtm_page": "Earlier conversations (mid-term)", "turn": "Things said earlier (mid-term)",
    "kb_fact": "Facts about you (long-term)",
    "user_trait": "Your traits (long-term)", "agent_trait": "Assistant notes (long-term)",
    "profile": "Your profile", "agent_profile": "Persona", "stm_page": "Recent turns (short-term)",
}


# What each kind of item is, said to the person whose memory it is.
RECALL_KIND_REASONS = {
    "stm_page": "One of your last {stm_capacity} turns: recent talk is always remembered.",
    "profile": "Your profile: always read before a reply.",
    "agent_profile": "The persona you are talking to: how the reply should sound, not something about you.",
    "user_trait": "A trait of yours, scored from your conversations.",
    "kb_fact": "A fact noted from something you said.",
    "agent_trait": "Something the assistant noted about how it helps you.",
}


def recall_titles() -> dict[str, str]:
    """The panel's section titles: the shared kinds', then each policy's own kinds'."""
    own = {kind: title for policy in policies() for kind, (title, _) in policy.item_kinds.items()}
    return {**RECALL_TITLES, **{kind: title for kind, title in own.items() if kind not in RECALL_TITLES}}


def recall_kind_reasons() -> dict[str, str]:
    own = {kind: reason for policy in policies() for kind, (_, reason) in policy.item_kinds.items() if reason}
    return {**RECALL_KIND_REASONS, **own}


ON_TOPIC_COSINE = 0.35  # all-MiniLM-L6-v2: above this, two texts are about the same thing


def score_help() -> dict[str, str]:
    """Every score the panel may show, explained (tooltips and the panel's legend)."""
    params = memory_params()
    own = {label: text for policy in policies() for label, text in policy.score_help.items()}
    heat = (f"Topic heat = N_visit + L_interaction + exp(−Δt/μ): how often the topic was recalled, how many "
            f"turns it holds, and how recently it was used. Above τ = {params.heat_threshold:g} the topic is "
            "promoted to long-term memory. Each recall counts as a visit, so heat after > heat before.")
    return {
        **own,
        "relevance": "Relevance on 0 to 1: the shared relevance score (meaning, words, a second look, the second "
                     "hop, time) scaled among this message's candidates, 1 for the best.",
        "dense": "Meaning: closeness of the utterance to your message, as a z-score among the candidates "
                 "(0 = average, negative = below average), weighted.",
        "sparse": "Words: the BM25 keyword score as a z-score among the candidates (0 or less: few or no "
                  "shared words).",
        "feedback": "A second look: closeness to your message pulled toward the best first hits, as a z-score.",
        "hop": "The second hop: the names and events the first hits share, searched again, as a z-score.",
        "speaker": "A boost when your message names the person who said it.",
        "time": "A boost when the turn was said in the period your message names (\u201cin May 2023\u201d, "
                "\u201clast week\u201d).",
        "score": "dense + sparse + feedback + hop + speaker + time.",
        "final": "The ranking score: the score plus a share of the neighbouring turns' (an answer follows its "
                 "question). Items are shown best first by it.",
        "cosine": f"Cosine similarity of the meaning of your message and the utterance (−1 to 1; above "
                  f"{ON_TOPIC_COSINE} is on topic).",
        "bm25": "Raw BM25 keyword score (0: no word in common).",
        "similarity": "Cosine similarity of the meaning of your message and this memory (−1 to 1).",
        "segment relevance": "How relevant the topic is: its best page's relevance, scaled among this message's "
                             "topics (0 to 1).",
        "keyword Jaccard": "Share of keywords your message and the topic have in common (0 to 1).",
        "segment Fscore": "Fscore = segment relevance + keyword Jaccard: the topics with the top 5 are searched.",
        "page relevance": "The page's best utterance by the shared relevance score (a z-score among the candidates).",
        "heat before": heat, "heat after": heat,
        "recency": f"exp(−Δt/μ): 1 when just said, falling to 0.37 after μ = "
                   f"{params.recency_mu_seconds / 86400:.0f} days.",
        "trait score": "How strongly your conversations show this trait (0 to 1).",
    }


@dataclass
class RecalledRow:
    """One remembered item shown beside a reply: why it was recalled, in words, then its scores."""

    kind: str
    ref: str
    text: str
    scores: list[tuple[str, float]] = field(default_factory=list)
    detail: str = ""
    reply: str = ""  # pages: the assistant's side; `text` is then the user's message
    why: list[str] = field(default_factory=list)  # the reasons, for a person
    matched: list[str] = field(default_factory=list)  # words of the message found in the text


@dataclass
class TurnRecall:
    trace: RetrievalTrace
    sections: list[tuple[str, list[RecalledRow]]]
    dropped: int
    segments_considered: int
    segments_chosen: int
    keywords: list[str]
    timings: list[tuple[str, float]]  # where the recall's time went, ms per part in order
    legend: list[tuple[str, str]] = field(default_factory=list)  # each score shown, explained
    # In the prompt too, but sharing no word and no meaning with the message (a neighbour of a turn
    # that matched, the rest of a chosen topic): shown apart, folded, not among what was remembered.
    unrelated: list[RecalledRow] = field(default_factory=list)
    fallback_reason: str = ""  # why the offline engine replied instead of the model
    breaker_open: bool = False  # ...because the model's circuit breaker was open


def turn_recall(*, user, page_id) -> TurnRecall | None:
    """What entered the prompt of one reply, read back from its stored retrieval trace."""
    trace = RetrievalTrace.objects.filter(user=user, page_id=page_id).order_by("-created_at").first()
    if trace is None:
        return None
    payload = trace.payload or {}
    prompt = payload.get("prompt", {})
    refs = [tuple(entry.split(":", 1)) for entry in prompt.get("included", []) if ":" in entry]
    rows = _recalled_rows(user, trace, payload, refs)
    unrelated = [row for row in rows if not related(row, payload)]
    rows = [row for row in rows if related(row, payload)]
    titles = recall_titles()
    kinds = [k for k in titles if any(r.kind == k for r in rows)]
    kinds += sorted({r.kind for r in rows} - set(titles))  # a kind this panel does not know yet
    sections = [(titles.get(kind, kind.replace("_", " ")), [r for r in rows if r.kind == kind])
                for kind in kinds]
    segments = payload.get("segments", [])
    explained = score_help()
    shown = list(dict.fromkeys(label for row in rows for label, _ in row.scores))
    return TurnRecall(trace=trace, sections=sections, dropped=len(prompt.get("dropped", [])),
                      segments_considered=len(segments),
                      segments_chosen=sum(1 for s in segments if s.get("chosen")),
                      keywords=list(payload.get("query_keywords", [])),
                      timings=trace_timings(payload),
                      legend=[(label, explained[label]) for label in shown if label in explained],
                      fallback_reason=str(payload.get("reply", {}).get("fallback_reason", "")),
                      breaker_open=bool(payload.get("reply", {}).get("breaker_open", False)),
                      unrelated=unrelated)


ALWAYS_RELATED = frozenset({"stm_page", "profile", "user_trait", "sona"})  # the prompt's standing context


def related(row: RecalledRow, payload: dict) -> bool:
    """Whether an item has something to do with the message: a shared word, or close meaning (the
    recent turns and the profile are context every reply has, and always shown)."""
    if row.kind in ALWAYS_RELATED or row.matched:
        return True
    scores = dict(row.scores)
    meaning = scores.get("cosine", scores.get("similarity", payload.get("stm_similarity", {}).get(row.ref)))
    return meaning is None or meaning >= ON_TOPIC_COSINE


GONE = "(no longer in memory)"


def _recalled_rows(user, trace: RetrievalTrace, payload: dict,
                   refs: list[tuple[str, ...]]) -> list[RecalledRow]:
    """Each included item's current text, with the scores the trace recorded for it."""
    found = _recalled_lookup(user, [ref for _, ref in refs], payload)
    keywords = frozenset(payload.get("query_keywords", []))
    policy, reasons = policy_or_none(trace.policy), recall_kind_reasons()
    rows = []
    for kind, ref in refs:
        row = RecalledRow(kind=kind, ref=ref, text=found["text"].get(ref, GONE))
        if kind in ("stm_page", "mtm_page") and ref in found["pages"]:
            _page_row(row, found["pages"][ref], trace, payload)
        elif kind == "turn":
            _utterance_row(row, payload)
        elif kind in ("kb_fact", "agent_trait", "user_trait"):
            label = "trait score" if kind == "user_trait" else "similarity"
            row.scores = [(label, found["long_term_scores"].get((kind, ref), 0.0))]
        own = policy.explain_item(kind, ref, payload) if policy is not None else None
        if own is not None:  # the policy's own terms (e.g. the Exocortex's weight) replace the shared scores
            row.scores = row.scores if own.scores is None else own.scores
            row.why += own.why
        row.matched = matched_words(row.text, keywords)
        row.why = _reasons(row, payload, reasons)
        rows.append(row)
    return rows


def matched_words(text: str, keywords: frozenset[str]) -> list[str]:
    """The words of `text` that are keywords of the message (as stems or names), each once."""
    found: dict[str, str] = {}
    for word in WORD.findall(text):
        lower = word.lower()
        if lower in keywords or stem(lower) in keywords:
            found.setdefault(lower, word)
    return list(found.values())


def _reasons(row: RecalledRow, payload: dict, kind_reasons: dict[str, str]) -> list[str]:
    """Why an item was recalled, in words: shared words, close meaning, when, which topic."""
    scores = dict(row.scores)
    reasons = ([kind_reasons[row.kind].format(stm_capacity=memory_params().stm_capacity)]
               if row.kind in kind_reasons else [])
    if row.matched:
        reasons.append("Shares words with your message: " + ", ".join(f"“{w}”" for w in row.matched) + ".")
    meaning = scores.get("cosine", scores.get("similarity", payload.get("stm_similarity", {}).get(row.ref)))
    if meaning is not None and meaning >= ON_TOPIC_COSINE:
        reasons.append("Close in meaning to your message, even where the words differ.")
    if scores.get("speaker", 0) > 0:
        reasons.append("Said by the person your message names.")
    if scores.get("final", 0) - scores.get("score", 0) > 0.05:
        reasons.append("Next to another turn that matched (an answer follows its question).")
    return reasons + row.why  # what the row's own reader added: when, and which topic


def _recalled_lookup(user, refs: list[str], payload: dict) -> dict[str, Any]:
    """One query per kind of memory for everything a trace names."""
    ids = [i for i in map(uuid_or_none, refs) if i]
    text: dict[str, str] = {}
    text.update({str(f.id): f.text for f in KnowledgeFact.objects.filter(user=user, id__in=ids)})
    text.update({str(a.id): a.text for a in AgentTrait.objects.filter(user=user, id__in=ids)})
    text.update({str(s.id): f"{s.name}: {s.profile}" for s in Sona.objects.filter(user=user, id__in=ids)})
    for trait in UserTrait.objects.filter(user=user, key__in=refs):
        dim = TRAITS_BY_KEY.get(trait.key)
        text[trait.key] = f"{dim.name}: {dim.description}" if dim else trait.key
    profile = UserProfile.objects.filter(user=user).first()
    if profile and profile.as_text():
        text["profile"] = profile.as_text()
    text.update({str(r.id): r.text for r in Recollection.objects.filter(user=user, id__in=ids)})
    pages = {str(p.id): p for p in DialoguePage.objects.filter(user=user, id__in=ids)}
    text.update({pid: p.query for pid, p in pages.items()})
    text.update({str(s.id): s.summary for s in Segment.objects.filter(user=user, id__in=ids)})
    # traces written before the rename keep their long-term scores under "persona"
    long_term = payload.get("long_term", payload.get("persona", []))
    scores = {(p.get("kind"), p.get("ref")): p.get("score", 0.0) for p in long_term}
    return {"text": text, "pages": pages, "long_term_scores": scores}


def _page_row(row: RecalledRow, page: DialoguePage, trace: RetrievalTrace, payload: dict) -> None:
    """STM pages: recency at the time of the turn. MTM pages: similarity, Fscore and heat too."""
    row.reply = page.response
    row.detail = f"turn {page.seq} · {page.timestamp:%d %b %Y %H:%M}"
    row.why = [f"You said this on {page.timestamp:%-d %B %Y at %H:%M}."]
    age = recency(last_access=page.timestamp, now=trace.created_at,
                  mu_seconds=memory_params().recency_mu_seconds)
    if row.kind == "stm_page":
        similarity = payload.get("stm_similarity", {}).get(row.ref)
        row.scores = [("recency", age)] + ([("similarity", similarity)] if similarity is not None else [])
        return
    score = next((p for p in payload.get("pages", []) if p.get("id") == row.ref), {})
    row.why += _topic(payload, score.get("segment_id"))
    change = next((h for h in payload.get("heat_changes", [])
                   if h.get("segment_id") == score.get("segment_id")), {})
    row.scores = [("page relevance", score.get("relevance", 0.0)),
                  ("segment relevance", score.get("segment_relevance", 0.0)),
                  ("keyword Jaccard", score.get("segment_jaccard", 0.0)),
                  ("segment Fscore", score.get("segment_fscore", 0.0)),
                  ("heat before", change.get("heat_before", 0.0)),
                  ("heat after", change.get("heat_after", 0.0)),
                  ("recency", age)]


def _topic(payload: dict, segment_id: str | None) -> list[str]:
    """'Part of the topic “…”' for an item whose topic segment the recall looked at."""
    segment = next((s for s in payload.get("segments", []) if segment_id and s.get("id") == segment_id), None)
    summary = (segment or {}).get("summary", "")
    return [f"Part of the topic “{summary[:120]}{'…' if len(summary) > 120 else ''}”."] if summary else []


def _utterance_row(row: RecalledRow, payload: dict) -> None:
    """Hybrid recall: one utterance, with every score the fusion recorded for it and the heat of
    its topic, which this recall visited."""
    entry = next((t for t in payload.get("turns", []) if t.get("id") == row.ref), {})
    row.text = entry.get("text", GONE)
    row.scores = [(name.replace("_", " "), float(value)) for name, value in entry.items()
                  if name not in ("id", "text") and isinstance(value, int | float)]
    change = next((h for h in payload.get("heat_changes", []) if h.get("segment_id") == entry.get("segment_id")), {})
    row.scores += [(label, change[key]) for key, label in (("heat_before", "heat before"), ("heat_after", "heat after"))
                   if key in change]
    said = entry.get("said_at")
    if said:
        row.why.append(f"Said on {datetime.fromisoformat(said):%-d %B %Y at %H:%M}.")
    row.why += _topic(payload, entry.get("segment_id"))


STANDING_KINDS = frozenset({"profile", "user_trait"})  # in every prompt, whatever the message


def search_listing(items: list) -> tuple[list, list]:
    """A recall's items as the inspector's search lists them: what answers the query first (facts
    and assistant notes by their similarity, then the policy's ranked pages or turns in its order,
    then the recent turns by similarity), and apart the profile and traits every prompt carries."""
    def similarity(item) -> float:
        return float((item.breakdown or {}).get("similarity", item.score or 0.0))

    standing = [item for item in items if item.kind in STANDING_KINDS]
    noted = sorted((item for item in items if item.kind in ("kb_fact", "agent_trait")), key=lambda i: -similarity(i))
    recent = sorted((item for item in items if item.kind == "stm_page"), key=lambda i: -similarity(i))
    ranked = [item for item in items if item.kind not in STANDING_KINDS | {"kb_fact", "agent_trait", "stm_page"}]
    return noted + ranked + recent, standing
