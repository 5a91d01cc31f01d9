"""What the inspector reads: every tier of one user's memory, its lifecycle log, its traces.

Reads only; the views (memory/web/inspector.py) decide who may see whom (`can_inspect`). The log is
read once per user and process and then only its new events (it is append-only; a rewrite of old
events, such as a deletion scrubbing their text, records an event of its own and reloads it).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Q
from django.utils import timezone

from memory.config import memory_params
from memory.engine import exocortex as exo
from memory.engine.content_ids import trait_evidence_object_id
from memory.engine.heat import heat_breakdown
from memory.engine.lifecycle import EventRecord, Replay, decay_curve, heat_lines, heat_log, span_of
from memory.engine.traits import CATEGORIES, TRAIT_CATALOGUE, TRAITS_BY_KEY
from memory.inspector import charts
from memory.inspector.charts import Membership
from memory.models import (
    AttachedFile,
    DialoguePage,
    LifecycleEvent,
    MemoryEdge,
    MemoryNode,
    PageStatus,
    Recollection,
    RetrievalTrace,
    Segment,
    Sona,
    Tier,
    UserMemoryState,
)
from memory.recall.base import default_policy_name, policy_or_none
from memory.recall.exocortex import decay_settings_of
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait

INSPECT_ANY = "memory.inspect_any_user"
# Events whose arrival means older events were rewritten: the cached log is read again whole.
REWRITING_KINDS = frozenset({"deleted", "user_forgotten"})
EVENT_LABELS = dict(LifecycleEvent.Kind.choices)


def can_inspect(viewer, target) -> bool:
    """A person sees their own memory; staff with the permission (not is_superuser alone) anyone's."""
    return viewer.is_authenticated and (viewer.pk == target.pk or viewer.has_perm(INSPECT_ANY))


EDIT_ANY = "memory.edit_any_user"


def can_edit(viewer, target) -> bool:
    """A person edits their own memory; staff with the permission anyone's."""
    return viewer.is_authenticated and (viewer.pk == target.pk or viewer.has_perm(EDIT_ANY))


@dataclass(frozen=True)
class MemoryHandle:
    """One memory as its action bar and correction form show it."""

    kind: str
    ident: str
    label: str
    pinned: bool
    repressed: bool
    version: int
    values: dict[str, Any]  # what a correction starts from


def memory_for_actions(*, user, kind: str, ident: str) -> MemoryHandle | None:
    model = {"page": DialoguePage, "segment": Segment, "fact": KnowledgeFact, "agent_trait": AgentTrait,
             "trait": UserTrait}.get(kind)
    if model is None:
        return None
    if kind == "trait":
        if ident not in TRAITS_BY_KEY:
            return None
        row = UserTrait.objects.filter(user=user, key=ident).first() or UserTrait(user=user, key=ident)
    else:
        found = _uuids([ident])
        row = model.objects.filter(user=user, pk=found[0]).first() if found else None
    return None if row is None else handle_of(kind, row)


def handle_of(kind: str, row) -> MemoryHandle:
    """The action bar's view of a row already read (a list shows many without a query each)."""
    values = {"page": lambda r: {"query": r.query, "response": r.response},
              "segment": lambda r: {"summary": r.summary, "keywords": " ".join(r.keywords)},
              "fact": lambda r: {"text": r.text}, "agent_trait": lambda r: {"text": r.text},
              "trait": lambda r: {"score": round(r.score, 4), "note": ""}}[kind](row)
    label = {"page": lambda r: r.query[:80], "segment": lambda r: r.label, "fact": lambda r: r.text[:80],
             "agent_trait": lambda r: r.text[:80], "trait": lambda r: TRAITS_BY_KEY[r.key].name}[kind](row)
    return MemoryHandle(kind=kind, ident=row.key if kind == "trait" else str(row.pk), label=label,
                        pinned=row.pinned, repressed=row.repressed, version=row.version, values=values)


def user_named(username: str):
    return get_user_model().objects.filter(username=username).first()


def switchable_users(viewer, *, limit: int = 500) -> list[str]:
    """The usernames the viewer may pick in the user switcher."""
    if not viewer.has_perm(INSPECT_ANY):
        return [viewer.get_username()]
    return list(get_user_model().objects.order_by("username").values_list("username", flat=True)[:limit])


# ------------------------------------------------------------------ the lifecycle log

class _LogCache:
    """Each user's events as EventRecords, oldest first, kept per process and extended with the
    events written since (at most `size` users)."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._logs: OrderedDict[int, list[EventRecord]] = OrderedDict()
        self._replays: dict[int, Replay] = {}
        self._derived: dict[int, dict[Any, Any]] = {}  # what was computed from the log as it is now
        self._lock = threading.Lock()

    def events(self, user_id: int) -> list[EventRecord]:
        with self._lock:
            cached = self._logs.get(user_id)
        after = cached[-1].id if cached else 0
        fresh = _read_events(user_id, after_id=after)
        if cached is not None and (any(e.kind in REWRITING_KINDS for e in fresh) or _shrunk(user_id, cached)):
            cached, fresh = None, _read_events(user_id, after_id=0)
        log = (cached or []) + fresh if fresh or cached is None else cached
        with self._lock:
            self._logs[user_id] = log
            self._logs.move_to_end(user_id)
            if fresh or cached is None:
                self._replays.pop(user_id, None)
                self._derived.pop(user_id, None)
            while len(self._logs) > self.size:
                evicted, _ = self._logs.popitem(last=False)
                self._replays.pop(evicted, None)
                self._derived.pop(evicted, None)
        return log

    def derived(self, user_id: int, key: Any, compute: Callable[[list[EventRecord]], Any]) -> Any:
        """`compute(log)` once per version of the user's log (the log only grows: a new event
        makes a new version)."""
        log = self.events(user_id)
        with self._lock:
            found = self._derived.get(user_id, {}).get(key)
            if found is not None and found[0] is log:
                return found[1]
        value = compute(log)
        with self._lock:
            self._derived.setdefault(user_id, {})[key] = (log, value)
        return value

    def replay(self, user_id: int) -> Replay:
        log = self.events(user_id)
        with self._lock:
            replay = self._replays.get(user_id)
            if replay is None or replay.events is not log:
                replay = self._replays[user_id] = Replay(log)
            return replay

    def clear(self) -> None:
        with self._lock:
            self._logs.clear()
            self._replays.clear()
            self._derived.clear()


def _shrunk(user_id: int, cached: list[EventRecord]) -> bool:
    """Events were deleted (a user forgotten and written again): the first cached one is gone."""
    return not LifecycleEvent.objects.filter(user_id=user_id, id=cached[0].id).exists() if cached else False


def _read_events(user_id: int, *, after_id: int) -> list[EventRecord]:
    rows = (LifecycleEvent.objects.filter(user_id=user_id, id__gt=after_id).order_by("id")
            .values_list("id", "kind", "subject_id", "occurred_at", "payload"))
    return [EventRecord(id=i, kind=kind, subject=subject, at=at, payload=payload or {})
            for i, kind, subject, at, payload in rows.iterator(chunk_size=5000)]


_log_cache = _LogCache()


def event_log(*, user) -> list[EventRecord]:
    return _log_cache.events(user.pk)


def replay_of(*, user) -> Replay:
    return _log_cache.replay(user.pk)


def event_log_forget_cache() -> None:
    _log_cache.clear()


# ------------------------------------------------------------------ overview

@dataclass
class Overview:
    counts: dict[str, tuple[int, int]]  # label -> (held, capacity)
    pages: int
    pending: int
    archived: int
    evicted_segments: int
    events: int
    traces: int
    database_rows: int
    state: UserMemoryState | None
    recent_events: list[LifecycleEvent]
    default_policy: str
    sona_policies: list[tuple[str, str]]
    first_at: datetime | None = None
    last_at: datetime | None = None


def overview(*, user) -> Overview:
    params = memory_params()
    pages = DialoguePage.objects.filter(user=user)
    counts = {
        "STM pages": (pages.filter(tier=Tier.STM, status=PageStatus.COMPLETE).count(), params.stm_capacity),
        "MTM segments": (Segment.objects.filter(user=user, status=Segment.Status.ACTIVE).count(),
                         params.mtm_capacity),
        "KB facts": (KnowledgeFact.objects.filter(user=user).count(), params.kb_capacity),
        "Agent traits": (AgentTrait.objects.filter(user=user).count(), params.agent_trait_capacity),
        "User traits": (UserTrait.objects.filter(user=user, score__gt=0).count(), params.trait_dimensions),
    }
    total = pages.count()
    events = LifecycleEvent.objects.filter(user=user)
    span = pages.order_by("seq").values_list("timestamp", flat=True)
    return Overview(
        counts=counts, pages=total, pending=pages.filter(status=PageStatus.PENDING).count(),
        archived=pages.filter(tier=Tier.ARCHIVED).count(),
        evicted_segments=Segment.objects.filter(user=user, status=Segment.Status.EVICTED).count(),
        events=events.count(), traces=RetrievalTrace.objects.filter(user=user).count(),
        database_rows=total + sum(held for held, _ in counts.values()),
        state=UserMemoryState.objects.filter(user=user).first(),
        recent_events=list(events.order_by("-id")[:12]), default_policy=default_policy_name(),
        sona_policies=[(s.name, s.recall_policy or f"default ({default_policy_name()})")
                       for s in Sona.objects.filter(user=user).order_by("created_at")],
        first_at=span.first(), last_at=pages.order_by("-seq").values_list("timestamp", flat=True).first(),
    )


# ------------------------------------------------------------------ short-term memory

@dataclass
class StmSlot:
    position: int
    page: DialoguePage | None
    previous: DialoguePage | None = None


def stm_slots(*, user) -> list[StmSlot]:
    """The queue as its capacity's slots, oldest first; a page's link to the previous page of its
    dialogue chain (which may have left STM)."""
    capacity = memory_params().stm_capacity
    pages = list(DialoguePage.objects.filter(user=user, tier=Tier.STM).select_related("previous", "sona")
                 .prefetch_related("attachments").order_by("seq"))
    slots = [StmSlot(position=i + 1, page=page, previous=page.previous) for i, page in enumerate(pages)]
    slots += [StmSlot(position=len(slots) + i + 1, page=None) for i in range(max(0, capacity - len(slots)))]
    return slots


# ------------------------------------------------------------------ mid-term memory

@dataclass
class SegmentRow:
    segment: Segment
    visits: float
    interaction: float
    recency: float
    heat: float

    @property
    def label(self) -> str:
        return segment_label(self.segment)


def segment_label(segment: Segment) -> str:
    return segment.label


SEGMENT_SORTS = {"heat": lambda r: r.heat, "visits": lambda r: r.segment.n_visit,
                 "interaction": lambda r: r.segment.l_interaction, "pages": lambda r: r.segment.page_count,
                 "last_access": lambda r: r.segment.last_access, "recency": lambda r: r.recency,
                 "created": lambda r: r.segment.created_at}


def segment_rows(*, user, status: str = Segment.Status.ACTIVE, query: str = "",
                 now: datetime | None = None) -> list[SegmentRow]:
    """Segments with their heat and its three terms at `now`, filtered by status and by a word of
    their summary or keywords."""
    params, now = memory_params(), now or timezone.now()
    segments = Segment.objects.filter(user=user).defer("embedding")
    if status:
        segments = segments.filter(status=status)
    if query:
        segments = segments.filter(Q(summary__icontains=query) | Q(keywords__icontains=query))
    rows = []
    for segment in segments:
        terms = heat_breakdown(segment.to_engine(with_embedding=False), now=now, params=params)
        rows.append(SegmentRow(segment=segment, visits=terms["visits"], interaction=terms["interaction"],
                               recency=terms["recency"], heat=terms["heat"]))
    return rows


def segment_table(*, user, sort: str = "heat", descending: bool = True, status: str = Segment.Status.ACTIVE,
                  query: str = "", page: int = 1, per_page: int = 25):
    rows = segment_rows(user=user, status=status, query=query)
    key = SEGMENT_SORTS.get(sort, SEGMENT_SORTS["heat"])
    rows.sort(key=key, reverse=descending)
    return Paginator(rows, per_page).get_page(page)


@dataclass
class SegmentDetail:
    row: SegmentRow
    pages: list[DialoguePage]
    facts: list[KnowledgeFact]
    agent_traits: list[AgentTrait]
    trait_keys: list[str]  # dimensions whose evidence came from its pages
    events: list[EventRecord]  # its own, its visits included


def segment_detail(*, user, segment_id) -> SegmentDetail | None:
    segment = Segment.objects.filter(user=user, id=segment_id).defer("embedding").first()
    if segment is None:
        return None
    terms = heat_breakdown(segment.to_engine(with_embedding=False), now=timezone.now(), params=memory_params())
    row = SegmentRow(segment=segment, visits=terms["visits"], interaction=terms["interaction"],
                     recency=terms["recency"], heat=terms["heat"])
    sid = str(segment.id)
    pages = list(DialoguePage.objects.filter(user=user, segment=segment).order_by("seq"))
    page_ids = {str(p.id) for p in pages}
    log = event_log(user=user)
    events = [e for e in log if e.subject == sid
              or (e.kind == LifecycleEvent.Kind.SEGMENTS_VISITED and sid in (e.payload.get("segments") or ()))]
    traits = {e.subject for e in log if e.kind == LifecycleEvent.Kind.TRAIT_UPDATED
              and e.payload.get("page_id") in page_ids}
    return SegmentDetail(row=row, pages=pages, facts=list(KnowledgeFact.objects.filter(user=user, segment=segment)),
                         agent_traits=list(AgentTrait.objects.filter(user=user, segment=segment)),
                         trait_keys=sorted(traits), events=events)


def segment_labels(*, user) -> dict[str, str]:
    return {str(s.id): segment_label(s) for s in Segment.objects.filter(user=user).only("id", "keywords")}


# ------------------------------------------------------------------ long-term memory

@dataclass
class TraitRow:
    key: str
    name: str
    category: str
    description: str
    score: float
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class LongTerm:
    profile: UserProfile | None
    traits: list[TraitRow]
    facts: list[KnowledgeFact]
    agent_traits: list[AgentTrait]
    categories: dict[str, str]


def long_term(*, user) -> LongTerm:
    scored = {t.key: t for t in UserTrait.objects.filter(user=user)}
    traits = [TraitRow(key=d.key, name=d.name, category=d.category, description=d.description,
                       score=scored[d.key].score if d.key in scored else 0.0,
                       evidence=list(scored[d.key].evidence) if d.key in scored else [])
              for d in TRAIT_CATALOGUE]
    return LongTerm(profile=UserProfile.objects.filter(user=user).first(), traits=traits,
                    facts=list(KnowledgeFact.objects.filter(user=user).select_related("segment").order_by("created_at")),
                    agent_traits=list(AgentTrait.objects.filter(user=user).select_related("segment", "sona")
                                      .order_by("created_at")),
                    categories=dict(CATEGORIES))


@dataclass
class TraitEvidence:
    trait: UserTrait  # the stored row (unsaved when the dimension has no evidence yet)
    row: TraitRow
    pages: list[DialoguePage]
    segments: list[Segment]
    updates: list[LifecycleEvent]


def trait_evidence(*, user, key: str) -> TraitEvidence | None:
    dimension = TRAITS_BY_KEY.get(key)
    if dimension is None:
        return None
    trait = UserTrait.objects.filter(user=user, key=key).first()
    updates = list(LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.TRAIT_UPDATED, subject_id=key)
                   .order_by("id"))
    page_ids = list(dict.fromkeys([e.payload.get("page_id") for e in updates if e.payload.get("page_id")]
                                  + [e.get("page_id") for e in (trait.evidence if trait else [])]))
    pages = list(DialoguePage.objects.filter(user=user, id__in=page_ids).order_by("seq"))
    segments = list(Segment.objects.filter(user=user, id__in={p.segment_id for p in pages if p.segment_id})
                    .defer("embedding"))
    row = TraitRow(key=key, name=dimension.name, category=dimension.category, description=dimension.description,
                   score=trait.score if trait else 0.0, evidence=list(trait.evidence) if trait else [])
    return TraitEvidence(trait=trait or UserTrait(user=user, key=key), row=row, pages=pages, segments=segments,
                         updates=updates)


# ------------------------------------------------------------------ figures' data

def heat_history_of(*, user, segments: set[str] | None = None, hottest: int = 12, samples: int = 60):
    """Heat over the memory's time from the log (memory.engine.lifecycle.heat_history): of the
    given segments, else of the `hottest` by peak heat (the lines a figure can show)."""
    params = memory_params()
    passed = _log_cache.derived(user.pk, ("heat", samples, params),
                                lambda log: heat_log(log, params=params, samples=samples))
    return heat_lines(passed, params=params, segments=segments, hottest=hottest), params


def mtm_figures(*, user) -> tuple[str, str]:
    """The mid-term page's two figures (heat over time, segment membership) as plotly JSON, built
    once per version of the log."""
    params = memory_params()

    def build(log: list[EventRecord]) -> tuple[str, str]:
        history, _ = heat_history_of(user=user, hottest=charts.MAX_SEGMENT_LINES)
        labels = segment_labels(user=user)
        joins, evictions = membership_of(user=user)
        return (_heat_figure(history, labels, log, params),
                charts.membership_figure(joins, evictions=evictions, labels=labels))

    return _log_cache.derived(user.pk, ("mtm_figures", params), build)


def segment_heat_figure(*, user, segment_id: str, label: str) -> str:
    """One segment's heat over time, drawn as the mid-term page draws every segment's."""
    history, params = heat_history_of(user=user, segments={str(segment_id)})
    return _heat_figure(history, {str(segment_id): label}, event_log(user=user), params)


def _heat_figure(history, labels: dict[str, str], log: list[EventRecord], params) -> str:
    """Heat lines with the promotion threshold, and the decay term over the log's time span."""
    decay = decay_curve(span_seconds=span_of(log).total_seconds(), mu_seconds=params.recency_mu_seconds)
    return charts.heat_figure(history, labels=labels, threshold=params.heat_threshold, decay=decay,
                              mu_seconds=params.recency_mu_seconds)


def membership_of(*, user) -> tuple[list[Membership], dict[str, datetime]]:
    """Which page joined which segment when (the segment events of the log), and evictions."""
    return _log_cache.derived(user.pk, "membership", _memberships)


def _memberships(log: list[EventRecord]) -> tuple[list[Membership], dict[str, datetime]]:
    joins, evictions = [], {}
    for event in log:
        if event.kind in (LifecycleEvent.Kind.SEGMENT_CREATED, LifecycleEvent.Kind.SEGMENT_MERGED):
            joins.append(Membership(page_id=str(event.payload.get("page_id", "")), segment_id=event.subject,
                                    at=event.at, created=event.kind == LifecycleEvent.Kind.SEGMENT_CREATED))
        elif event.kind == LifecycleEvent.Kind.SEGMENT_EVICTED:
            evictions[event.subject] = event.at
    return joins, evictions


# ------------------------------------------------------------------ provenance

NODE_KINDS = {"page": MemoryNode.Kind.PAGE, "segment": MemoryNode.Kind.SEGMENT, "fact": MemoryNode.Kind.FACT,
              "agent_trait": MemoryNode.Kind.AGENT_TRAIT, "trait": MemoryNode.Kind.USER_TRAIT,
              "recollection": MemoryNode.Kind.RECOLLECTION, "file": MemoryNode.Kind.FILE}


@dataclass
class ProvenanceLink:
    node: MemoryNode
    relation: str
    weight: float
    direction: str  # "from": it came from this; "to": this was derived from it
    depth: int


@dataclass
class Provenance:
    kind: str
    ident: str
    title: str
    centre: list[MemoryNode]
    links: list[ProvenanceLink]
    labels: dict[int, str]  # node pk -> a short text
    trait_keys: dict[str, str]  # a trait evidence node's object id -> its dimension's key


def provenance(*, user, kind: str, ident: str, depth: int = 2, limit: int = 60) -> Provenance | None:
    """What a memory came from and what was derived from it, `depth` edges each way."""
    centre = _centre_nodes(user, kind, ident)
    if not centre:
        return None
    links: list[ProvenanceLink] = []
    seen = {n.pk for n in centre}
    frontier = {"from": list(centre), "to": list(centre)}
    for level in range(1, depth + 1):
        for direction in ("from", "to"):
            nodes, frontier[direction] = frontier[direction], []
            if not nodes or len(links) >= limit:
                continue
            edges = (MemoryEdge.objects.filter(user=user, source__in=nodes).select_related("target")
                     if direction == "from" else
                     MemoryEdge.objects.filter(user=user, target__in=nodes).select_related("source"))
            for edge in edges[:limit]:
                other = edge.target if direction == "from" else edge.source
                if other.pk in seen:
                    continue
                seen.add(other.pk)
                links.append(ProvenanceLink(node=other, relation=edge.relation, weight=edge.weight,
                                            direction=direction, depth=level))
                frontier[direction].append(other)
    trait_keys = _trait_evidence_keys(user)
    labels = node_labels(user=user, nodes=[*centre, *(link.node for link in links)], trait_keys=trait_keys)
    return Provenance(kind=kind, ident=ident, title=_title(user, kind, ident, centre, labels), centre=centre,
                      links=links, labels=labels, trait_keys=trait_keys)


def _centre_nodes(user, kind: str, ident: str) -> list[MemoryNode]:
    if kind == "trait":  # a dimension: every piece of its evidence is a node
        page_ids = {e.payload.get("page_id") for e in event_log(user=user)
                    if e.kind == LifecycleEvent.Kind.TRAIT_UPDATED and e.subject == ident}
        object_ids = [trait_evidence_object_id(ident, str(pid)) for pid in page_ids if pid]
        return list(MemoryNode.objects.filter(user=user, kind=MemoryNode.Kind.USER_TRAIT, object_id__in=object_ids))
    node_kind = NODE_KINDS.get(kind)
    if node_kind is None:
        return []
    return list(MemoryNode.objects.filter(user=user, kind=node_kind, object_id=ident)
                or MemoryNode.objects.filter(user=user, kind=node_kind, cid=ident)
                or MemoryNode.objects.filter(user=user, kind=node_kind, aliases__cid=ident))


def node_labels(*, user, nodes: list[MemoryNode], trait_keys: dict[str, str] | None = None) -> dict[int, str]:
    """A short text per node: a page's words, a segment's keywords, a fact's text, a trait's name."""
    ids: dict[str, list[str]] = {}
    for node in nodes:  # an earlier version of a corrected memory ("<id>@<cid tail>") is labelled by its memory
        ids.setdefault(node.kind, []).append(node.object_id.partition("@")[0])
    text: dict[tuple[str, str], str] = {}
    for page in DialoguePage.objects.filter(user=user, id__in=_uuids(ids.get(MemoryNode.Kind.PAGE, []))):
        text[(MemoryNode.Kind.PAGE, str(page.id))] = f"#{page.seq} {page.query[:60]}"
    for segment in Segment.objects.filter(user=user, id__in=_uuids(ids.get(MemoryNode.Kind.SEGMENT, []))):
        text[(MemoryNode.Kind.SEGMENT, str(segment.id))] = segment_label(segment)
    for model, kind in ((KnowledgeFact, MemoryNode.Kind.FACT), (AgentTrait, MemoryNode.Kind.AGENT_TRAIT),
                        (Recollection, MemoryNode.Kind.RECOLLECTION)):
        for row in model.objects.filter(user=user, id__in=_uuids(ids.get(kind, []))):
            text[(kind, str(row.id))] = row.text[:80]
    for row in AttachedFile.objects.filter(user=user, id__in=_uuids(ids.get(MemoryNode.Kind.FILE, []))):
        text[(MemoryNode.Kind.FILE, str(row.id))] = f"file {row.name} ({row.media_type})"
    trait_of = trait_keys if trait_keys is not None else _trait_evidence_keys(user)
    for object_id in ids.get(MemoryNode.Kind.USER_TRAIT, []):
        key = trait_of.get(object_id)
        text[(MemoryNode.Kind.USER_TRAIT, object_id)] = TRAITS_BY_KEY[key].name if key in TRAITS_BY_KEY else "trait"
    return {node.pk: _node_label(text, node) for node in nodes}


def _node_label(text: dict[tuple[str, str], str], node: MemoryNode) -> str:
    head, at, _ = node.object_id.partition("@")
    if at and node.kind != MemoryNode.Kind.USER_TRAIT:
        return f"earlier version of {text.get((node.kind, head), 'a memory no longer kept')}"
    return text.get((node.kind, node.object_id), "(no longer in memory)")


def _trait_evidence_keys(user) -> dict[str, str]:
    """Evidence node object id -> the trait dimension's key, from the log's trait updates."""
    return _log_cache.derived(user.pk, "trait_keys", lambda log: {
        trait_evidence_object_id(e.subject, str(e.payload.get("page_id"))): e.subject
        for e in log if e.kind == LifecycleEvent.Kind.TRAIT_UPDATED and e.payload.get("page_id")})


def _title(user, kind: str, ident: str, centre: list[MemoryNode], labels: dict[int, str]) -> str:
    if kind == "trait":
        return TRAITS_BY_KEY[ident].name if ident in TRAITS_BY_KEY else ident
    return labels.get(centre[0].pk, ident)


def _uuids(values: list[str]) -> list[uuid.UUID]:
    found = []
    for value in values:
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return found


# ------------------------------------------------------------------ traces and the log

def traces_page(*, user, page: int = 1, per_page: int = 20):
    traces = (RetrievalTrace.objects.filter(user=user).select_related("page").order_by("-created_at")
              .only("id", "query", "policy", "latency_ms", "prompt_tokens", "created_at", "page__seq", "page__id"))
    return Paginator(traces, per_page).get_page(page)


def trace_get(*, user, trace_id) -> RetrievalTrace | None:
    return RetrievalTrace.objects.filter(user=user, id=trace_id).select_related("page").first()


EVENT_GROUPS = {
    "pages": ("page_added", "moved_to_mtm", "reply_fallback", "recall_degraded"),
    "segments": ("segment_created", "segment_merged", "segments_visited", "segment_promoted", "segment_evicted"),
    "long-term": ("fact_added", "fact_dropped", "trait_updated", "agent_trait_added", "agent_trait_dropped"),
    "edits": ("edited",),
    "problems": ("maintenance_failed", "model_output_rejected", "recall_degraded", "reply_fallback"),
}


def events_page(*, user, kinds: list[str] | None = None, query: str = "", page: int = 1, per_page: int = 50):
    events = LifecycleEvent.objects.filter(user=user)
    if kinds:
        events = events.filter(kind__in=kinds)
    if query:
        events = events.filter(Q(subject_id__icontains=query) | Q(kind__icontains=query))
    return Paginator(events.order_by("-id"), per_page).get_page(page)


# ------------------------------------------------------------------ replay

REPLAY_SEGMENTS = 40  # segment cards a step shows: the one the event touched and the latest accessed


@dataclass
class ReplayView:
    step: int
    total: int
    state: Any  # memory.engine.lifecycle.TierState
    event: EventRecord | None
    page_text: dict[str, str]
    segment_labels: dict[str, str]
    segments: list[Any]  # the SegmentStates shown, in the order they formed
    hidden_segments: int


def replay_view(*, user, step: int) -> ReplayView:
    """The tiers after `step` events, with what the page needs to show them."""
    replay = replay_of(user=user)
    state = replay.state_after(step)
    event = state.last
    touched = {event.subject, *(event.payload.get("segments") or ())} if event else set()
    latest = sorted(state.mtm.values(), key=lambda seg: (seg.id not in touched, -seg.last_access.timestamp()))
    keep = {seg.id for seg in latest[:REPLAY_SEGMENTS]}
    segments = [seg for sid, seg in state.mtm.items() if sid in keep]
    texts = {str(p.id): p.query[:90] for p in DialoguePage.objects.filter(user=user, id__in=_uuids(state.stm))
             .only("id", "query")}
    labels = {str(s.id): segment_label(s) for s in Segment.objects.filter(user=user, id__in=_uuids(list(keep)))
              .only("id", "keywords")}
    return ReplayView(step=state.applied, total=len(replay), state=state, event=event, page_text=texts,
                      segment_labels=labels, segments=segments, hidden_segments=len(state.mtm) - len(segments))


# ------------------------------------------------------------------ Exocortex decay curves

@dataclass
class DecayView:
    settings: exo.DecaySettings
    oldest_seconds: float
    short_term_threshold: float
    crossing_seconds: float | None
    figure: str


def exocortex_curves(*, user, now: datetime | None = None) -> DecayView:
    """The user's own recency and nostalgia curves over their memory's actual age (the span from
    their oldest page to now), and the recency curve with the short-term duration doubled and with
    the seed's plotting threshold 0.1, so the figure shows how the two settings move it."""
    now = now or timezone.now()
    own = decay_settings_of(user.pk)
    first = DialoguePage.objects.filter(user=user).order_by("seq").values_list("timestamp", flat=True).first()
    oldest = max(0.0, (now - first).total_seconds()) if first else 0.0
    variants = [("yours", own, True),
                (f"short-term {2 * own.short_term_seconds / 60:g} min",
                 replace(own, short_term_seconds=2 * own.short_term_seconds), False)]
    if own.long_term_threshold != 0.1:
        variants.append(("long-term threshold 0.1", replace(own, long_term_threshold=0.1), False))
    lines = []
    for label, decay, mine in variants:
        points = exo.curve_points(oldest_age_seconds=oldest, settings=decay)
        lines.append(charts.DecayLine(
            label=label, ages_seconds=[p.age_seconds for p in points], recency=[p.recency for p in points],
            nostalgia=[p.nostalgia for p in points] if mine else None,
            crossing_seconds=exo.intersection_age(oldest_age_seconds=oldest, settings=decay),
            dash="solid" if mine else "dash"))
    curve = exo.decay_curve(oldest_age_seconds=oldest, settings=own)
    figure = charts.decay_figure(lines, oldest_seconds=oldest, short_term_seconds=own.short_term_seconds)
    return DecayView(settings=own, oldest_seconds=oldest, short_term_threshold=curve.short_term_threshold,
                     crossing_seconds=lines[0].crossing_seconds, figure=figure)


@dataclass(frozen=True)
class PolicySection:
    """A trace's part that only its policy knows how to show: the template and what it renders."""

    template: str
    view: Any


def policy_section(*, trace: RetrievalTrace) -> PolicySection | None:
    """The trace's policy's own section (RecallPolicy.trace_template), or None: a policy with none, one
    whose trace holds nothing for it, or a policy no longer registered."""
    policy = policy_or_none(trace.policy)
    if policy is None or policy.trace_template is None:
        return None
    view = policy.trace_view(trace.payload or {})
    return PolicySection(template=policy.trace_template, view=view) if view else None
