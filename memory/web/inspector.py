"""The memory inspector: every tier of a user's memory, its figures, its traces, its lifecycle.

A person inspects their own memory; staff with the `memory.inspect_any_user` permission pick any
user from the switcher. Anyone else gets a 404, never data. Views parse, call selectors and chart
builders, render; a view returns its partial when htmx asks for one.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from memory.config import memory_params
from memory.engine.traits import CATEGORIES
from memory.inspector import charts
from memory.policies import registry as models
from memory.recall.base import UnknownPolicyError, get_policy, policy_names
from memory.recall.pipeline import gather
from memory.selectors import audit, log, long_term, stats, tiers
from memory.selectors import provenance as provenances
from memory.selectors import replay as replays
from memory.selectors.accounts import user_named
from memory.selectors.recall_panel import search_listing
from memory.selectors.traces import policy_section, trace_get, trace_timings, traces
from memory.web.access import can_inspect, switchable_users

SECTIONS = (("overview", "Overview"), ("stm", "Short-term"), ("mtm", "Mid-term"), ("lpm", "Long-term"),
            ("recalls", "Recalls"), ("events", "Lifecycle"), ("replay", "Replay"), ("supersessions", "Changes"))


def _target(request, username: str):
    target = user_named(username)
    if target is None or not can_inspect(request.user, target):
        raise Http404("No memory to show here.")
    return target


def _render(request, template: str, target, section: str, context: dict, partial: str | None = None):
    if partial and request.htmx:
        return render(request, f"{template}#{partial}", {"target": target, **context})
    return render(request, template, {
        "target": target, "section": section, "sections": SECTIONS, "section_label": dict(SECTIONS).get(section, ""),
        "switchable": switchable_users(request.user), **context})


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


SEGMENTS_PER_PAGE, TRACES_PER_PAGE, EVENTS_PER_PAGE, RESULTS_PER_PAGE = 25, 20, 50, 10


def _page(rows, request, *, per_page: int):
    """The page of `rows` the request's `page` asks for (the last for one past it, the first for junk)."""
    return Paginator(rows, per_page).get_page(_int(request.GET.get("page"), 1))


@login_required
@require_GET
def inspector_home(request):
    return redirect("inspector_overview", username=request.user.get_username())


@login_required
@require_GET
def inspector_switch(request):
    """The user switcher: the same section for another user (404 when not allowed)."""
    target = _target(request, request.GET.get("user", ""))
    section = request.GET.get("section", "overview")
    name = f"inspector_{section}" if section in dict(SECTIONS) else "inspector_overview"
    return redirect(name, username=target.get_username())


@login_required
@require_GET
def overview(request, username):
    target = _target(request, username)
    data = stats.overview(user=target)
    return _render(request, "inspector/overview.html", target, "overview",
                   {"o": data, "tiers_figure": charts.tiers_figure(data.counts),
                    "rows": audit.events_with_subjects(user=target, events=data.recent_events),
                    **models.page_context("inspector_overview", user=target)})


@login_required
@require_GET
def stm(request, username):
    target = _target(request, username)
    return _render(request, "inspector/stm.html", target, "stm", {"slots": tiers.stm_slots(user=target)})


@login_required
@require_GET
def mtm(request, username):
    """The segment table (sortable, filterable, paged with htmx) and the two figures."""
    target = _target(request, username)
    sort = request.GET.get("sort", "heat")
    descending = request.GET.get("dir", "desc") != "asc"
    status = request.GET.get("status", "active")
    rows = tiers.segments_sorted(user=target, sort=sort, descending=descending, status=status,
                                 query=request.GET.get("q", "").strip())
    table = _page(rows, request, per_page=SEGMENTS_PER_PAGE)
    context = {"table": table, "sort": sort, "descending": descending, "status": status,
               "q": request.GET.get("q", ""), "params": memory_params()}
    if request.htmx and request.GET.get("part") == "table":
        return _render(request, "inspector/mtm.html", target, "mtm", context, partial="segment-table")
    context["heat_figure"], context["membership_figure"] = tiers.mtm_figures(user=target)
    return _render(request, "inspector/mtm.html", target, "mtm", context)


@login_required
@require_GET
def segment(request, username, segment_id):
    target = _target(request, username)
    detail = tiers.segment_detail(user=target, segment_id=segment_id)
    if detail is None:
        raise Http404("No such segment.")
    figure = tiers.segment_heat_figure(user=target, segment_id=str(segment_id), label=detail.row.label)
    return _render(request, "inspector/segment.html", target, "mtm", {"d": detail, "heat_figure": figure})


@login_required
@require_GET
def lpm(request, username):
    target = _target(request, username)
    data = long_term.long_term(user=target)
    bars = [charts.TraitBar(key=t.key, name=t.name, category=t.category, score=t.score,
                            url=reverse("inspector_trait", args=[target.get_username(), t.key]))
            for t in data.traits]
    # A superseded fact is listed with its period and what took its place, as every list of facts shows it.
    periods = {fact.fact.pk: fact.period for fact in long_term.facts_with_periods(user=target) if not fact.current}
    return _render(request, "inspector/lpm.html", target, "lpm",
                   {"lt": data, "periods": periods,
                    "traits_figure": charts.traits_figure(bars, categories=CATEGORIES),
                    "scored": sorted((t for t in data.traits if t.score > 0), key=lambda t: -t.score)})


@login_required
@require_GET
def trait(request, username, key):
    target = _target(request, username)
    evidence = long_term.trait_evidence(user=target, key=key)
    if evidence is None:
        raise Http404("No such trait dimension.")
    return _render(request, "inspector/trait.html", target, "lpm", {"e": evidence})


PROVENANCE_KINDS = {"page", "fact", "agent_trait", "recollection", "file", "segment"}


def _node_url(username: str, node, trait_key: str | None) -> str:
    """Where a node of the graph is shown; "" (no link) for one with no page: an imported node of an
    unknown kind, or an object id no route takes. An earlier version of a corrected memory
    ("<id>@<old cid's tail>") has its provenance page; the segment page is for the current one."""
    try:
        if node.kind == "user_trait":
            return reverse("inspector_trait", args=[username, trait_key]) if trait_key else ""
        if node.kind == "segment" and "@" not in node.object_id:
            return reverse("inspector_segment", args=[username, node.object_id])
        if node.kind in PROVENANCE_KINDS:
            return reverse("inspector_provenance", args=[username, node.kind, node.object_id])
    except NoReverseMatch:
        pass
    return ""


@login_required
@require_GET
def provenance(request, username, kind, ident):
    target = _target(request, username)
    found = provenances.provenance(user=target, kind=kind, ident=ident)
    if found is None:
        raise Http404("No such memory in the graph.")
    name = target.get_username()
    trait_key = found.trait_keys
    nodes = [charts.GraphNode(key=f"{n.kind}:{n.object_id}", label=found.labels[n.pk], kind=n.kind,
                              url=_node_url(name, n, trait_key.get(n.object_id)), level=0) for n in found.centre]
    nodes += [charts.GraphNode(key=f"{link.node.kind}:{link.node.object_id}", label=found.labels[link.node.pk],
                               kind=link.node.kind, url=_node_url(name, link.node, trait_key.get(link.node.object_id)),
                               level=-link.depth if link.direction == "from" else link.depth)
              for link in found.links]
    centre_key = f"{found.centre[0].kind}:{found.centre[0].object_id}"
    edges = [charts.GraphEdge(source=centre_key if link.depth == 1 else f"{link.node.kind}:{link.node.object_id}",
                              target=f"{link.node.kind}:{link.node.object_id}", relation=link.relation,
                              weight=link.weight) for link in found.links if link.depth == 1]
    rows = [(link, found.labels[link.node.pk], _node_url(name, link.node, trait_key.get(link.node.object_id)))
            for link in found.links]
    return _render(request, "inspector/provenance.html", target, "lpm",
                   {"p": found, "rows": rows, "has_sources": any(link.direction == "from" for link in found.links),
                    "has_derived": any(link.direction == "to" for link in found.links),
                    "graph_figure": charts.provenance_figure(nodes, edges)})


@login_required
@require_GET
def recalls(request, username):
    """Every stored trace, newest first; a search runs a recall that changes no heat and stores nothing."""
    target = _target(request, username)
    query = request.GET.get("q", "").strip()
    policy = request.GET.get("policy", "")
    search, error = None, ""
    if query:
        try:
            search = gather(user=target, query=query[:2000], policy=policy or None, now=timezone.now())
        except UnknownPolicyError as exc:
            error = str(exc)
    found, standing = search_listing(search.items) if search else ([], [])
    context = {"traces": _page(traces(user=target), request, per_page=TRACES_PER_PAGE), "q": query,
               "search": search, "error": error, "policy": policy, "standing": standing,
               "results": Paginator(found, RESULTS_PER_PAGE).get_page(_int(request.GET.get("rpage"), 1)),
               "policies": [(name, get_policy(name).title) for name in policy_names()]}
    return _render(request, "inspector/recalls.html", target, "recalls", context,
                   partial="trace-list" if request.GET.get("part") == "list" else None)


@login_required
@require_GET
def trace(request, username, trace_id):
    target = _target(request, username)
    found = trace_get(user=target, trace_id=trace_id)
    if found is None:
        raise Http404("No such trace.")
    return _render(request, "inspector/trace.html", target, "recalls",
                   {"t": found, "p": found.payload or {}, "timings": trace_timings(found.payload or {}),
                    "policy_section": policy_section(trace=found)})


@login_required
@require_GET
def events(request, username):
    target = _target(request, username)
    group = request.GET.get("group", "")
    kinds = list(log.EVENT_GROUPS.get(group, ())) or request.GET.getlist("kind")
    page = _page(log.events(user=target, kinds=kinds, query=request.GET.get("q", "").strip()), request,
                 per_page=EVENTS_PER_PAGE)
    return _render(request, "inspector/events.html", target, "events",
                   {"events": page, "rows": audit.events_with_subjects(user=target, events=page.object_list),
                    "group": group, "groups": log.EVENT_GROUPS, "q": request.GET.get("q", "")},
                   partial="event-list" if request.GET.get("part") == "list" else None)


@login_required
@require_GET
def replay(request, username):
    """The tiers rebuilt from the log at any event; htmx asks for `part=state` at each step."""
    target = _target(request, username)
    total = len(log.replay_of(user=target))
    step = max(0, min(_int(request.GET.get("step"), total), total))
    view = replays.replay_view(user=target, step=step)
    return _render(request, "inspector/replay.html", target, "replay", {"r": view},
                   partial="replay-state" if request.GET.get("part") == "state" else None)
