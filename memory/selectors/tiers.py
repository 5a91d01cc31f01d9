"""The short-term and mid-term tiers as the inspector shows them: STM's slots, segments with their
heat and its terms, one segment's detail, and the figures drawn from the log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from memory.config import memory_params
from memory.engine.heat import heat_breakdown
from memory.engine.lifecycle import EventRecord, decay_curve, heat_lines, heat_log, span_of
from memory.engine.naming import SegmentName
from memory.inspector import charts
from memory.inspector.charts import Membership
from memory.models import DialoguePage, LifecycleEvent, Segment, Tier
from memory.selectors.log import event_log, log_derived
from memory.selectors.segment_names import segment_label_of, segment_name, segment_names
from persona.models import AgentTrait, KnowledgeFact


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


def stm_pages(*, user) -> list[DialoguePage]:
    return list(DialoguePage.objects.filter(user=user, tier=Tier.STM).order_by("seq"))


@dataclass
class SegmentRow:
    segment: Segment
    visits: float
    interaction: float
    recency: float
    heat: float
    shown: SegmentName | None = None  # its name and keyword chips (memory/engine/naming.py)

    @property
    def label(self) -> str:
        return f"{(self.shown.name if self.shown else '') or '(no keywords)'} · {str(self.segment.id)[:6]}"


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
    rows, names = [], segment_names(user=user)
    for segment in segments:
        terms = heat_breakdown(segment.to_engine(with_embedding=False), now=now, params=params)
        rows.append(SegmentRow(segment=segment, visits=terms["visits"], interaction=terms["interaction"],
                               recency=terms["recency"], heat=terms["heat"], shown=segment_name(names, segment)))
    return rows


def segments_sorted(*, user, sort: str = "heat", descending: bool = True, status: str = Segment.Status.ACTIVE,
                    query: str = "") -> list[SegmentRow]:
    """segment_rows in the order of one of SEGMENT_SORTS (heat when the name is unknown)."""
    rows = segment_rows(user=user, status=status, query=query)
    rows.sort(key=SEGMENT_SORTS.get(sort, SEGMENT_SORTS["heat"]), reverse=descending)
    return rows


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
                     recency=terms["recency"], heat=terms["heat"],
                     shown=segment_name(segment_names(user=user), segment))
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
    return {sid: segment_label_of(names, sid) for names in [segment_names(user=user)] for sid in names}


def heat_history_of(*, user, segments: set[str] | None = None, hottest: int = 12, samples: int = 60):
    """Heat over the memory's time from the log (memory.engine.lifecycle.heat_history): of the
    given segments, else of the `hottest` by peak heat (the lines a figure can show)."""
    params = memory_params()
    passed = log_derived(user, ("heat", samples, params),
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

    return log_derived(user, ("mtm_figures", params), build)


def segment_heat_figure(*, user, segment_id: str, label: str) -> str:
    """One segment's heat over time, drawn as the mid-term page draws every segment's."""
    history, params = heat_history_of(user=user, segments={str(segment_id)})
    return _heat_figure(history, {str(segment_id): label}, event_log(user=user), params)


def _heat_figure(history, labels: dict[str, str], log: list[EventRecord], params) -> str:
    """Heat lines with the promotion threshold, and the decay term over the log's time span."""
    span = charts.data_span(history)  # the lines' own span: the log's may mix two clocks
    seconds = (span[1] - span[0]).total_seconds() if span else span_of(log).total_seconds()
    decay = decay_curve(span_seconds=seconds, mu_seconds=params.recency_mu_seconds)
    return charts.heat_figure(history, labels=labels, threshold=params.heat_threshold, decay=decay,
                              mu_seconds=params.recency_mu_seconds)


def membership_of(*, user) -> tuple[list[Membership], dict[str, datetime]]:
    """Which page joined which segment when (the segment events of the log), and evictions."""
    return log_derived(user, "membership", _memberships)


def _memberships(log: list[EventRecord]) -> tuple[list[Membership], dict[str, datetime]]:
    joins, evictions = [], {}
    for event in log:
        if event.kind in (LifecycleEvent.Kind.SEGMENT_CREATED, LifecycleEvent.Kind.SEGMENT_MERGED):
            joins.append(Membership(page_id=str(event.payload.get("page_id", "")), segment_id=event.subject,
                                    at=event.at, created=event.kind == LifecycleEvent.Kind.SEGMENT_CREATED))
        elif event.kind == LifecycleEvent.Kind.SEGMENT_EVICTED:
            evictions[event.subject] = event.at
    return joins, evictions
