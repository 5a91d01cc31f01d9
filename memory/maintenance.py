"""Maintenance off the reply path: meta chain, STM → MTM, eviction, promotion to LPM.

Every step reads its work from the database inside a transaction that holds the user's lock
row and re-checks it there, so a run is idempotent, resumable after a crash, and two workers
(threads or processes) for one user never move a page twice.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from memory import components, graph
from memory.engine import mid_term, offline
from memory.engine.graph import content_id
from memory.engine.short_term import chain_link, stm_overflow
from memory.engine.similarity import cosine
from memory.engine.types import SegmentView
from memory.models import (
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    PageStatus,
    Segment,
    Tier,
    UserMemoryState,
    vector_to_bytes,
)
from memory.services import _embed_or_none, _lock_state, page_point, page_text, pages_interrupted_complete
from memory.turns import index_turns, turn_point_ids

log = logging.getLogger(__name__)

_user_locks: defaultdict[int, threading.Lock] = defaultdict(threading.Lock)
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-maintenance")
MAX_RETRIES = 3
SUMMARY_PAGES = 12


@dataclass
class MaintenanceReport:
    interrupted: int = 0  # pages of stopped turns completed without a reply
    embedded: int = 0
    turns_indexed: int = 0
    chained: int = 0
    summarised: int = 0
    moved: int = 0
    created_segments: int = 0
    evicted: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)


def maintenance_schedule(*, user_id: int) -> None:
    """Run now (sync), in the in-process worker (thread), or leave it to the command (off)."""
    mode = settings.MEMORYOS["MAINTENANCE_MODE"]
    if mode == "sync":
        maintenance_run(user_id=user_id)
    elif mode == "thread":
        _executor.submit(_run_in_worker, user_id, 0)


def _run_in_worker(user_id: int, attempt: int) -> None:
    close_old_connections()
    try:
        maintenance_run(user_id=user_id)
    except Exception:
        log.exception("event=maintenance_failed user=%s attempt=%s", user_id, attempt)
        if attempt + 1 < MAX_RETRIES:
            timer = threading.Timer(2.0 * 2 ** attempt, _executor.submit,
                                    args=(_run_in_worker, user_id, attempt + 1))
            timer.daemon = True
            timer.start()
    finally:
        close_old_connections()


def maintenance_run(*, user_id: int, now: datetime | None = None, index_turns_now: bool = True,
                    ) -> MaintenanceReport:
    """All steps for one user, serialised with any other run for that user in this process.

    A bulk import passes index_turns_now=False and indexes utterances once per batch.
    """
    report = MaintenanceReport()
    with _user_locks[user_id]:
        try:
            # By wall-clock time, not `now` (an import's maintenance runs at the conversation's time).
            report.interrupted = pages_interrupted_complete(user_id=user_id)
            report.embedded = _embed_missing(user_id)
            if index_turns_now:
                report.turns_indexed = index_turns(user_id=user_id)
            report.chained = _link_chains(user_id)
            _overflow_stm(user_id, report)
            report.summarised = _refresh_summaries(user_id)
            now = now or timezone.now()
            report.evicted = _evict(user_id, now)
            report.promoted = _promote(user_id, now)
        except Exception as exc:
            _record_failure(user_id, exc)
            raise
        UserMemoryState.objects.filter(user_id=user_id).update(
            maintenance_due=False, maintenance_failures=0, last_maintenance_at=timezone.now(), last_error="")
    log.debug("event=maintenance_done user=%s moved=%s evicted=%s promoted=%s", user_id, report.moved,
             len(report.evicted), len(report.promoted))
    return report


def _record_failure(user_id: int, exc: Exception) -> None:
    with transaction.atomic():
        state = _lock_state(user_id)
        state.maintenance_due = True
        state.maintenance_failures += 1
        state.last_error = repr(exc)[:1000]
        state.save(update_fields=["maintenance_due", "maintenance_failures", "last_error"])
        graph.event_record(user_id=user_id, kind=LifecycleEvent.Kind.MAINTENANCE_FAILED,
                           error=repr(exc)[:500])


def _embed_missing(user_id: int) -> int:
    """Pages whose embedding failed at reply time get one now."""
    pages = list(DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, embedding=b"")
                 .order_by("seq")[:64])
    if not pages:
        return 0
    vectors = _embed_or_none([page_text(p.query, p.response, p.reply_model) for p in pages])
    if vectors is None:
        raise RuntimeError("the embedder is unavailable; pages stay queued for embedding")
    points = []
    with transaction.atomic():
        _lock_state(user_id)
        for page, vector in zip(pages, vectors, strict=True):
            page.embedding = vector_to_bytes(vector)
            page.save(update_fields=["embedding"])
            points.append(page_point(page, vector))
        transaction.on_commit(lambda: components.vector_index().upsert(points))
    return len(pages)


def _link_chains(user_id: int) -> int:
    """Meta chain: link each new page to the previous one when the topic continues, and summarise."""
    params = components.memory_params()
    todo = list(DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, chain_done=False)
                .exclude(embedding=b"").order_by("seq").values_list("id", flat=True))
    for page_id in todo:
        with transaction.atomic():
            _lock_state(user_id)
            page = DialoguePage.objects.get(id=page_id)
            if page.chain_done:
                continue
            prev = (DialoguePage.objects.filter(user_id=user_id, seq__lt=page.seq, status=PageStatus.COMPLETE)
                    .order_by("-seq").first())
            similarity = cosine(prev.to_engine().embedding, page.to_engine().embedding) if prev else None
            decision = chain_link(similarity=similarity, threshold=params.chain_threshold)
            chain_pages = [page]
            if decision.continues and prev is not None:
                page.previous = prev
                page.chain_id = prev.chain_id or prev.id
                chain_pages = list(DialoguePage.objects.filter(user_id=user_id, chain_id=page.chain_id)
                                   .order_by("-seq")[:SUMMARY_PAGES - 1]) + [page]
                _edge(user_id, page, MemoryNode.Kind.PAGE, prev, MemoryNode.Kind.PAGE, "follows",
                      decision.similarity)
            else:
                page.chain_id = page.id
            page.meta_chain = offline.summarize([p.query for p in sorted(chain_pages, key=lambda p: p.seq)],
                                                max_sentences=2, max_chars=300)
            page.chain_done = True
            page.save(update_fields=["previous", "chain_id", "meta_chain", "chain_done"])
    return len(todo)


def _node(user_id: int, obj, kind: str) -> MemoryNode:
    return graph.node_put(user_id=user_id, kind=kind, object_id=str(obj.pk), cid=obj.cid or str(obj.pk))


def _edge(user_id: int, source, source_kind: str, target, target_kind: str, relation: str,
          weight: float = 1.0) -> None:
    graph.edge_put(user_id=user_id, source=_node(user_id, source, source_kind),
                   target=_node(user_id, target, target_kind), relation=relation, weight=weight)


def _overflow_stm(user_id: int, report: MaintenanceReport) -> None:
    params = components.memory_params()
    ids = [str(i) for i in DialoguePage.objects.filter(user_id=user_id, tier=Tier.STM,
                                                        status=PageStatus.COMPLETE)
           .order_by("seq").values_list("id", flat=True)]
    for page_id in stm_overflow(ids, capacity=params.stm_capacity).move_to_mtm:
        created = page_move_to_mtm(user_id=user_id, page_id=page_id)
        if created is not None:
            report.moved += 1
            report.created_segments += int(created)


def page_move_to_mtm(*, user_id: int, page_id: str) -> bool | None:
    """Move one page into its best segment (Fscore > θ) or a new one.

    Returns True for a new segment, False for a merge, None when the page had already moved.
    """
    params = components.memory_params()
    with transaction.atomic():
        _lock_state(user_id)
        page = DialoguePage.objects.get(id=page_id, user_id=user_id)
        if page.tier != Tier.STM:
            return None
        view = page.to_engine()
        active = list(Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE))
        plan = mid_term.plan_merge(view, [s.to_engine() for s in active], params=params)
        now = timezone.now()
        if plan.segment_id is None:
            segment = Segment(user_id=user_id, last_access=now)
            engine_segment = SegmentView(id="", summary="", keywords=frozenset(), embedding=(), n_visit=0,
                                         l_interaction=0, last_access=now)
        else:
            segment = next(s for s in active if str(s.id) == plan.segment_id)
            engine_segment = segment.to_engine()
        merged = mid_term.segment_after_merge(engine_segment, view)
        page.tier, page.moved_at = Tier.MTM, now
        _refresh_segment(segment, merged, page)
        page.segment = segment
        page.save(update_fields=["tier", "segment", "moved_at"])
        _record_move(user_id, page, segment, plan)
        seg_point = _segment_point(segment)
        page_payload = {"tier": Tier.MTM, "segment_id": str(segment.id)}
        point_ids = [str(page.id)] + (turn_point_ids(page) if page.turns_indexed else [])
        transaction.on_commit(lambda: _sync_move(user_id, point_ids, page_payload, seg_point))
    return plan.segment_id is None


def _refresh_segment(segment: Segment, merged: SegmentView, page: DialoguePage) -> None:
    """Counters from the engine; keywords, summary and e_s recomputed as the segment grows.

    e_s is the embedding of the segment's summary and keywords, as in the paper. (The centroid
    of the pages was tried: a large segment's centroid is close to every casual page, so one
    segment swallowed most of a conversation.) The centroid stays as the fallback when the
    embedder is down.
    """
    recent = [] if segment._state.adding else list(
        DialoguePage.objects.filter(segment=segment).order_by("-seq")[:SUMMARY_PAGES])
    members = [page] + recent
    segment.l_interaction = merged.l_interaction
    segment.page_count = merged.page_count
    segment.keywords = sorted(mid_term.segment_keywords([frozenset(p.keywords) for p in members]))
    segment.summary = offline.summarize(
        [page_text(p.query, p.response, p.reply_model) for p in reversed(members)], max_sentences=3,
        max_chars=400)
    vectors = _embed_or_none([segment_text(segment)])
    segment.embedding = vector_to_bytes(vectors[0] if vectors else merged.embedding)
    segment.summary_source = "offline"
    segment.summary_stale = components.chat_model() is not None
    segment.cid = content_id("segment", {"id": str(segment.id), "summary": segment.summary})
    segment.save()


def _record_move(user_id: int, page: DialoguePage, segment: Segment, plan: mid_term.MergePlan) -> None:
    best = plan.candidates[0] if plan.candidates else None
    kind = LifecycleEvent.Kind.SEGMENT_CREATED if plan.segment_id is None else LifecycleEvent.Kind.SEGMENT_MERGED
    graph.event_record(user_id=user_id, kind=LifecycleEvent.Kind.MOVED_TO_MTM, subject_id=page.id,
                       seq=page.seq, segment_id=str(segment.id))
    graph.event_record(
        user_id=user_id, kind=kind, subject_id=segment.id, page_id=str(page.id),
        best_fscore=round(best.fscore, 4) if best else None,
        best_cos=round(best.cos, 4) if best else None,
        best_jaccard=round(best.jaccard, 4) if best else None,
        candidates=[{"id": c.segment_id, "fscore": round(c.fscore, 4)} for c in plan.candidates[:5]],
    )
    _edge(user_id, segment, MemoryNode.Kind.SEGMENT, page, MemoryNode.Kind.PAGE, "contains")


def segment_text(segment: Segment) -> str:
    return f"{segment.summary}\n{' '.join(segment.keywords)}".strip()


def _segment_point(segment: Segment):
    from memory.engine.ports import VectorPoint
    from memory.models import bytes_to_vector

    return VectorPoint(id=str(segment.id), vector=list(bytes_to_vector(segment.embedding)),
                       text=segment_text(segment),
                       payload={"user_id": str(segment.user_id), "kind": "segment"})


def _sync_move(user_id: int, point_ids: list[str], page_payload: dict, seg_point) -> None:
    index = components.vector_index()
    index.set_payload(user_id=str(user_id), ids=point_ids, payload=page_payload)
    index.upsert([seg_point])


def _refresh_summaries(user_id: int) -> int:
    """With an LLM: one call per segment that grew, outside any transaction (a slow model must not
    hold the user's lock); the extractive summary stays when the model fails."""
    if components.chat_model() is None:
        return 0
    from memory.memory_llm import summarise_segment

    done = 0
    for segment in Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE, summary_stale=True):
        pages = list(DialoguePage.objects.filter(segment=segment).order_by("-seq")[:SUMMARY_PAGES])
        result = summarise_segment(user_id=user_id, texts=[page_text(p.query, p.response) for p in reversed(pages)])
        if result is not None:
            segment.summary, segment.keywords = result.summary, sorted(result.keywords)
            segment.summary_source = "llm"
            vectors = _embed_or_none([segment_text(segment)])
            if vectors:
                segment.embedding = vector_to_bytes(vectors[0])
        segment.summary_stale = False
        segment.save(update_fields=["summary", "keywords", "summary_source", "summary_stale", "embedding"])
        components.vector_index().upsert([_segment_point(segment)])
        done += 1
    return done


def _evict(user_id: int, now: datetime) -> list[str]:
    """Over capacity the coldest segments leave MTM; their pages are archived, not deleted."""
    params = components.memory_params()
    with transaction.atomic():
        _lock_state(user_id)
        active = list(Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE))
        plan = mid_term.plan_eviction([s.to_engine() for s in active], now=now, params=params)
        if not plan.segment_ids:
            return []
        Segment.objects.filter(id__in=plan.segment_ids).update(status=Segment.Status.EVICTED)
        pages = list(DialoguePage.objects.filter(segment_id__in=plan.segment_ids)
                     .only("id", "user_id", "seq", "utterances"))
        page_ids = [str(p.id) for p in pages]
        DialoguePage.objects.filter(id__in=page_ids).update(tier=Tier.ARCHIVED)
        for sid, heat in zip(plan.segment_ids, plan.heats, strict=True):
            graph.event_record(user_id=user_id, kind=LifecycleEvent.Kind.SEGMENT_EVICTED, subject_id=sid,
                               heat=round(heat, 4))
        doomed = list(plan.segment_ids) + page_ids + [tid for p in pages for tid in turn_point_ids(p)]
        transaction.on_commit(lambda: components.vector_index().delete(user_id=str(user_id), ids=doomed))
    return list(plan.segment_ids)


def _promote(user_id: int, now: datetime) -> list[str]:
    from persona.services import persona_promote_segment

    params = components.memory_params()
    active = [s.to_engine() for s in Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE)]
    promoted = []
    for promotion in mid_term.plan_promotions(active, now=now, params=params):
        if persona_promote_segment(user_id=user_id, segment_id=promotion.segment_id, heat=promotion.heat):
            promoted.append(promotion.segment_id)
    return promoted
