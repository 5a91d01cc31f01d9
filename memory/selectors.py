"""Reads of memory: counts and lists for commands, the API and the inspector."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from memory.engine.traits import TRAITS_BY_KEY
from memory.models import DialoguePage, LifecycleEvent, PageStatus, RetrievalTrace, Segment, Sona, Tier
from persona.models import AgentTrait, KnowledgeFact, UserTrait


def memory_stats(*, user) -> dict[str, Any]:
    """Counts per tier for one user."""
    pages = DialoguePage.objects.filter(user=user)
    return {
        "user": user.username,
        "stm_pages": pages.filter(tier=Tier.STM, status=PageStatus.COMPLETE).count(),
        "pending_pages": pages.filter(status=PageStatus.PENDING).count(),
        "mtm_pages": pages.filter(tier=Tier.MTM).count(),
        "archived_pages": pages.filter(tier=Tier.ARCHIVED).count(),
        "total_pages": pages.count(),
        "mtm_segments": Segment.objects.filter(user=user, status=Segment.Status.ACTIVE).count(),
        "evicted_segments": Segment.objects.filter(user=user, status=Segment.Status.EVICTED).count(),
        "promoted_segments": Segment.objects.filter(user=user, promoted_count__gt=0).count(),
        "kb_facts": KnowledgeFact.objects.filter(user=user).count(),
        "user_traits": UserTrait.objects.filter(user=user, score__gt=0).count(),
        "agent_traits": AgentTrait.objects.filter(user=user).count(),
        "events": LifecycleEvent.objects.filter(user=user).count(),
        "traces": RetrievalTrace.objects.filter(user=user).count(),
    }


def stm_pages(*, user) -> list[DialoguePage]:
    return list(DialoguePage.objects.filter(user=user, tier=Tier.STM).order_by("seq"))


# --- the browser chat ------------------------------------------------------------------------

def chat_history(*, user, limit: int = 200) -> tuple[list[DialoguePage], int]:
    """The user's latest turns in any tier, oldest first, and how many there are in all."""
    from django.db.models import Exists, OuterRef

    pages = DialoguePage.objects.filter(user=user)
    total = pages.count()
    latest = (pages.select_related("sona")
              .annotate(has_trace=Exists(RetrievalTrace.objects.filter(page=OuterRef("pk"))))
              .order_by("-seq")[:limit])
    return list(reversed(latest)), total


def sona_list(*, user) -> list[Sona]:
    return list(Sona.objects.filter(user=user).order_by("created_at"))


def sona_for_user(*, user, sona_id) -> Sona | None:
    """The user's sona with this id, or None (also for another user's sona or a malformed id)."""
    try:
        return Sona.objects.filter(user=user, id=uuid.UUID(str(sona_id))).first()
    except ValueError:
        return None


# The prompt's section titles speak to the model; these speak to the person reading the panel,
# in the order that says most: what was searched for first, what is always there last.
RECALL_TITLES = {
    "mtm_page": "Earlier conversations (mid-term)", "turn": "Things said earlier (mid-term)",
    "kb_fact": "Facts about you (long-term)",
    "user_trait": "Your traits (long-term)", "agent_trait": "Assistant notes (long-term)",
    "profile": "Your profile", "agent_profile": "Persona", "stm_page": "Recent turns (short-term)",
}


@dataclass
class RecalledRow:
    """One remembered item shown beside a reply, with its score breakdown."""

    kind: str
    ref: str
    text: str
    scores: list[tuple[str, float]] = field(default_factory=list)
    detail: str = ""
    reply: str = ""  # pages: the assistant's side; `text` is then the user's message


@dataclass
class TurnRecall:
    trace: RetrievalTrace
    sections: list[tuple[str, list[RecalledRow]]]
    dropped: int
    segments_considered: int
    segments_chosen: int
    keywords: list[str]
    timings: list[tuple[str, float]]  # where the recall's time went, ms per part in order


def turn_recall(*, user, page_id) -> TurnRecall | None:
    """What entered the prompt of one reply, read back from its stored retrieval trace."""
    trace = RetrievalTrace.objects.filter(user=user, page_id=page_id).order_by("-created_at").first()
    if trace is None:
        return None
    payload = trace.payload or {}
    prompt = payload.get("prompt", {})
    refs = [tuple(entry.split(":", 1)) for entry in prompt.get("included", []) if ":" in entry]
    rows = _recalled_rows(user, trace, payload, refs)
    kinds = [k for k in RECALL_TITLES if any(r.kind == k for r in rows)]
    kinds += sorted({r.kind for r in rows} - set(RECALL_TITLES))  # a kind this panel does not know yet
    sections = [(RECALL_TITLES.get(kind, kind.replace("_", " ")), [r for r in rows if r.kind == kind])
                for kind in kinds]
    segments = payload.get("segments", [])
    return TurnRecall(trace=trace, sections=sections, dropped=len(prompt.get("dropped", [])),
                      segments_considered=len(segments),
                      segments_chosen=sum(1 for s in segments if s.get("chosen")),
                      keywords=list(payload.get("query_keywords", [])),
                      timings=[(str(part), float(ms)) for part, ms in payload.get("timings_ms", {}).items()])


GONE = "(no longer in memory)"


def _recalled_rows(user, trace: RetrievalTrace, payload: dict,
                   refs: list[tuple[str, ...]]) -> list[RecalledRow]:
    """Each included item's current text, with the scores the trace recorded for it."""
    found = _recalled_lookup(user, [ref for _, ref in refs], payload)
    rows = []
    for kind, ref in refs:
        row = RecalledRow(kind=kind, ref=ref, text=found["text"].get(ref, GONE))
        if kind in ("stm_page", "mtm_page") and ref in found["pages"]:
            _page_row(row, found["pages"][ref], trace, payload)
        elif kind == "turn":
            _utterance_row(row, payload)
        elif kind in ("kb_fact", "agent_trait", "user_trait"):
            label = "trait score" if kind == "user_trait" else "similarity"
            row.scores = [(label, found["persona_scores"].get((kind, ref), 0.0))]
        rows.append(row)
    return rows


def _recalled_lookup(user, refs: list[str], payload: dict) -> dict[str, Any]:
    """One query per kind of memory for everything a trace names."""
    from persona.models import UserProfile

    ids = [i for i in map(_uuid_or_none, refs) if i]
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
    pages = {str(p.id): p for p in DialoguePage.objects.filter(user=user, id__in=ids)}
    text.update({pid: p.query for pid, p in pages.items()})
    scores = {(p.get("kind"), p.get("ref")): p.get("score", 0.0) for p in payload.get("persona", [])}
    return {"text": text, "pages": pages, "persona_scores": scores}


def _page_row(row: RecalledRow, page: DialoguePage, trace: RetrievalTrace, payload: dict) -> None:
    """STM pages: recency at the time of the turn. MTM pages: similarity, Fscore and heat too."""
    from memory.components import memory_params
    from memory.engine.heat import recency

    row.reply = page.response
    row.detail = f"turn {page.seq} · {page.timestamp:%d %b %Y %H:%M}"
    age = recency(last_access=page.timestamp, now=trace.created_at,
                  mu_seconds=memory_params().recency_mu_seconds)
    if row.kind == "stm_page":
        row.scores = [("recency", age)]
        return
    score = next((p for p in payload.get("pages", []) if p.get("id") == row.ref), {})
    change = next((h for h in payload.get("heat_changes", [])
                   if h.get("segment_id") == score.get("segment_id")), {})
    row.scores = [("similarity", score.get("similarity", 0.0)),
                  ("segment cosine", score.get("segment_cos", 0.0)),
                  ("keyword Jaccard", score.get("segment_jaccard", 0.0)),
                  ("segment Fscore", score.get("segment_fscore", 0.0)),
                  ("heat before", change.get("heat_before", 0.0)),
                  ("heat after", change.get("heat_after", 0.0)),
                  ("recency", age)]


def _utterance_row(row: RecalledRow, payload: dict) -> None:
    """Hybrid recall: one utterance, with every score the fusion recorded for it."""
    entry = next((t for t in payload.get("turns", []) if t.get("id") == row.ref), {})
    row.text = entry.get("text", GONE)
    row.scores = [(name.replace("_", " "), float(value)) for name, value in entry.items()
                  if name not in ("id", "text") and isinstance(value, int | float)]


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
