"""A recall's writes: the chosen segments' visits (heat) and the stored trace of what was recalled
and why. What is recalled is memory/recall/ (read only)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction
from django.db.models import F

from memory.config import memory_params
from memory.engine.heat import heat_breakdown, recency
from memory.engine.mid_term import SegmentScore
from memory.engine.retrieval import Prompt
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, LifecycleEvent, RetrievalTrace, Segment, Sona, Tier
from memory.recall import pipeline
from memory.recall.base import UnknownPolicyError, default_policy_name, get_policy
from memory.services.common import MemoryInputError
from memory.services.events import event_record

if TYPE_CHECKING:
    from concurrent.futures import Future  # the query's vector being computed (memory/recall/pipeline.py)

VISITS_PART = "segment visits"
TRACE_PART = "trace"  # writing it, and the commit of the recall's writes


@dataclass
class Recall:
    query: str
    items: list[RecalledItem]
    trace: RetrievalTrace | None
    segments: list[dict[str, Any]] = field(default_factory=list)
    latency_ms: float = 0.0  # up to the writes, as the trace records it
    # Each part's milliseconds, in order (pipeline.STM_PART, ..., TRACE_PART); the trace stores
    # all but its own writing, and they add up to its latency_ms.
    timings_ms: dict[str, float] = field(default_factory=dict)
    embedding_ms: float | None = None  # the query embedding's own time, beside the first parts
    policy: str = ""
    prompt: Prompt | None = None  # assembled from the items when the recall was asked to (prompt_for)


def policy_choose(*, requested: str | None = None, sona: Sona | None = None) -> str:
    """The policy a recall uses: the one asked for, else the sona's, else the setting's."""
    name = requested or (sona.recall_policy if sona is not None else "") or default_policy_name()
    try:
        get_policy(name)
    except UnknownPolicyError as exc:
        raise MemoryInputError(str(exc).capitalize() + ".") from None
    return name


def _prompt_record(prompt: Prompt) -> dict[str, Any]:
    """What entered the prompt, and its size, as the trace stores it."""
    return {
        "tokens": prompt.tokens,
        "sections": prompt.sections,
        "included": [f"{item.kind}:{item.ref}" for item in prompt.included],
        "dropped": [f"{item.kind}:{item.ref}" for item in prompt.dropped],
    }


def trace_record_reply(*, recall: Recall, fallback_reason: str, breaker_open: bool) -> None:
    """Why the reply came from the offline engine, for the recall panel."""
    trace = recall.trace
    if trace is None:
        return
    trace.payload["reply"] = {"fallback_reason": fallback_reason[:500], "breaker_open": breaker_open}
    with _bookkeeping(writes=True):
        trace.save(update_fields=["payload"])


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
    params = memory_params()
    return Recall(query=query, items=pipeline.stm_items(user, exclude_page_id, params.stm_capacity), trace=None)


def recall_for_query(*, user, query: str, sona: Sona | None = None, exclude_page_id=None,
                     page: DialoguePage | None = None, now: datetime | None = None,
                     update_heat: bool = True, record_trace: bool = True,
                     query_vector: list[float] | None = None, policy: str | None = None,
                     turn_tiers: tuple[str, ...] = (Tier.MTM,),
                     embedding: Future[tuple[list[float], float]] | None = None,
                     prompt_for: Callable[[list[RecalledItem]], Prompt] | None = None) -> Recall:
    """Everything the reply may use, best first per tier (memory/recall/pipeline.py), the chosen
    segments' visits and a stored trace of why.

    `policy` names a registered recall policy (default: the setting). `turn_tiers` lets a
    benchmark rank utterances over STM too (the prompt has STM whole anyway). `prompt_for`
    assembles a turn's prompt from the items: the Recall carries it, and the trace is written
    once with what entered it (its time counts in the trace part, not the recall's latency).
    """
    found = pipeline.gather(user=user, query=query, sona=sona, exclude_page_id=exclude_page_id, now=now,
                            query_vector=query_vector, policy=policy, turn_tiers=turn_tiers,
                            embedding=embedding)
    ranking, watch, context = found.ranking, found.watch, found.context
    trace = None
    with _bookkeeping(writes=update_heat or record_trace):
        heat_changes = (_visit_segments(ranking.visited, ranking.segment_rows, context.now, context.params)
                        if update_heat else [])
        watch.lap(VISITS_PART)
        latency_ms = watch.elapsed_ms()
        prompt = prompt_for(found.items) if prompt_for is not None else None
        if record_trace:
            trace = RetrievalTrace.objects.create(
                user=user, page=page, query=query, policy=found.policy.name, latency_ms=latency_ms,
                prompt_tokens=prompt.tokens if prompt is not None else 0,
                payload={
                    "query_keywords": sorted(context.query_keywords),
                    "segments": ranking.considered,
                    **ranking.trace,
                    "stm": [i.ref for i in found.stm],
                    "stm_similarity": {i.ref: i.breakdown["similarity"] for i in found.stm
                                       if "similarity" in i.breakdown},
                    "long_term": [{"kind": i.kind, "ref": i.ref, "score": round(i.score, 4)}
                                for i in found.long_term],
                    "heat_changes": heat_changes,
                    "policy": found.policy.name,
                    "params": {"top_m": context.params.top_m_segments, "top_k": context.params.top_k_pages},
                    "timings_ms": dict(watch.parts),
                    # PostgreSQL's jsonb keeps an object's keys in its own order: the run's order is kept apart
                    "timings_order": list(watch.parts),
                    "embedding_ms": found.embedding_ms,
                    **({"prompt": _prompt_record(prompt)} if prompt is not None else {}),
                },
            )
        if heat_changes:  # the lifecycle log carries visits too: the inspector rebuilds heat from it
            event_record(user_id=user.pk, kind=LifecycleEvent.Kind.SEGMENTS_VISITED, at=context.now,
                         segments=[change["segment_id"] for change in heat_changes],
                         trace_id=str(trace.id) if trace else None)
    watch.lap(TRACE_PART)
    return Recall(query=query, items=found.items, trace=trace, segments=ranking.considered, latency_ms=latency_ms,
                  timings_ms=watch.parts, embedding_ms=found.embedding_ms, policy=found.policy.name,
                  prompt=prompt)
