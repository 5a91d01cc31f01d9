"""Retrieval over the three tiers (the MemoryOS two-stage policy), recorded as a trace.

All of STM; top-m segments by Fscore among the vector index's nearest segments, then top-k
pages inside them by similarity; top KB facts and agent traits by similarity; the profile, the
agent profile and the user's traits whole. Each item carries its score breakdown.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memory import components, reads
from memory.engine import offline
from memory.engine.heat import heat_breakdown, recency
from memory.engine.mid_term import SegmentScore
from memory.engine.retrieval import Prompt, top_segments
from memory.engine.similarity import jaccard
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, PageStatus, RetrievalTrace, Segment, Sona, Tier
from memory.turns import keyword_turns, recall_turns

RECALL_POLICIES = ("memoryos", "hybrid")
# The parts of a recall, in the order they run, as Recall.timings_ms and the trace name them.
# The query embedding runs beside the parts before it; its part is the wait for what they did
# not hide (Recall.embedding_ms is the embedding's own time).
KEYWORD_PART = "keyword search"
EMBED_PART = "embedding wait"
MTM_PARTS = {"memoryos": "segments, then pages", "hybrid": "utterances"}
VISITS_PART = "segment visits"
TRACE_PART = "trace"  # writing it, and the commit of the recall's writes


@functools.cache
def _embedding_threads() -> ThreadPoolExecutor:
    # Several, so that an embedder that waits on the network (OpenAI) is not queued behind one
    # request; the local model runs one query at a time under its own lock anyway.
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding")


def _embed_in_background(query: str) -> Future[tuple[list[float], float]]:
    """The query's vector and the milliseconds its embedding took, computed on another thread;
    an embedder's error is raised by result()."""
    def embed() -> tuple[list[float], float]:
        started = time.perf_counter()
        vector = components.embedder().embed([query])[0]
        return vector, round((time.perf_counter() - started) * 1000, 3)

    return _embedding_threads().submit(embed)


class _Stopwatch:
    """Milliseconds spent in each named part of one recall, in the order the parts ran."""

    def __init__(self) -> None:
        self.started = self._mark = time.perf_counter()
        self.parts: dict[str, float] = {}

    def lap(self, part: str) -> None:
        """Close `part`: the time since the last lap (or the start) is its."""
        now = time.perf_counter()
        self.parts[part] = round((now - self._mark) * 1000, 3)
        self._mark = now

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000


@dataclass
class Recall:
    query: str
    items: list[RecalledItem]
    trace: RetrievalTrace | None
    segments: list[dict[str, Any]] = field(default_factory=list)
    latency_ms: float = 0.0  # up to the writes, as the trace records it
    # Each part's milliseconds, in order (EMBED_PART, "STM pages", ..., TRACE_PART); the trace
    # stores all but its own writing, and they add up to its latency_ms.
    timings_ms: dict[str, float] = field(default_factory=dict)
    embedding_ms: float | None = None  # the query embedding's own time, beside the first parts

    def record_prompt(self, prompt: Prompt) -> None:
        """Add what entered the prompt, and its size, to the stored trace."""
        if self.trace is None:
            return
        self.trace.payload["prompt"] = {
            "tokens": prompt.tokens,
            "sections": prompt.sections,
            "included": [f"{item.kind}:{item.ref}" for item in prompt.included],
            "dropped": [f"{item.kind}:{item.ref}" for item in prompt.dropped],
        }
        self.trace.prompt_tokens = prompt.tokens
        with _bookkeeping(writes=True):
            self.trace.save(update_fields=["payload", "prompt_tokens"])


# What a recalled page shows; the stored embedding (1.5 kB a page) and the graph fields stay behind.
PAGE_FIELDS = ("id", "user_id", "tier", "seq", "query", "response", "timestamp", "source_ids", "segment_id")
# What ranking and heat read of a segment (its vector stays behind too).
SEGMENT_FIELDS = ("id", "user_id", "status", "summary", "keywords", "n_visit", "l_interaction", "last_access",
                  "page_count")


def _owned(model, fields, ids, user, **expected) -> dict[str, Any]:
    """Rows of `model` by primary key (`fields` loaded), kept only if they belong to `user` and
    have the expected values.

    Looked up by key alone, then checked in Python: with a user filter in the SQL, SQLite's
    planner (no statistics) walks the user's (user, tier, seq) index instead of the key, which
    grows with the store.
    """
    rows = reads.by_pk(model, ids, fields)
    return {key: row for key, row in rows.items()
            if row.user_id == user.pk and all(getattr(row, name) == value for name, value in expected.items())}


def _stm_items(user, exclude_page_id, capacity: int) -> list[RecalledItem]:
    pages = reads.rows(DialoguePage, PAGE_FIELDS,
                       equal={"user": user.pk, "tier": Tier.STM, "status": PageStatus.COMPLETE},
                       order_by=("-seq",), limit=capacity + 1)  # one more, in case the excluded page is among them
    excluded = str(exclude_page_id) if exclude_page_id is not None else None
    return [
        RecalledItem(kind="stm_page", ref=str(p.id), text=f"User: {p.query} | Assistant: {p.response}",
                     score=1.0, timestamp=p.timestamp, source_ids=tuple(p.source_ids),
                     breakdown={"seq": float(p.seq)})
        for p in pages if str(p.id) != excluded
    ][:capacity]


def _segment_stage(user, qvec, qkeywords, now: datetime, params) -> tuple[list[SegmentScore], dict, list]:
    index = components.vector_index()
    hits = index.search(user_id=str(user.pk), vector=qvec, limit=params.segment_candidates, kind="segment")
    cos_by_id = {hit.id: hit.score for hit in hits}
    rows = _owned(Segment, SEGMENT_FIELDS, cos_by_id, user, status=Segment.Status.ACTIVE)
    scores = [SegmentScore(segment_id=sid, cos=cos_by_id[sid],
                           jaccard=jaccard(qkeywords, frozenset(rows[sid].keywords)))
              for sid in cos_by_id if sid in rows]
    chosen = top_segments(scores, top_m=params.top_m_segments)
    considered = [
        {"id": s.segment_id, "cos": round(s.cos, 4), "jaccard": round(s.jaccard, 4),
         "fscore": round(s.fscore, 4), "chosen": s in chosen,
         "summary": rows[s.segment_id].summary[:200],
         "heat_before": round(heat_breakdown(rows[s.segment_id].to_engine(with_embedding=False), now=now,
                                              params=params)["heat"], 4)}
        for s in sorted(scores, key=lambda s: -s.fscore)
    ]
    return chosen, rows, considered


def _page_stage(user, qvec, chosen: list[SegmentScore], rows, params) -> list[RecalledItem]:
    if not chosen:
        return []
    fscore_by_id = {s.segment_id: s for s in chosen}
    hits = components.vector_index().search(
        user_id=str(user.pk), vector=qvec, limit=params.top_k_pages, kind="page",
        match={"tier": Tier.MTM}, match_any={"segment_id": list(fscore_by_id)},
    )
    pages = _owned(DialoguePage, PAGE_FIELDS, [h.id for h in hits], user, tier=Tier.MTM)
    items = []
    for hit in hits:
        page = pages.get(hit.id)
        if page is None:  # the index lags the database for a moment after a move
            continue
        seg = fscore_by_id.get(str(page.segment_id))
        items.append(RecalledItem(
            kind="mtm_page", ref=hit.id, text=f"User: {page.query} | Assistant: {page.response}",
            score=hit.score, timestamp=page.timestamp, source_ids=tuple(page.source_ids),
            breakdown={"similarity": round(hit.score, 4),
                       "segment_fscore": round(seg.fscore, 4) if seg else 0.0,
                       "segment_cos": round(seg.cos, 4) if seg else 0.0,
                       "segment_jaccard": round(seg.jaccard, 4) if seg else 0.0,
                       "segment_id": str(page.segment_id)},
        ))
    return items


def _segments_of_turns(user, turns: list[RecalledItem], qkeywords, now: datetime,
                       params) -> tuple[list[SegmentScore], dict, list]:
    """Under the hybrid policy the segments visited are those of the top turns (at most top-m), so
    heat keeps counting retrievals and hot topics still reach LPM."""
    order: list[str] = []
    for item in turns:
        sid = item.breakdown.get("segment_id")
        if sid and sid not in order:
            order.append(sid)
    rows = _owned(Segment, SEGMENT_FIELDS, order[:params.top_m_segments], user, status=Segment.Status.ACTIVE)
    chosen = [SegmentScore(segment_id=sid, cos=0.0, jaccard=jaccard(qkeywords, frozenset(rows[sid].keywords)))
              for sid in order if sid in rows]
    considered = [{"id": s.segment_id, "jaccard": round(s.jaccard, 4), "chosen": True,
                   "summary": rows[s.segment_id].summary[:200]} for s in chosen]
    return chosen, rows, considered


def _visit_segments(chosen: list[SegmentScore], rows, now: datetime, params) -> list[dict[str, Any]]:
    """Retrieval bumps N_visit and refreshes recency of the chosen segments (paper §3.4)."""
    ids = [s.segment_id for s in chosen]
    if not ids:
        return []
    Segment.objects.filter(id__in=ids).update(n_visit=F("n_visit") + 1, last_access=now)  # one statement
    changes = []
    for sid in ids:
        before = rows[sid].to_engine(with_embedding=False)
        heat_before = heat_breakdown(before, now=now, params=params)["heat"]
        heat_after = (heat_before - params.heat_gamma * recency(last_access=before.last_access, now=now,
                                                                mu_seconds=params.recency_mu_seconds)
                      + params.heat_alpha + params.heat_gamma)
        changes.append({"segment_id": sid, "heat_before": round(heat_before, 4),
                        "heat_after": round(heat_after, 4)})
    return changes


@contextmanager
def _bookkeeping(*, writes: bool) -> Iterator[None]:
    """One transaction for what a recall writes: the chosen segments' visits and the trace.

    On PostgreSQL its commit does not wait for the WAL to reach the disk (synchronous_commit off
    for this transaction only): a crash in the next fraction of a second could lose a visit count
    or a trace, never a turn (pages are written by the services, durably), and the reply no longer
    waits on two disk flushes. SQLite in WAL mode with synchronous=NORMAL never waits at commit.
    """
    if not writes:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield


def recall_stm_only(*, user, query: str, exclude_page_id=None) -> Recall:
    """The degraded recall: STM straight from the database, no vectors, no trace."""
    params = components.memory_params()
    return Recall(query=query, items=_stm_items(user, exclude_page_id, params.stm_capacity), trace=None)


def recall_for_query(*, user, query: str, sona: Sona | None = None, exclude_page_id=None,
                     page: DialoguePage | None = None, now: datetime | None = None,
                     update_heat: bool = True, record_trace: bool = True,
                     query_vector: list[float] | None = None, policy: str | None = None,
                     turn_tiers: tuple[str, ...] = (Tier.MTM,)) -> Recall:
    """Everything the reply may use, best first per tier, and a stored trace of why.

    policy "memoryos" (the paper's two-stage MTM retrieval) or "hybrid" (utterance-level dense +
    BM25 fusion over MTM, memory/turns.py); STM and persona memory are the same for both.
    `turn_tiers` lets a benchmark rank utterances over STM too (the prompt has STM whole anyway).
    """
    watch = _Stopwatch()
    now = now or timezone.now()
    params = components.memory_params()
    policy = policy or settings.MEMORYOS["RECALL_POLICY"]
    if policy not in RECALL_POLICIES:
        raise ValueError(f"unknown recall policy {policy!r}; choose one of {', '.join(RECALL_POLICIES)}")
    from persona import selectors as persona_selectors

    # The query is embedded on another thread while what needs no vector is read: STM, the
    # profile and, under the hybrid policy, the BM25 list, which at 100,000 pages takes as long as
    # the embedding. ONNX Runtime releases the GIL for the forward pass (Edge's searches and the
    # database reads hold it), so the two run at once on two cores. (With the TorchScript
    # encoder, which holds the GIL, and only the database reads beside it, this was slower.)
    embedding = _embed_in_background(query) if query_vector is None else None
    stm = _stm_items(user, exclude_page_id, params.stm_capacity)
    watch.lap("STM pages")
    fixed = persona_selectors.fixed_items(user=user, sona=sona)
    watch.lap("profile and traits")
    qkeywords = offline.extract_keywords(query)
    keyword_hits = None
    if policy == "hybrid":
        keyword_hits = keyword_turns(user=user, query=query, tiers=turn_tiers)
        watch.lap(KEYWORD_PART)
    qvec, embedding_ms = query_vector, None
    if embedding is not None:
        qvec, embedding_ms = embedding.result()
        watch.lap(EMBED_PART)
    if policy == "hybrid":
        mtm = recall_turns(user=user, query=query, query_vector=qvec, limit=settings.MEMORYOS["TOP_K_TURNS"],
                           tiers=turn_tiers, sparse=keyword_hits)
        chosen, rows, considered = _segments_of_turns(user, mtm, qkeywords, now, params)
    else:
        chosen, rows, considered = _segment_stage(user, qvec, qkeywords, now, params)
        mtm = _page_stage(user, qvec, chosen, rows, params)
    watch.lap(MTM_PARTS[policy])
    persona = fixed + persona_selectors.similar_items(user=user, query_vector=qvec, kb_limit=params.top_kb_facts,
                                                     trait_limit=params.top_agent_traits)
    watch.lap("facts and agent traits")
    items = persona + stm + mtm
    trace = None
    with _bookkeeping(writes=update_heat or record_trace):
        heat_changes = _visit_segments(chosen, rows, now, params) if update_heat else []
        watch.lap(VISITS_PART)
        latency_ms = watch.elapsed_ms()
        if record_trace:
            trace = RetrievalTrace.objects.create(
                user=user, page=page, query=query, policy=policy, latency_ms=latency_ms,
                payload={
                    "query_keywords": sorted(qkeywords),
                    "segments": considered,
                    "pages": [{"id": i.ref, **i.breakdown} for i in mtm if i.kind == "mtm_page"],
                    "turns": [{"id": i.ref, "text": i.text[:160], **i.breakdown} for i in mtm if i.kind == "turn"],
                    "stm": [i.ref for i in stm],
                    "persona": [{"kind": i.kind, "ref": i.ref, "score": round(i.score, 4)} for i in persona],
                    "heat_changes": heat_changes,
                    "policy": policy,
                    "params": {"top_m": params.top_m_segments, "top_k": params.top_k_pages},
                    "timings_ms": dict(watch.parts),
                    "embedding_ms": embedding_ms,
                },
            )
    watch.lap(TRACE_PART)
    return Recall(query=query, items=items, trace=trace, segments=considered, latency_ms=latency_ms,
                  timings_ms=watch.parts, embedding_ms=embedding_ms)
