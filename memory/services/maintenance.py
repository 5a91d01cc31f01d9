"""Maintenance off the reply path: meta chain, STM → MTM, eviction, promotion to LPM.

Every step reads its work from the database inside a transaction that holds the user's lock
row and re-checks it there, so a run is idempotent, resumable after a crash, and two workers
(threads or processes) for one user never move a page twice.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Exists, ExpressionWrapper, F, FloatField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory.adapters import configured
from memory.config import memory_params
from memory.engine import mid_term, offline
from memory.engine.short_term import chain_link, stm_overflow
from memory.engine.similarity import cosine
from memory.models import (
    INTERRUPTED_MODEL_NAME,
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    PageStatus,
    Segment,
    Tier,
    bytes_to_vector,
    vector_to_bytes,
)
from memory.policies import registry as models
from memory.selectors.maintenance import rederive_segments_of, stopped_turn_pages_of, unembedded_pages_of
from memory.services import graph
from memory.services.common import embed_or_none, lock_user_state, lock_user_state_writing
from memory.services.events import event_record
from memory.services.facts import facts_at_turn, facts_from_turns
from memory.services.long_term import promote_segment
from memory.services.model_tasks import summarise_segment
from memory.services.pages import page_point, page_reply_store, page_row_text, page_text
from memory.services.segments import (
    SUMMARY_PAGES,
    page_move_to_mtm,
    segment_point,
    segment_rederive,
    segment_text,
    segments_evict,
)
from memory.services.supersession import supersession_detect_pending, unchecked_facts_of
from memory.services.utterances import index_turns

log = logging.getLogger(__name__)

_user_locks: defaultdict[int, threading.Lock] = defaultdict(threading.Lock)
MAX_RETRIES = 3
# What the meta chain reads of the page before a new one: its vector and chain, and what its
# graph node is made of (not its utterances or sources).
PREVIOUS_FIELDS = ("id", "user_id", "seq", "query", "response", "timestamp", "chain_id", "embedding")


@dataclass
class MaintenanceReport:
    interrupted: int = 0  # pages of stopped turns completed without a reply
    fact_changes: list = field(default_factory=list)  # facts the new turns stated (memory/services/facts.py)
    embedded: int = 0
    turns_indexed: int = 0
    chained: int = 0
    summarised: int = 0
    rederived: int = 0  # segments derived again after an operator's delete or correction
    moved: int = 0
    created_segments: int = 0
    evicted: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)
    # What each memory model's step stored, by step name ("recollections": the Exocortex's)
    models: dict[str, list[str]] = field(default_factory=dict)


def maintenance_run(*, user_id: int, now: datetime | None = None, index_turns_now: bool = True,
                    recollect: bool = True, pause: Callable[[], object] | None = None) -> MaintenanceReport:
    """All steps for one user, serialised with any other run for that user in this process.

    A bulk import passes index_turns_now=False and indexes utterances once per batch, and
    recollect=False: the models' steps (recollections: memory/policies/exocortex/) belong to a live turn's context.
    `pause` is called between steps, outside any transaction: the low-priority lane
    (memory/runtime/lane.py) waits there while replies are under way.
    """
    between_steps = pause or (lambda: None)
    report = MaintenanceReport()
    now = now or timezone.now()  # the memory's time: an import's maintenance runs at the conversation's
    with _user_locks[user_id]:
        try:
            # The occasional steps run when a one-row read (EXISTS) finds work for them. A write's
            # run usually finds none, and the steps' own reads of their rows cost more: 10-14 ms a
            # write on a 10,000-page store (scripts/write_steps.py; BENCHMARKS.md, "Maintenance
            # asks first"). The four are asked in one statement, first.
            work = _work_found(user_id)
            # By wall-clock time, not `now` (a stopped turn is found by how long it has waited).
            if work.stopped:
                report.interrupted = pages_interrupted_complete(user_id=user_id)
            # Facts first: a fact told, or a change, is known before the next reply.
            if facts_at_turn():
                report.fact_changes = facts_from_turns(user_id=user_id, now=now)
                between_steps()
            # A stopped turn completed just now is embedded there, or here when its embedding failed.
            if work.unembedded or report.interrupted:
                report.embedded = _embed_missing(user_id)
                between_steps()
            # Asked by the step's own read, not an EXISTS first: a chat turn's page always reaches
            # its run with its utterances not yet indexed.
            if index_turns_now:
                report.turns_indexed = index_turns(user_id=user_id)
                between_steps()
            # One transaction for the graph's writes: a segment that took several pages, or a page
            # that got its chain edge and then moved, is re-addressed once (graph.readdress_once).
            # One transaction, also where a benchmark turns re-addressing off (readdress_once is
            # then no transaction of its own); no savepoint of its own inside readdress_once's.
            with graph.readdress_once(), transaction.atomic(savepoint=False):
                # The user's lock, held to the block's end: the chain and the moves take it no more.
                lock_user_state(user_id)
                report.chained = _link_chains(user_id)
                _overflow_stm(user_id, report, now)
                if work.rederive:
                    report.rederived = _rederive_segments(user_id)
            between_steps()
            report.summarised = _refresh_summaries(user_id)
            # Counted with the run's first read: that count and the segments made since are what
            # eviction's own COUNT would find (one made meanwhile by another run is seen by the next).
            active = None if work.active_segments is None else work.active_segments + report.created_segments
            report.evicted = segments_evict(user_id=user_id, now=now, active=active)
            between_steps()
            report.promoted = _promote(user_id, now)
            # Promotion's facts are unchecked (a turn's are checked as they are stored).
            if work.unchecked or report.promoted:
                supersession_detect_pending(user_id=user_id, at=now)
            between_steps()
            if recollect:  # the memory models' steps (memory/policies/): the Exocortex's recollections
                _model_steps(user_id, report, now)
        except Exception as exc:
            _record_failure(user_id, exc)
            raise
        _settle(user_id)
    log.debug("event=maintenance_done user=%s moved=%s evicted=%s promoted=%s", user_id, report.moved,
             len(report.evicted), len(report.promoted))
    return report


@dataclass(frozen=True)
class _WorkFound:
    stopped: bool = True  # pages of stopped turns (stopped_turn_pages_of)
    unembedded: bool = True  # pages whose embedding failed (unembedded_pages_of)
    rederive: bool = True  # segments to derive again (rederive_segments_of)
    unchecked: bool = True  # facts no supersession detector has seen (unchecked_facts_of)
    active_segments: int | None = None  # the user's active segments, when counted


def _work_found(user_id: int) -> _WorkFound:
    """Whether each occasional step has work, as four EXISTS beside the user's row in one statement
    (they were four), and how many active segments eviction weighs. A user without a row (deleted
    meanwhile) has every step asked by its own read."""
    active = (Segment.objects.filter(user_id=OuterRef("pk"), status=Segment.Status.ACTIVE).order_by()
              .values("user_id").annotate(count=Count("id")).values("count"))
    found = (get_user_model().objects.filter(pk=user_id)
             .annotate(stopped=Exists(stopped_turn_pages_of(user_id)), unembedded=Exists(unembedded_pages_of(user_id)),
                       rederive=Exists(rederive_segments_of(user_id)), unchecked=Exists(unchecked_facts_of(user_id)),
                       active_segments=Coalesce(Subquery(active), 0))
             .values("stopped", "unembedded", "rederive", "unchecked", "active_segments").first())
    return _WorkFound(**found) if found is not None else _WorkFound()


def _model_steps(user_id: int, report: MaintenanceReport, now: datetime) -> None:
    """Each memory model's maintenance step (memory/policies/registry.py on_maintenance), in turn."""
    for name, step in models.maintenance_steps().items():
        report.models[name] = [str(row.id) for row in step(user_id=user_id, now=now)]


def _settle(user_id: int) -> None:
    """The run is done: the user is no longer due, unless a reply was stored while it ran (the lane
    pauses a run while replies are under way). That page's own job may be lost with its worker, so
    its flag must stay."""
    with transaction.atomic():
        # The lock by the run's own columns, then whether it is still due in a statement of its
        # own: read in the first, a reply committed while it waited for the lock would not be seen.
        state = lock_user_state_writing(user_id, maintenance_failures=0, last_maintenance_at=timezone.now(),
                                        last_error="")
        state.update(maintenance_due=Exists(DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE,
                                                                         chain_done=False)))


def pages_interrupted_complete(*, user_id: int) -> int:
    """Complete the user's stopped_turn_pages, so that the message is recalled, moves through the
    tiers and is indexed like any other: each with the offline engine's reply from memory (the
    question answered when the person comes back; services/turns.py turn_resumed_reply), marked
    as resumed (INTERRUPTED_MODEL_NAME). Returns how many."""
    from memory.services.turns import turn_resumed_reply  # turns reaches maintenance through its follow-up

    stale = list(stopped_turn_pages_of(user_id).select_related("user", "sona").order_by("seq"))
    completed = 0
    for page in stale:
        reply = turn_resumed_reply(page=page)  # outside the user's lock: a recall and the offline engine
        with transaction.atomic():
            # Once: another process's maintenance (or the turn itself) may have completed it meanwhile.
            lock_user_state(user_id)
            if not DialoguePage.objects.filter(pk=page.pk, status=PageStatus.PENDING).exists():
                continue
            page_reply_store(page=page, response=reply, reply_model=INTERRUPTED_MODEL_NAME)
        completed += 1
        log.warning("event=page_interrupted_completed user=%s page=%s seq=%s", user_id, page.id, page.seq)
    return completed


def _record_failure(user_id: int, exc: Exception) -> None:
    with transaction.atomic():
        state = lock_user_state(user_id)
        state.maintenance_due = True
        state.maintenance_failures += 1
        state.last_error = repr(exc)[:1000]
        state.save(update_fields=["maintenance_due", "maintenance_failures", "last_error"])
        event_record(user_id=user_id, kind=LifecycleEvent.Kind.MAINTENANCE_FAILED, error=repr(exc)[:500])


def _embed_missing(user_id: int) -> int:
    """Pages whose embedding failed at reply time get one now."""
    pages = list(unembedded_pages_of(user_id).order_by("seq")[:64])
    if not pages:
        return 0
    vectors = embed_or_none([page_row_text(p) for p in pages])
    if vectors is None:
        raise RuntimeError("the embedder is unavailable; pages stay queued for embedding")
    points = []
    with transaction.atomic():
        lock_user_state(user_id)
        for page, vector in zip(pages, vectors, strict=True):
            page.embedding = vector_to_bytes(vector)
            page.save(update_fields=["embedding"])
            points.append(page_point(page, vector))
        transaction.on_commit(lambda: configured.vector_index().upsert(points))
    return len(pages)


def chain_newest_pages(chain_id, count: int) -> QuerySet[DialoguePage]:
    """The newest `count` pages of a meta chain (id, seq and query: what its summary reads), by the
    chain alone (its id is a page's, so no other user's): with the user's id beside it, SQLite
    walked the user's pages by (user, seq) until it found them, all of them for a short chain, on
    every linked page."""
    return DialoguePage.objects.filter(chain_id=chain_id).order_by("-seq").only("id", "seq", "query")[:count]


def _link_chains(user_id: int) -> int:
    """Meta chain: link each new page to the previous one when the topic continues, and summarise.
    Called holding the user's lock (maintenance_run takes it for the chain and the moves)."""
    params = memory_params()
    # The pages read under the user's lock, in one transaction: none can be chained meanwhile by
    # another run, so each is not read again, nor marked in a savepoint of its own.
    with transaction.atomic():
        todo = list(DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, chain_done=False)
                    .exclude(embedding=b"").order_by("seq"))
        for page in todo:
            prev = (DialoguePage.objects.filter(user_id=user_id, seq__lt=page.seq, status=PageStatus.COMPLETE)
                    .order_by("-seq").only(*PREVIOUS_FIELDS).first())
            similarity = cosine(bytes_to_vector(prev.embedding), bytes_to_vector(page.embedding)) if prev else None
            decision = chain_link(similarity=similarity, threshold=params.chain_threshold)
            chain_pages = [page]
            if decision.continues and prev is not None:
                page.previous = prev
                page.chain_id = prev.chain_id or prev.id
                chain_pages = list(chain_newest_pages(page.chain_id, SUMMARY_PAGES - 1)) + [page]
                graph.edge_link(user_id=user_id, source=page, source_kind=MemoryNode.Kind.PAGE, target=prev,
                                target_kind=MemoryNode.Kind.PAGE, relation="follows", weight=decision.similarity)
            else:
                page.chain_id = page.id
            page.meta_chain = offline.summarize([p.query for p in sorted(chain_pages, key=lambda p: p.seq)],
                                                max_sentences=2, max_chars=300)
            page.chain_done = True
            page.save(update_fields=["previous", "chain_id", "meta_chain", "chain_done"])
    return len(todo)


def _overflow_stm(user_id: int, report: MaintenanceReport, now: datetime) -> None:
    params = memory_params()
    ids = [str(i) for i in DialoguePage.objects.filter(user_id=user_id, tier=Tier.STM,
                                                        status=PageStatus.COMPLETE)
           .order_by("seq").values_list("id", flat=True)]
    for page_id in stm_overflow(ids, capacity=params.stm_capacity).move_to_mtm:
        created = page_move_to_mtm(user_id=user_id, page_id=page_id, now=now, locked=True)
        if created is not None:
            report.moved += 1
            report.created_segments += int(created)


def _refresh_summaries(user_id: int) -> int:
    """With an LLM: one call per segment that grew, outside any transaction (a slow model must not
    hold the user's lock); the extractive summary stays when the model fails."""
    if configured.chat_model() is None:
        return 0
    done = 0
    for segment in Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE, summary_stale=True):
        pages = list(DialoguePage.objects.filter(segment=segment).order_by("-seq")[:SUMMARY_PAGES])
        result = summarise_segment(user_id=user_id, texts=[page_text(p.query, p.response) for p in reversed(pages)])
        if result is not None:
            segment.summary, segment.keywords = result.summary, sorted(result.keywords)
            segment.summary_source = "llm"
            vectors = embed_or_none([segment_text(segment)])
            if vectors:
                segment.embedding = vector_to_bytes(vectors[0])
        segment.summary_stale = False
        segment.save(update_fields=["summary", "keywords", "summary_source", "summary_stale", "embedding"])
        if not segment.repressed:
            configured.vector_index().upsert([segment_point(segment)])
        done += 1
    return done


def _rederive_segments(user_id: int) -> int:
    """Segments whose pages were deleted or corrected get their keywords, summary and vector again."""
    todo = list(rederive_segments_of(user_id).values_list("id", flat=True))
    for segment_id in todo:
        segment_rederive(user_id=user_id, segment_id=segment_id)
    return len(todo)


def _promote(user_id: int, now: datetime) -> list[str]:
    params = memory_params()
    # Only segments that could be hot enough: heat without its recency term above
    # mid_term.promotion_floor (less a hair, for SQL's float arithmetic); plan_promotions decides.
    # Reading all 200 active segments on every run was a seventh of a write's own work.
    floor = mid_term.promotion_floor(params)
    base = ExpressionWrapper(F("n_visit") * params.heat_alpha + F("l_interaction") * params.heat_beta,
                             output_field=FloatField())
    active = [s.to_engine(with_embedding=False) for s in
              Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE, l_interaction__gt=0)
              .alias(base=base).filter(base__gt=floor - 1e-9 * max(1.0, abs(floor))).defer("embedding")]
    promoted = []
    for promotion in mid_term.plan_promotions(active, now=now, params=params):
        if promote_segment(user_id=user_id, segment_id=promotion.segment_id, heat=promotion.heat, now=now):
            promoted.append(promotion.segment_id)
    return promoted
