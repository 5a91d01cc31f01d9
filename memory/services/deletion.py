"""Deleting memory along its provenance, and forgetting a user. Deletes are final.

Before an operator confirms, `memory_delete(..., dry_run=True)` returns the blast radius: everything
derived from the memory along the graph. Deleting a page removes it with its vectors and keyword
terms; a segment goes with all its pages. What was derived from them follows the rule:
- a KB fact or agent trait whose sources (the pages it was stated in) are all deleted is removed;
  one with other sources keeps them and loses the edge to the deleted ones;
- a trait loses the evidence of the deleted pages and is scored again from the evidence left, in
  order (removed when none is left);
- a segment that keeps pages is derived again (keywords, summary, vector) at once, since its summary
  may quote what was deleted; one left empty is deleted;
- an Exocortex recollection with a deleted member is deleted (its text quotes its members);
- later pages of a dialogue chain get their meta-chain summary again; traces of the deleted pages'
  turns are deleted, other traces lose their entries for what was deleted; events keep no text of it.
Afterwards nothing of the deleted text can be recalled or found by search.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import Q

from memory.adapters import configured
from memory.engine import offline
from memory.engine.content_ids import trait_evidence_object_id
from memory.engine.traits import TRAITS_BY_KEY, update_trait_score
from memory.models import (
    AttachedFile,
    DialoguePage,
    LifecycleEvent,
    MemoryEdge,
    MemoryNode,
    Recollection,
    RetrievalTrace,
    Segment,
    Sona,
    UserMemoryState,
)
from memory.services import graph
from memory.services.common import MemoryInputError, lock_user_state
from memory.services.editing import actor_name, memory_get, memory_point_ids, reason_clean
from memory.services.events import event_record
from memory.services.files import blobs_release_on_commit, page_files_delete
from memory.services.import_files import history_jobs_forget
from memory.services.segments import SUMMARY_PAGES, segment_rederive
from memory.services.supersession import superseded_pages, supersessions_forget_facts
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

SCRUBBED = "[deleted]"

log = logging.getLogger(__name__)


@dataclass
class BlastRadius:
    """What deleting one memory deletes and changes (each entry: id and a short text)."""

    kind: str
    ident: str
    title: str
    pages: list[dict] = field(default_factory=list)
    segments_deleted: list[dict] = field(default_factory=list)
    segments_rederived: list[dict] = field(default_factory=list)
    facts_removed: list[dict] = field(default_factory=list)
    facts_kept: list[dict] = field(default_factory=list)  # with the sources they keep
    agent_traits_removed: list[dict] = field(default_factory=list)
    agent_traits_kept: list[dict] = field(default_factory=list)
    traits_removed: list[dict] = field(default_factory=list)
    traits_rescored: list[dict] = field(default_factory=list)  # key, name, before, after
    recollections_removed: list[dict] = field(default_factory=list)
    files_removed: list[dict] = field(default_factory=list)  # attached to the deleted pages
    traces: int = 0
    final: bool = True  # a delete cannot be undone

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Plan:
    radius: BlastRadius
    pages: list[DialoguePage]
    segments_deleted: list[Segment]
    segments_rederived: list[Segment]
    facts_removed: list[Any]
    facts_kept: list[tuple[Any, list[str]]]
    traits_removed: list[UserTrait]
    traits_rescored: list[tuple[UserTrait, float, list[dict]]]
    traces_deleted: list[Any]
    traces_scrubbed: list[Any]
    recollections: list[Recollection] = field(default_factory=list)


def _page_entry(page: DialoguePage) -> dict:
    return {"id": str(page.id), "seq": page.seq, "text": page.query[:160]}


def _plan(user, kind: str, ident: str) -> _Plan:
    row = memory_get(user=user, kind=kind, ident=ident)
    pages = ([row] if kind == "page" else list(DialoguePage.objects.filter(user=user, segment=row).order_by("seq"))
             if kind == "segment" else [])
    gone = {str(p.id) for p in pages}
    title = {"page": lambda r: r.query[:160], "segment": lambda r: r.label, "fact": lambda r: r.text,
             "agent_trait": lambda r: r.text, "trait": lambda r: TRAITS_BY_KEY[r.key].name}[kind](row)
    radius = BlastRadius(kind=kind, ident=ident, title=title, pages=[_page_entry(p) for p in pages])
    deleted_segments = [row] if kind == "segment" else []
    rederived: list[Segment] = []
    for segment_id in {p.segment_id for p in pages if p.segment_id} - {getattr(row, "id", None)}:
        segment = Segment.objects.get(id=segment_id)
        remaining = DialoguePage.objects.filter(segment=segment).exclude(id__in=[p.id for p in pages]).exists()
        (rederived if remaining else deleted_segments).append(segment)
    radius.segments_deleted = [{"id": str(s.id), "text": s.label} for s in deleted_segments]
    radius.segments_rederived = [{"id": str(s.id), "text": s.label} for s in rederived]
    removed, kept = [], []
    for model, key in ((KnowledgeFact, "fact"), (AgentTrait, "agent_trait")):
        for entry in _derived_entries(user, model, key, gone, {str(s.id) for s in deleted_segments}):
            sources = _sources(user, key, entry) - gone
            if (kind == key and str(entry.pk) == ident) or not sources:
                removed.append(entry)
            else:
                kept.append((entry, sorted(sources)))
    if kind in ("fact", "agent_trait") and row not in removed:
        removed.append(row)
    radius.facts_removed = [{"id": str(e.pk), "text": e.text} for e in removed if isinstance(e, KnowledgeFact)]
    radius.agent_traits_removed = [{"id": str(e.pk), "text": e.text} for e in removed if isinstance(e, AgentTrait)]
    radius.facts_kept = [{"id": str(e.pk), "text": e.text, "sources": s} for e, s in kept
                         if isinstance(e, KnowledgeFact)]
    radius.agent_traits_kept = [{"id": str(e.pk), "text": e.text, "sources": s} for e, s in kept
                                if isinstance(e, AgentTrait)]
    traits_removed, rescored = _trait_changes(user, gone, row if kind == "trait" else None,
                                              {str(e.pk) for e in removed if isinstance(e, KnowledgeFact)})
    radius.traits_removed = [{"key": t.key, "name": TRAITS_BY_KEY[t.key].name, "before": round(t.score, 4)}
                             for t in traits_removed]
    radius.traits_rescored = [{"key": t.key, "name": TRAITS_BY_KEY[t.key].name, "before": round(t.score, 4),
                               "after": round(score, 4)} for t, score, _ in rescored]
    recollections = [r for r in Recollection.objects.filter(user=user).only("id", "text", "members")
                     if gone & set(r.members)] if gone else []
    radius.recollections_removed = [{"id": str(r.id), "text": r.text[:160]} for r in recollections]
    radius.files_removed = [{"cid": f.content_cid, "name": f.name, "size": f.size}
                            for f in AttachedFile.objects.filter(user=user, page_id__in=[p.id for p in pages])]
    traces_deleted = list(RetrievalTrace.objects.filter(user=user, page_id__in=[p.id for p in pages]))
    touched_ids = (gone | {str(e.pk) for e in removed} | {pid for p in pages for pid in memory_point_ids("page", p)}
                   | {str(r.id) for r in recollections})
    # Traces that name what is deleted, or quote a summary that is derived again (it may quote it too).
    summaries = {str(s.id) for s in rederived}
    scrubbed = [t for t in RetrievalTrace.objects.filter(user=user).exclude(id__in=[t.id for t in traces_deleted])
                if _mentions(t.payload, touched_ids | summaries)] if touched_ids else []
    radius.traces = len(traces_deleted) + len(scrubbed)
    return _Plan(radius=radius, pages=pages, segments_deleted=deleted_segments, segments_rederived=rederived,
                 facts_removed=removed, facts_kept=kept, traits_removed=traits_removed, traits_rescored=rescored,
                 traces_deleted=traces_deleted, traces_scrubbed=scrubbed, recollections=recollections)


def _derived_entries(user, model, key: str, pages: set[str], segments: set[str]) -> list:
    """KB facts or agent traits stated in the pages, or extracted from the segments."""
    if not pages and not segments:
        return []
    node_kind = MemoryNode.Kind.FACT if key == "fact" else MemoryNode.Kind.AGENT_TRAIT
    via_graph = set(MemoryEdge.objects.filter(user=user, source__kind=node_kind).filter(
        Q(target__kind=MemoryNode.Kind.PAGE, target__object_id__in=pages)
        | Q(target__kind=MemoryNode.Kind.SEGMENT, target__object_id__in=segments)).values_list(
        "source__object_id", flat=True))
    entries = model.objects.filter(user=user).filter(Q(id__in=list(via_graph)) | Q(segment_id__in=list(segments)))
    by_source = [e for e in model.objects.filter(user=user) if set(e.source_page_ids) & pages]
    return list({str(e.pk): e for e in [*entries, *by_source]}.values())


def _sources(user, key: str, entry) -> set[str]:
    """The pages an entry was stated in: its recorded sources and its stated_in edges."""
    node_kind = MemoryNode.Kind.FACT if key == "fact" else MemoryNode.Kind.AGENT_TRAIT
    linked = MemoryEdge.objects.filter(user=user, source__kind=node_kind, source__object_id=str(entry.pk),
                                       relation="stated_in").values_list("target__object_id", flat=True)
    return set(entry.source_page_ids) | set(linked)


def _trait_changes(user, gone: set[str], deleted: UserTrait | None, facts_gone: set[str]):
    """Traits that lose all their evidence (removed) or some of it (scored again from what is left;
    evidence from turns whose facts were superseded does not count, as in supersession)."""
    removed: list[UserTrait] = [deleted] if deleted is not None else []
    rescored: list[tuple[UserTrait, float, list[dict]]] = []
    if not gone:
        return removed, rescored
    updates = list(LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.TRAIT_UPDATED).order_by("id"))
    affected = {e.subject_id for e in updates if e.payload.get("page_id") in gone}
    ended = superseded_pages(user.pk, deleting=facts_gone) if affected else set()
    for trait in UserTrait.objects.filter(user=user, key__in=affected).exclude(pk=getattr(deleted, "pk", None)):
        left = [e for e in updates if e.subject_id == trait.key and e.payload.get("page_id") not in gone]
        evidence = [e for e in trait.evidence if e.get("page_id") not in gone]
        if not left and not any(e.get("operator") for e in evidence):
            removed.append(trait)
            continue
        score = 0.0
        for event in left:
            if event.payload.get("page_id") not in ended:
                score = update_trait_score(score, _weight(event.payload))
        if trait.pinned or any(e.get("operator") for e in evidence):
            score = trait.score  # an operator's score stands; only the evidence changes
        rescored.append((trait, score, evidence))
    return removed, rescored


def _weight(payload: dict) -> float:
    """The evidence weight of a trait update (recorded, or recovered from before and after:
    after = before + 0.3·weight·(1 − before))."""
    if "weight" in payload:
        return float(payload["weight"])
    before, after = float(payload.get("before", 0.0)), float(payload.get("after", 0.0))
    return 0.0 if before >= 1.0 else max(0.0, min(1.0, (after - before) / (0.3 * (1.0 - before))))


def _mentions(value: Any, ids: set[str]) -> bool:
    """Whether a trace's payload has an entry that names one of `ids`."""
    if isinstance(value, dict):
        return any(_mentions(v, ids) for v in value.values())
    if isinstance(value, list):
        return any(_names(v, ids) or _mentions(v, ids) for v in value)
    return False


def _scrubbed(value: Any, ids: set[str]) -> Any:
    """The payload without the entries that name a deleted memory."""
    if isinstance(value, dict):
        return {k: _scrubbed(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, ids) for v in value if not _names(v, ids)]
    return value


def _names(entry: Any, ids: set[str]) -> bool:
    if isinstance(entry, dict):
        return str(entry.get("id", entry.get("ref", entry.get("segment_id", "")))) in ids
    if isinstance(entry, str):
        return entry in ids or entry.split(":", 1)[-1] in ids
    return False


def memory_delete(*, user, kind: str, ident: str, actor=None, reason: str = "", dry_run: bool = False) -> BlastRadius:
    """Delete a memory and what depends on it only (see the module's rule). With dry_run the blast
    radius is returned and nothing changes."""
    reason = reason_clean(reason)
    if dry_run:
        return _plan(user, kind, ident).radius
    with transaction.atomic():
        lock_user_state(user.pk)
        plan = _plan(user, kind, ident)
        point_ids = _execute(user, plan)
        radius = plan.radius
        event_record(user_id=user.pk, kind=LifecycleEvent.Kind.DELETED, subject_id=ident, target=kind,
                     actor=actor_name(actor), reason=reason,
                     deleted={"pages": len(radius.pages), "segments": len(radius.segments_deleted),
                              "facts": len(radius.facts_removed), "agent_traits": len(radius.agent_traits_removed),
                              "traits": len(radius.traits_removed),
                              "recollections": len(radius.recollections_removed)},
                     rederived=len(radius.segments_rederived), traits_rescored=len(radius.traits_rescored))
        transaction.on_commit(lambda: configured.vector_index().delete(user_id=str(user.pk), ids=point_ids))
    for segment in plan.segments_rederived:  # their summaries may quote what was deleted: at once
        segment_rederive(user_id=user.pk, segment_id=segment.id)
    return radius


def _execute(user, plan: _Plan) -> list[str]:
    page_ids = [p.id for p in plan.pages]
    gone = {str(i) for i in page_ids}
    point_ids = [pid for p in plan.pages for pid in memory_point_ids("page", p)]
    point_ids += [str(s.id) for s in plan.segments_deleted] + [str(e.pk) for e in plan.facts_removed]
    point_ids += [str(r.id) for r in plan.recollections]
    chains = {p.chain_id for p in plan.pages if p.chain_id}
    for trace in plan.traces_deleted:
        trace.delete()
    summaries = {str(s.id) for s in plan.segments_rederived}
    for trace in plan.traces_scrubbed:
        payload = _scrubbed(trace.payload, gone | {str(e.pk) for e in plan.facts_removed} | set(point_ids))
        for entry in payload.get("segments", []):
            if str(entry.get("id")) in summaries:
                entry["summary"] = SCRUBBED
        trace.payload = payload
        trace.save(update_fields=["payload"])
    page_files_delete(user=user, page_ids=page_ids)
    DialoguePage.objects.filter(id__in=page_ids).delete()
    holding = graph.pages_dropped(user_id=user.pk, page_node_pks=MemoryNode.objects.filter(
        user=user, kind=MemoryNode.Kind.PAGE, object_id__in=gone).values_list("pk", flat=True))
    _nodes_delete(user, MemoryNode.Kind.PAGE, gone)
    _chains_resummarise(user, chains)
    Segment.objects.filter(id__in=[s.id for s in plan.segments_deleted]).delete()
    _nodes_delete(user, MemoryNode.Kind.SEGMENT, {str(s.id) for s in plan.segments_deleted})
    graph.nodes_readdress(user_id=user.pk, node_pks=holding)  # the segments left: their trees without the pages
    Segment.objects.filter(id__in=[s.id for s in plan.segments_rederived]).update(rederive=True)
    supersessions_forget_facts(user=user, scrubbed=SCRUBBED,
                               fact_ids=[e.pk for e in plan.facts_removed if isinstance(e, KnowledgeFact)])
    for entry in plan.facts_removed:
        node_kind = MemoryNode.Kind.FACT if isinstance(entry, KnowledgeFact) else MemoryNode.Kind.AGENT_TRAIT
        _nodes_delete(user, node_kind, {str(entry.pk)})
        _events_scrub(user, str(entry.pk))
        entry.delete()
    for entry, _kept in plan.facts_kept:
        entry.source_page_ids = [s for s in entry.source_page_ids if s not in gone]
        entry.save(update_fields=["source_page_ids"])
    for trait in plan.traits_removed:
        _trait_nodes_delete(user, trait.key, None)
        trait.delete()
    for trait, score, evidence in plan.traits_rescored:
        _trait_nodes_delete(user, trait.key, gone)
        trait.score, trait.evidence = score, evidence
        trait.save(update_fields=["score", "evidence", "updated_at"])
    Recollection.objects.filter(id__in=[r.id for r in plan.recollections]).delete()
    _nodes_delete(user, MemoryNode.Kind.RECOLLECTION, {str(r.id) for r in plan.recollections})
    for page_id in gone:
        _events_scrub(user, page_id)
    return point_ids


def _nodes_delete(user, kind: str, object_ids: set[str]) -> None:
    """Nodes of deleted memories, and of their earlier versions ("<id>@<cid>"); edges go with them."""
    if not object_ids:
        return
    versions = Q()
    for object_id in object_ids:
        versions |= Q(object_id__startswith=f"{object_id}@")
    MemoryNode.objects.filter(user=user, kind=kind).filter(Q(object_id__in=object_ids) | versions).delete()


def _trait_nodes_delete(user, key: str, pages: set[str] | None) -> None:
    """A trait's evidence nodes: of the given pages, or all of them."""
    updates = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.TRAIT_UPDATED, subject_id=key)
    page_ids = {str(e.payload.get("page_id")) for e in updates if e.payload.get("page_id")}
    doomed = page_ids if pages is None else page_ids & pages
    MemoryNode.objects.filter(user=user, kind=MemoryNode.Kind.USER_TRAIT,
                              object_id__in=[trait_evidence_object_id(key, p) for p in doomed]).delete()


def _events_scrub(user, subject: str) -> None:
    """Events about a deleted memory keep what happened, not its words."""
    for event in LifecycleEvent.objects.filter(user=user, subject_id=subject):
        payload = dict(event.payload)
        changed = False
        for key in ("text", "before", "after"):
            if key in payload and not isinstance(payload[key], bool | int | float):
                payload[key] = SCRUBBED
                changed = True
        if changed:
            event.payload = payload
            event.save(update_fields=["payload"])


def _chains_resummarise(user, chains: Iterable) -> None:
    """Meta-chain summaries of the chains that lost a page, from the pages left."""
    for chain_id in chains:
        pages = list(DialoguePage.objects.filter(user=user, chain_id=chain_id).order_by("seq"))
        for i, page in enumerate(pages):
            window = pages[max(0, i - SUMMARY_PAGES + 1):i + 1]
            page.meta_chain = offline.summarize([p.query for p in window], max_sentences=2, max_chars=300)
            page.save(update_fields=["meta_chain"])


# ------------------------------------------------------------------ the right to erasure

def user_forget(*, user, actor=None, reason: str = "") -> dict[str, int]:
    """Delete everything of one user's memory: pages, segments, long-term memory, recollections, the graph, traces,
    events (and their text), sonas, the profile, the vectors. The account stays (deleting it is the
    admin's); one event records that it happened, with counts and no content."""
    reason = reason_clean(reason)
    if user is None or not getattr(user, "pk", None):
        raise MemoryInputError("Which user's memory should be forgotten?")
    with transaction.atomic():
        lock_user_state(user.pk)
        counts = {}
        content_cids = set(AttachedFile.objects.filter(user=user).values_list("content_cid", flat=True))
        for label, rows in (("files", AttachedFile.objects.filter(user=user)),
                            ("pages", DialoguePage.objects.filter(user=user)),
                            ("segments", Segment.objects.filter(user=user)),
                            ("facts", KnowledgeFact.objects.filter(user=user)),
                            ("agent_traits", AgentTrait.objects.filter(user=user)),
                            ("traits", UserTrait.objects.filter(user=user)),
                            ("recollections", Recollection.objects.filter(user=user)),
                            ("graph_nodes", MemoryNode.objects.filter(user=user)),
                            ("traces", RetrievalTrace.objects.filter(user=user)),
                            ("events", LifecycleEvent.objects.filter(user=user)),
                            ("sonas", Sona.objects.filter(user=user)),
                            ("profile", UserProfile.objects.filter(user=user))):
            counts[label] = rows.count()
            rows.delete()
        counts["imports"] = history_jobs_forget(user=user)  # their uploads' files with them
        # The claim of a running import, taken back: its next page finds it lost and stops.
        UserMemoryState.objects.filter(user=user).update(maintenance_due=False, maintenance_failures=0,
                                                         last_error="", import_claim="", import_claimed_until=None)
        event_record(user_id=user.pk, kind=LifecycleEvent.Kind.USER_FORGOTTEN, subject_id=str(user.pk),
                     actor=actor_name(actor), reason=reason, counts=counts)
        transaction.on_commit(lambda: configured.vector_index().delete_user(user_id=str(user.pk)))
        transaction.on_commit(database_scrub)
        blobs_release_on_commit(content_cids)
    return counts


def database_scrub() -> None:
    """After an erase, no copy of the deleted rows' text left in the database's files: SQLite
    zeroes deleted content in the database file (secure_delete, settings), and its write-ahead log,
    which still holds the pages as they were, is checkpointed and truncated here. (PostgreSQL keeps
    dead rows until VACUUM, which runs on its own schedule.)"""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        busy, _, _ = cursor.fetchone()
    if busy:  # a reader held an older snapshot: the log is truncated at the next checkpoint
        log.warning("event=wal_checkpoint_busy after=user_forgotten")

