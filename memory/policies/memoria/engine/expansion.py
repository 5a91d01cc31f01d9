"""Memoria's budgeted expansion along dependency edges, and the order recalled memories are shown in.

The budget (the seed: "each memory is assigned a budget based on its score ... multiplying the budget
by the weight, until all budgets are exhausted or no more dependencies are found"), precisely:

- A recalled (top-k) memory, a *seed*, starts with the budget its caller gives it
  (memoria.seed_budget: its score over the highest score possible).
- A memory that holds budget b spends the share (1 - pass_on) on itself and passes b * pass_on on;
  each of its dependencies receives b * pass_on * weight of the edge to it. With pass_on = 1 this is
  the seed's rule as written (budget x weight); below 1 it makes every hop cost something, so a chain
  of weight-1 edges (a page and the page it follows) still ends.
- A dependency is pulled in when what it receives is at least `min_budget`; an edge that carries less
  is where that branch's budget is exhausted. A memory with no dependencies ends its branch.
- A memory reached along several paths (a diamond, or two seeds sharing a dependency) is included once,
  with the largest budget any path gives it, and it passes on that budget. A seed reached as a
  dependency takes the larger of the two budgets. Memories are expanded largest budget first, so
  each is final when it is expanded (every hop multiplies by pass_on * weight <= 1).
- At most `max_pulled` memories are pulled in beyond the seeds: the ones with the largest budgets.
  Seeds are always included (they are the recall's hits), expanded only if their budget is at least
  `min_budget`.

Dependencies are read through `read`, a batch of CIDs at a time (one call per step of the frontier),
so a caller can answer from a database in one query per call. `read` returns only the memories this
recall may use: a CID it leaves out (unknown, repressed, another user's) is never included and the
expansion does not pass through it.

The order: dependencies before what depends on them (causal order, as the seed's topological sort),
and among memories free to go next, the older first. No timestamp counts as infinitely old (the
seed's reading of a missing timestamp), so such memories go first; then the CID, so that the order is
a function of the input alone. A cycle (impossible between content-addressed nodes, but input can be
bad) is refused with the cycle named.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from memory.engine.ipld import Dependency


class Linked(Protocol):
    """What expansion needs of a memory: an ipld.MemoryNode or a GraphNode."""

    @property
    def timestamp(self) -> float | None: ...

    @property
    def dependencies(self) -> Mapping[str, Dependency]: ...


@dataclass(frozen=True)
class GraphNode:
    timestamp: float | None
    dependencies: Mapping[str, Dependency] = field(default_factory=dict)


Reader = Callable[[frozenset[str]], Mapping[str, Linked]]


class CycleError(ValueError):
    """Dependencies that lead back to where they started."""

    def __init__(self, cycle: list[str]) -> None:
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


@dataclass(frozen=True)
class Pull:
    """A dependency edge as expansion saw it: `source` passed `budget` to `target` along it."""

    source: str
    target: str
    name: str
    weight: float
    budget: float

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "name": self.name, "weight": self.weight,
                "budget": self.budget}


@dataclass(frozen=True)
class Expansion:
    seeds: tuple[str, ...]
    budgets: Mapping[str, float]  # every memory included, with its (largest) budget
    pulled_by: Mapping[str, Pull]  # a memory -> the edge that gave it its budget (a seed only if one beat its own)
    edges: tuple[Pull, ...]  # every dependency between two included memories
    exhausted: tuple[Pull, ...]  # edges not followed: they carried less than min_budget
    skipped: frozenset[str]  # CIDs `read` did not give: never included
    cut: tuple[str, ...]  # memories the max_pulled limit left out, largest budget first
    order: tuple[str, ...]  # the included memories, dependencies first, ties by timestamp

    def trace(self) -> dict[str, Any]:
        """The expansion as JSON-ready data for a recall's trace: which memory pulled in which."""
        return {"seeds": list(self.seeds), "budgets": dict(self.budgets), "order": list(self.order),
                "pulled_by": {cid: pull.as_dict() for cid, pull in self.pulled_by.items()},
                "edges": [pull.as_dict() for pull in self.edges],
                "exhausted": [pull.as_dict() for pull in self.exhausted],
                "skipped": sorted(self.skipped), "cut": list(self.cut)}


def graph_reader(graph: Mapping[str, Linked]) -> Reader:
    """A `read` over an in-memory graph (CID -> node)."""
    return lambda cids: {cid: graph[cid] for cid in cids if cid in graph}


def _check_budgets(*, pass_on: float, min_budget: float, max_pulled: int) -> None:
    if not 0.0 < pass_on <= 1.0:
        raise ValueError(f"pass_on must be in (0, 1], not {pass_on}")
    if not min_budget > 0.0:
        raise ValueError(f"min_budget must be above 0, not {min_budget}")
    if max_pulled < 0:
        raise ValueError(f"max_pulled must be 0 or more, not {max_pulled}")


@dataclass
class _Frontier:
    """The mutable state of one expansion."""

    read: Reader
    nodes: dict[str, Linked] = field(default_factory=dict)
    skipped: set[str] = field(default_factory=set)
    heap: list[tuple[float, str]] = field(default_factory=list)
    offered: dict[str, float] = field(default_factory=dict)  # best budget offered to a memory not yet final
    via: dict[str, Pull] = field(default_factory=dict)

    def offer(self, cid: str, budget: float, pull: Pull | None) -> None:
        if cid in self.skipped or budget <= self.offered.get(cid, -1.0):
            return
        self.offered[cid] = budget
        if pull is not None:
            self.via[cid] = pull
        heapq.heappush(self.heap, (-budget, cid))

    def fetch(self) -> None:
        """Read every memory waiting in the heap: each will be included or cut, never read for nothing."""
        unread = frozenset(cid for _, cid in self.heap if cid not in self.nodes and cid not in self.skipped)
        if not unread:
            return
        found = self.read(unread)
        for cid in sorted(unread):
            if cid in found:
                self.nodes[cid] = found[cid]
            else:
                self.skipped.add(cid)


def budget_expand(*, seeds: Mapping[str, float], read: Reader, pass_on: float, min_budget: float,
                  max_pulled: int) -> Expansion:
    """Seeds and what their budgets pull in along dependencies (module docstring), ordered."""
    _check_budgets(pass_on=pass_on, min_budget=min_budget, max_pulled=max_pulled)
    state = _Frontier(read=read)
    for cid, budget in seeds.items():
        if not (isinstance(budget, int | float) and 0.0 <= budget < float("inf")):
            raise ValueError(f"seed {cid}: a budget is a finite number of at least 0, not {budget!r}")
        state.offer(cid, float(budget), None)
    budgets: dict[str, float] = {}
    pulled_by: dict[str, Pull] = {}
    exhausted: list[Pull] = []
    cut: list[str] = []
    pulled = 0
    while state.heap:
        state.fetch()
        negative, cid = heapq.heappop(state.heap)
        if cid in budgets or cid in state.skipped or -negative < state.offered[cid]:
            continue  # already final, unreadable, or a stale entry beaten by a larger offer
        if cid not in seeds:
            if pulled >= max_pulled:
                cut.append(cid)
                continue
            pulled += 1
        budgets[cid] = -negative
        if cid in state.via:
            pulled_by[cid] = state.via[cid]
        if budgets[cid] >= min_budget:  # a weaker seed is recalled, not expanded
            exhausted.extend(_pass_on(cid, budgets, state, pass_on=pass_on, min_budget=min_budget))
    edges = _edges_within(budgets, state.nodes, pass_on)
    timestamps = {cid: state.nodes[cid].timestamp for cid in budgets}
    return Expansion(seeds=tuple(seeds), budgets=budgets, pulled_by=pulled_by, edges=edges,
                     exhausted=tuple(pull for pull in exhausted if pull.target not in budgets),
                     skipped=frozenset(state.skipped), cut=tuple(cid for cid in cut if cid not in budgets),
                     order=topological_order(timestamps=timestamps,
                                             edges=((pull.source, pull.target) for pull in edges)))


def _pass_on(cid: str, budgets: Mapping[str, float], state: _Frontier, *, pass_on: float,
             min_budget: float) -> list[Pull]:
    """Offer a final memory's budget to its dependencies; the edges that carry too little."""
    exhausted = []
    for name, dependency in sorted(state.nodes[cid].dependencies.items()):
        passed = budgets[cid] * pass_on * dependency.weight
        pull = Pull(source=cid, target=dependency.cid, name=name, weight=dependency.weight, budget=passed)
        if dependency.cid in budgets:
            continue  # final already: a diamond's second path, or a cycle (the order refuses it)
        if passed < min_budget:
            exhausted.append(pull)
        else:
            state.offer(dependency.cid, passed, pull)
    return exhausted


def _edges_within(budgets: Mapping[str, float], nodes: Mapping[str, Linked], pass_on: float) -> tuple[Pull, ...]:
    return tuple(
        Pull(source=cid, target=dependency.cid, name=name, weight=dependency.weight,
             budget=budgets[cid] * pass_on * dependency.weight)
        for cid in sorted(budgets)
        for name, dependency in sorted(nodes[cid].dependencies.items())
        if dependency.cid in budgets
    )


def _order_key(cid: str, timestamp: float | None) -> tuple[int, float, str]:
    return (0, 0.0, cid) if timestamp is None else (1, timestamp, cid)


def topological_order(*, timestamps: Mapping[str, float | None], edges: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """Memories with every dependency before what depends on it; among those free to go next, the
    oldest first (no timestamp first), then by CID. `edges` are (memory, its dependency) pairs between
    memories of `timestamps`. CycleError when there is no such order."""
    waiting_on: dict[str, set[str]] = {cid: set() for cid in timestamps}
    dependents: dict[str, set[str]] = {cid: set() for cid in timestamps}
    for source, target in edges:
        if source not in timestamps or target not in timestamps:
            raise ValueError(f"edge {source} -> {target} leaves the memories being ordered")
        if source == target:
            raise CycleError([source, source])
        waiting_on[source].add(target)
        dependents[target].add(source)
    ready = [_order_key(cid, timestamps[cid]) for cid, deps in waiting_on.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        cid = heapq.heappop(ready)[2]
        order.append(cid)
        for dependent in dependents[cid]:
            waiting_on[dependent].discard(cid)
            if not waiting_on[dependent]:
                heapq.heappush(ready, _order_key(dependent, timestamps[dependent]))
    if len(order) < len(timestamps):
        raise CycleError(_a_cycle({cid: deps for cid, deps in waiting_on.items() if deps}))
    return tuple(order)


def _a_cycle(waiting_on: Mapping[str, set[str]]) -> list[str]:
    """A cycle among memories each still waiting on another (one always exists), from the smallest CID."""
    path: list[str] = []
    seen: dict[str, int] = {}
    cid = min(waiting_on)
    while cid not in seen:
        seen[cid] = len(path)
        path.append(cid)
        cid = min(waiting_on[cid])
    return path[seen[cid]:] + [cid]
