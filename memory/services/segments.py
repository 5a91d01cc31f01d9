"""Mid-term memory's segments: a page joins its best segment by Fscore (or starts one), the
segment's keywords, summary and vector follow it, and over capacity the coldest segments leave."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory.adapters import configured
from memory.config import memory_params
from memory.engine import mid_term, offline
from memory.engine.ports import VectorPoint
from memory.engine.similarity import mean_vector
from memory.engine.types import SegmentView
from memory.models import (
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    Segment,
    Tier,
    bytes_to_array,
    bytes_to_vector,
    vector_to_bytes,
)
from memory.services import graph
from memory.services.common import lock_user_state
from memory.services.events import event_of, events_record
from memory.services.pages import page_text
from memory.services.utterances import turn_point_ids

# Pages a segment's keywords and summary are made from: the newest.
SUMMARY_PAGES = 12
# What keywords, summary and vector read of those pages (not their utterances or sources).
SUMMARY_FIELDS = ("id", "seq", "query", "response", "reply_model", "keywords", "embedding")


def page_move_to_mtm(*, user_id: int, page_id: str, now: datetime | None = None, locked: bool = False) -> bool | None:
    """Move one page into its best segment (Fscore > θ) or a new one, at the memory's time `now`
    (an imported conversation's clock; the wall clock when not given). `locked`: the caller's
    transaction already holds the user's lock (maintenance's), so it is not taken again.

    Returns True for a new segment, False for a merge, None when the page had already moved.
    """
    at = now or timezone.now()
    params = memory_params()
    with transaction.atomic():
        if not locked:
            lock_user_state(user_id)
        page = DialoguePage.objects.get(id=page_id, user_id=user_id)
        if page.tier != Tier.STM:
            return None
        view = page.to_engine()
        plan = mid_term.plan_merge(view, _merge_topics(user_id), params=params)
        if plan.segment_id is None:
            segment = Segment(user_id=user_id, last_access=at)
            engine_segment = SegmentView(id="", summary="", keywords=frozenset(), embedding=(), n_visit=0,
                                         l_interaction=0, last_access=at)
        else:
            segment = Segment.objects.get(user_id=user_id, id=plan.segment_id)
            engine_segment = segment.to_engine()
        merged = mid_term.segment_after_merge(engine_segment, view)
        # moved_at is the wall clock: promotion reads the pages moved since its last run by it.
        page.tier, page.moved_at = Tier.MTM, timezone.now()
        node = _refresh_segment(segment, merged, page)
        page.segment = segment
        page.save(update_fields=["tier", "segment", "moved_at"])
        _record_move(user_id, page, segment, node, plan, at)
        seg_point = segment_point(segment)
        page_payload = {"tier": Tier.MTM, "segment_id": str(segment.id)}
        point_ids = [str(page.id)] + (turn_point_ids(page) if page.turns_indexed else [])
        transaction.on_commit(lambda: _sync_move(user_id, point_ids, page_payload, seg_point))
    return plan.segment_id is None


def _merge_topics(user_id: int) -> list[mid_term.SegmentTopic]:
    """The active segments a page may join, as Fscore reads them: id, keywords and vector only.
    A repressed segment takes no new pages: they would be hidden with it. (Whole rows, their
    vectors as tuples of Python floats, were a quarter of a write's own work at 200 segments.)"""
    rows = Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE, repressed=False)
    return [mid_term.SegmentTopic(str(pk), frozenset(keywords), bytes_to_array(blob))
            for pk, keywords, blob in rows.values_list("id", "keywords", "embedding")]


def _refresh_segment(segment: Segment, merged: SegmentView, page: DialoguePage) -> MemoryNode:
    """Counters from the engine; keywords, summary and e_s recomputed as the segment grows.

    e_s is the unit mean of the vectors of the pages its summary is made of (the newest
    SUMMARY_PAGES): what the paper's embedding of the summary stands for, without embedding it
    (segment_vector). (The centroid of all its pages was tried: a large segment's centroid is
    close to every casual page, so one segment swallowed most of a conversation.)
    """
    recent = [] if segment._state.adding else list(
        DialoguePage.objects.filter(segment=segment).order_by("-seq").only(*SUMMARY_FIELDS)[:SUMMARY_PAGES])
    members = [page] + recent
    segment.l_interaction = merged.l_interaction
    segment.page_count = merged.page_count
    segment.keywords = sorted(mid_term.segment_keywords([frozenset(p.keywords) for p in members]))
    segment.summary = offline.summarize(
        [page_text(p.query, p.response, p.reply_model) for p in reversed(members)], max_sentences=3,
        max_chars=400)
    segment.embedding = vector_to_bytes(segment_vector(members) or merged.embedding)
    segment.summary_source = "offline"
    segment.summary_stale = configured.chat_model() is not None
    segment.save()
    return graph.row_node_put(user_id=segment.user_id, kind=MemoryNode.Kind.SEGMENT, row=segment)


def _record_move(user_id: int, page: DialoguePage, segment: Segment, node: MemoryNode,
                 plan: mid_term.MergePlan, at: datetime) -> None:
    """The move's lifecycle events and the segment's "contains" edge to the page. `node` is the
    segment's node as its refresh just put it: not read back, since its block lists every page the
    segment holds."""
    best = plan.candidates[0] if plan.candidates else None
    kind = LifecycleEvent.Kind.SEGMENT_CREATED if plan.segment_id is None else LifecycleEvent.Kind.SEGMENT_MERGED
    events_record([
        event_of(user_id=user_id, kind=LifecycleEvent.Kind.MOVED_TO_MTM, subject_id=page.id, at=at,
                 seq=page.seq, segment_id=str(segment.id)),
        event_of(user_id=user_id, kind=kind, subject_id=segment.id, at=at, page_id=str(page.id), seq=page.seq,
                 best_fscore=round(best.fscore, 4) if best else None,
                 best_cos=round(best.cos, 4) if best else None,
                 best_jaccard=round(best.jaccard, 4) if best else None,
                 candidates=[{"id": c.segment_id, "fscore": round(c.fscore, 4)} for c in plan.candidates[:5]]),
    ])
    edge = graph.edge_put(user_id=user_id, source=node, relation="contains",
                          target=graph.node_of(user_id=user_id, obj=page, kind=MemoryNode.Kind.PAGE))
    segment.cid = edge.source.cid


def segment_rederive(*, user_id: int, segment_id) -> None:
    """Keywords, summary and vector of a segment from the pages it holds now (after a page of it
    was deleted or corrected), as when it grew; its old summary may quote what is gone."""
    with transaction.atomic():
        lock_user_state(user_id)
        segment = Segment.objects.filter(user_id=user_id, id=segment_id).first()
        if segment is None or not segment.rederive:
            return
        members = list(DialoguePage.objects.filter(segment=segment).order_by("-seq")[:SUMMARY_PAGES])
        segment.keywords = sorted(mid_term.segment_keywords([frozenset(p.keywords) for p in members]))
        segment.summary = offline.summarize([page_text(p.query, p.response, p.reply_model) for p in reversed(members)],
                                            max_sentences=3, max_chars=400)
        vector = segment_vector(members)
        if vector:
            segment.embedding = vector_to_bytes(vector)
        segment.page_count = DialoguePage.objects.filter(segment=segment).count()
        segment.summary_source = "offline"
        segment.summary_stale = configured.chat_model() is not None
        segment.rederive = False
        segment.save()
        graph.row_node_put(user_id=user_id, kind=MemoryNode.Kind.SEGMENT, row=segment)
        if vector and not segment.repressed and segment.status == Segment.Status.ACTIVE:
            point = segment_point(segment)
            transaction.on_commit(lambda: configured.vector_index().upsert([point]))


def segment_vector(members: list[DialoguePage]) -> tuple[float, ...]:
    """A segment's vector from the pages its summary is made of: their vectors' unit mean (empty
    when none has one). Embedding the summary instead added nothing to LoCoMo R@10 (BENCHMARKS.md,
    "Writes at the embedding floor") and was a sixth of a live write's MiniLM time."""
    return mean_vector([bytes_to_array(page.embedding) for page in members if page.embedding])


def segments_holding_pins(user_id: int) -> QuerySet:
    """Ids of the user's segments that hold a pinned page, read through the partial index
    `page_pinned` (eviction asks on every run past capacity; by (user, seq) it walked every page)."""
    return (DialoguePage.objects.filter(user_id=user_id, pinned=True, segment__isnull=False)
            .values_list("segment_id", flat=True))


def segment_text(segment: Segment) -> str:
    return f"{segment.summary}\n{' '.join(segment.keywords)}".strip()


def segment_point(segment: Segment) -> VectorPoint:
    return VectorPoint(id=str(segment.id), vector=list(bytes_to_vector(segment.embedding)),
                       text=segment_text(segment),
                       payload={"user_id": str(segment.user_id), "kind": "segment"})


def _sync_move(user_id: int, point_ids: list[str], page_payload: dict, seg_point) -> None:
    index = configured.vector_index()
    index.set_payload(user_id=str(user_id), ids=point_ids, payload=page_payload)
    index.upsert([seg_point])  # the merge plan never picks a repressed segment, so this one is not




def segments_evict(*, user_id: int, now: datetime, active: int | None = None) -> list[str]:
    """Over capacity the coldest segments leave MTM; their pages are archived, not deleted.
    `active`: how many active segments the caller counted (maintenance, with its first read)."""
    params = memory_params()
    # Under capacity nothing leaves (plan_eviction): one COUNT, no lock, no rows read. A segment
    # made meanwhile by another run is seen by the next.
    if active is None:
        active = Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE).count()
    if active <= params.mtm_capacity:
        return []
    with transaction.atomic():
        lock_user_state(user_id)
        active = list(Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE).defer("embedding"))
        # A segment holding a pinned page is as pinned as one pinned itself.
        holding_pins = set(segments_holding_pins(user_id))
        views = [replace(s.to_engine(with_embedding=False), pinned=s.pinned or s.id in holding_pins)
                 for s in active]
        plan = mid_term.plan_eviction(views, now=now, params=params)
        if not plan.segment_ids:
            return []
        Segment.objects.filter(id__in=plan.segment_ids).update(status=Segment.Status.EVICTED)
        pages = list(DialoguePage.objects.filter(segment_id__in=plan.segment_ids)
                     .only("id", "user_id", "seq", "utterances"))
        page_ids = [str(p.id) for p in pages]
        DialoguePage.objects.filter(id__in=page_ids).update(tier=Tier.ARCHIVED)
        events_record([event_of(user_id=user_id, kind=LifecycleEvent.Kind.SEGMENT_EVICTED, subject_id=sid, at=now,
                                heat=round(heat, 4)) for sid, heat in zip(plan.segment_ids, plan.heats, strict=True)])
        doomed = list(plan.segment_ids) + page_ids + [tid for p in pages for tid in turn_point_ids(p)]
        transaction.on_commit(lambda: configured.vector_index().delete(user_id=str(user_id), ids=doomed))
    return list(plan.segment_ids)
