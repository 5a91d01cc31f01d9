"""Recollections: recalled memories clustered, guarded against confabulation, summarised (seed 002).

1. Gather: each recent short-term item and the new prompt bring their candidate long-term
   memories, each with its weight in relation to the prompt (`exocortex_weight`); a memory
   brought by several keeps its highest weight. The top `max_cluster_memories × dimensions` by
   weight form the pool (the seed's expansion: room for `dimensions` clusters of full size).
2. Reduce the pool's embeddings with UMAP (cosine metric, `min_dist` 0 as UMAP's authors advise
   for clustering, a fixed `random_state`, hence one thread) to `dimensions`, cluster with
   HDBSCAN; its noise (memories that belong to no dense group) joins no recollection, and a pool
   that is all noise makes none: nothing in it is dense enough to summarise without blending.
   Small pools degrade: fewer than `min_cluster_size` memories make one cluster (too few to
   split; a recollection still puts them in the prompt's context with their dates); fewer than
   `min_points_for_umap` are clustered by HDBSCAN on their cosine distances, unreduced (UMAP's
   neighbour graph means little over a dozen points, and its spectral start needs more points
   than dimensions + 1).
3. Guard (the seed: clusters similar to the prompt but different from each other), in order:
   - cohesion: every member must be closer (mean cosine) to the rest of its cluster than to any
     other cluster; a member that is not moves to the cluster it is closest to (a few passes),
     and one still torn between two is dropped: it would blend two recollections into one.
   - clusters whose average link (the mean cosine over pairs of members across them) reaches
     `merge_similarity` tell the same story twice and are merged; cohesion is checked again.
   - each keeps its `max_cluster_memories` heaviest members; cohesion is checked again (drops only).
   - clusters below `min_prompt_similarity` (their centroid's cosine with the prompt) are dropped;
     the rest are ordered by it, at most `max_recollections` of them.
   The trace holds each cluster's similarity to the prompt and cohesion, the average links
   between clusters (each below both clusters' cohesion, which the cohesion rule implies), the
   merges and what was left out at each step.
4. Summary (offline): the heaviest members, each by its sentence closest to the prompt
   (`offline.summarize` with the prompt as context), in date order with their dates, under a
   line naming the prompt and the dates spanned; edges to every member weighted by its share of
   the cluster's weight.

Cost (scripts/bench_recollection.py): UMAP compiles its numba kernels on the first call in a
process (tens of seconds on a 2-core machine) and costs about a hundred milliseconds a call after
that at 50 candidates (several query embeddings): beyond a recall's latency budget, so run it
after the reply, as maintenance. A cache keyed on unchanged inputs would not help: replaying a
LoCoMo conversation, no turn's pool was the previous turn's. umap and scikit-learn are imported
on first use only, so importing the engine stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memory.engine.clusters import (
    HDBSCAN_ONLY,
    NOISE,
    NONE,
    SINGLE,
    UMAP_HDBSCAN,
    average_links,
    centroids,
    cluster_labels,
    cohesion,
    merge_similar,
    refine_cohesion,
    unit_rows,
)
from memory.engine.offline import summarize

__all__ = ["HDBSCAN_ONLY", "NONE", "SINGLE", "UMAP_HDBSCAN", "Candidate", "Cluster", "ClusterPlan", "Recollection",
           "RecollectionEdge", "RecollectionParams", "cluster_recollections", "gather_candidates",
           "summarize_recollection"]


@dataclass(frozen=True)
class Candidate:
    """A long-term memory brought by an anchor: `weight` is its weight in relation to the prompt."""

    id: str
    text: str
    embedding: tuple[float, ...]
    weight: float
    timestamp: datetime | None = None


@dataclass(frozen=True)
class RecollectionParams:
    # The seed's reference implementation: 3 dimensions, 16 memories a cluster (a pool of 48).
    dimensions: int = 3
    max_cluster_memories: int = 16
    min_cluster_size: int = 3  # HDBSCAN's; a pair is too little to call a group
    neighbours: int = 15  # UMAP's n_neighbors (its default), at most the pool size − 1
    # Under this, clustering is unreduced (module docstring); 16 = one full cluster.
    min_points_for_umap: int = 16
    # Average-link cosine at which two clusters tell one story: a typical cluster's own cohesion
    # (median 0.64 and 0.54 on LoCoMo conv-26 and conv-47 with MiniLM, where the clusters HDBSCAN
    # separates lie at median 0.52 and 0.40 from each other).
    merge_similarity: float = 0.6
    min_prompt_similarity: float = 0.2  # MiniLM cosines of unrelated texts lie around 0 to 0.15
    max_recollections: int = 3  # about what the reference's settings yield on average
    random_state: int = 42
    refine_passes: int = 5  # rounds of moving torn members before the rest are dropped

    def __post_init__(self) -> None:
        checks = {"dimensions": self.dimensions >= 1, "max_cluster_memories": self.max_cluster_memories >= 2,
                  "min_cluster_size": self.min_cluster_size >= 2, "neighbours": self.neighbours >= 2,
                  "max_recollections": self.max_recollections >= 1, "refine_passes": self.refine_passes >= 0,
                  "min_points_for_umap": self.min_points_for_umap >= max(self.dimensions + 2, self.min_cluster_size),
                  "merge_similarity": -1.0 < self.merge_similarity <= 1.0,
                  "min_prompt_similarity": -1.0 <= self.min_prompt_similarity <= 1.0}
        wrong = [name for name, ok in checks.items() if not ok]
        if wrong:
            raise ValueError(f"recollection parameters out of range: {', '.join(wrong)} ({self!r})")

    @property
    def pool_size(self) -> int:
        return self.max_cluster_memories * self.dimensions


@dataclass(frozen=True)
class Cluster:
    members: tuple[Candidate, ...]  # heaviest first
    prompt_similarity: float
    cohesion: float  # mean cosine between its members (1.0 for a single member)


@dataclass(frozen=True)
class ClusterPlan:
    method: str
    pool: tuple[Candidate, ...]
    clusters: tuple[Cluster, ...]  # most similar to the prompt first
    inter_cluster_similarity: tuple[tuple[float, ...], ...]  # average link; each cluster's cohesion on the diagonal
    merges: tuple[float, ...]  # the average-link similarity of each merge, in order
    moved: int
    dropped: dict[str, int]

    def trace(self) -> dict[str, Any]:
        between = [s for i, row in enumerate(self.inter_cluster_similarity) for s in row[i + 1:]]
        return {"method": self.method, "pool": len(self.pool), "moved": self.moved, "dropped": dict(self.dropped),
                "merges": [round(s, 4) for s in self.merges],
                "clusters": [{"members": [m.id for m in c.members], "prompt_similarity": round(c.prompt_similarity, 4),
                              "cohesion": round(c.cohesion, 4)} for c in self.clusters],
                "inter_cluster_similarity": [[round(s, 4) for s in row] for row in self.inter_cluster_similarity],
                "max_inter_cluster_similarity": round(max(between), 4) if between else None}


@dataclass(frozen=True)
class RecollectionEdge:
    member_id: str
    weight: float  # the member's share of its cluster's weight; a recollection's edges sum to 1


@dataclass(frozen=True)
class Recollection:
    text: str
    edges: tuple[RecollectionEdge, ...]
    prompt_similarity: float
    first: datetime | None
    last: datetime | None


# --- gathering --------------------------------------------------------------------------------

def gather_candidates(anchors: Sequence[Sequence[Candidate]], *, limit: int) -> tuple[Candidate, ...]:
    """The union of what each anchor brought, each memory at its highest weight, the `limit` heaviest."""
    best: dict[str, Candidate] = {}
    for candidates in anchors:
        for candidate in candidates:
            if not (math.isfinite(candidate.weight) and candidate.weight >= 0):
                raise ValueError(f"memory {candidate.id!r} has weight {candidate.weight!r}; weights are finite, ≥ 0")
            if candidate.id not in best or candidate.weight > best[candidate.id].weight:
                best[candidate.id] = candidate
    return tuple(sorted(best.values(), key=lambda c: (-c.weight, c.id))[:max(0, limit)])


def _trim(labels: np.ndarray, pool: Sequence[Candidate], *, keep: int) -> tuple[np.ndarray, int]:
    """Each cluster keeps its `keep` heaviest members (ties by id); the rest become noise."""
    labels, trimmed = labels.copy(), 0
    for cluster in set(labels.tolist()) - {NOISE}:
        members = sorted(np.flatnonzero(labels == cluster), key=lambda i: (-pool[i].weight, pool[i].id))
        labels[members[keep:]] = NOISE
        trimmed += len(members[keep:])
    return labels, trimmed


# --- the plan ---------------------------------------------------------------------------------

def cluster_recollections(*, prompt_embedding: Sequence[float], anchors: Sequence[Sequence[Candidate]],
                          params: RecollectionParams = RecollectionParams()) -> ClusterPlan:
    """Gather, reduce, cluster and guard (module docstring): the clusters to summarise, and why."""
    pool = gather_candidates(anchors, limit=params.pool_size)
    vectors = unit_rows([c.embedding for c in pool], [c.id for c in pool]) if pool else np.zeros((0, 0))
    prompt = unit_rows([prompt_embedding], ["the prompt"])[0]
    if pool and len(prompt) != vectors.shape[1]:
        raise ValueError(f"the prompt's embedding has {len(prompt)} dimensions, the memories' {vectors.shape[1]}")
    # UMAP's result depends on the order of its input: cluster in id order, so the same memories
    # cluster the same way whatever their weights (and a cache could key on their ids).
    by_id = np.array(sorted(range(len(pool)), key=lambda i: pool[i].id), dtype=int)
    found, method = cluster_labels(vectors[by_id], dimensions=params.dimensions,
                                   min_cluster_size=params.min_cluster_size, neighbours=params.neighbours,
                                   min_points_for_umap=params.min_points_for_umap, random_state=params.random_state)
    labels = np.empty(len(pool), dtype=int)
    labels[by_id] = found
    dropped = {"noise_memories": int((labels == NOISE).sum())}
    similarity = vectors @ vectors.T
    labels, moved, torn = refine_cohesion(similarity, labels, passes=params.refine_passes)
    labels, merges = merge_similar(similarity, labels, threshold=params.merge_similarity)
    if merges:
        labels, moved_again, torn_again = refine_cohesion(similarity, labels, passes=params.refine_passes)
        moved, torn = moved + moved_again, torn + torn_again
    labels, dropped["trimmed_memories"] = _trim(labels, pool, keep=params.max_cluster_memories)
    labels, _, torn_after_trim = refine_cohesion(similarity, labels, passes=0)
    dropped["torn_memories"] = torn + torn_after_trim
    clusters, left_out = _kept_clusters(pool, vectors, labels, prompt, params=params, single=method == SINGLE)
    dropped.update(left_out)
    _, linked = average_links(similarity, _relabel(pool, clusters))
    np.fill_diagonal(linked, [c.cohesion for c in clusters])
    between = tuple(tuple(float(s) for s in row) for row in linked)
    return ClusterPlan(method=method, pool=pool, clusters=clusters, inter_cluster_similarity=between,
                       merges=tuple(merges), moved=moved, dropped=dropped)


def _kept_clusters(pool: Sequence[Candidate], vectors: np.ndarray, labels: np.ndarray, prompt: np.ndarray, *,
                   params: RecollectionParams, single: bool) -> tuple[tuple[Cluster, ...], dict[str, int]]:
    """Clusters of two or more members (any size when the pool was too small to split) near enough
    to the prompt, the closest first, at most `max_recollections`; and how many were left out why."""
    found, small, off_prompt = [], 0, 0
    numbers, middles = centroids(vectors, labels)
    for cluster, centroid in zip(numbers, middles, strict=True):
        indices = sorted(np.flatnonzero(labels == cluster), key=lambda i: (-pool[i].weight, pool[i].id))
        if len(indices) < 2 and not single:
            small += 1
            continue
        prompt_similarity = float(centroid @ prompt)
        if prompt_similarity < params.min_prompt_similarity:
            off_prompt += 1
            continue
        found.append(Cluster(members=tuple(pool[i] for i in indices), prompt_similarity=prompt_similarity,
                             cohesion=cohesion(vectors[indices])))
    found.sort(key=lambda c: (-c.prompt_similarity, c.members[0].id))
    left_out = {"small_clusters": small, "off_prompt_clusters": off_prompt,
                "surplus_clusters": max(0, len(found) - params.max_recollections)}
    return tuple(found[:params.max_recollections]), left_out


def _relabel(pool: Sequence[Candidate], clusters: Sequence[Cluster]) -> np.ndarray:
    """Labels of the pool by final cluster, in the clusters' order (for their centroids)."""
    where = {member.id: number for number, cluster in enumerate(clusters) for member in cluster.members}
    return np.array([where.get(c.id, NOISE) for c in pool], dtype=int)


# --- the summary ------------------------------------------------------------------------------

def _day(moment: datetime) -> str:
    return f"{moment.day} {moment:%B} {moment.year}"


def _snippet(text: str, limit: int) -> str:
    words = " ".join(text.split())
    if len(words) <= limit:
        return words
    cut = words[:limit - 1]
    return (cut[:cut.rfind(" ")] if " " in cut else cut).rstrip(" ,;:") + "…"


def summarize_recollection(*, cluster: Cluster, prompt: str, max_quoted: int = 4,
                           max_chars: int = 700) -> Recollection:
    """The recollection's text (offline) and its edges: see the module docstring, step 4."""
    if not cluster.members:
        raise ValueError("a recollection needs at least one member")
    if max_quoted < 1 or max_chars < 200:
        raise ValueError(f"max_quoted must be ≥ 1 and max_chars ≥ 200, got {max_quoted} and {max_chars}")
    dates = sorted(m.timestamp for m in cluster.members if m.timestamp is not None)
    first, last = (dates[0], dates[-1]) if dates else (None, None)
    span = "" if first is None or last is None else (
        f" on {_day(first)}" if _day(first) == _day(last) else f" from {_day(first)} to {_day(last)}")
    count = len(cluster.members)
    header = f"Recollection for “{_snippet(prompt, 80)}”: {count} {'memory' if count == 1 else 'memories'}{span}."
    lines = _quoted_lines(cluster.members[:max_quoted], prompt=prompt, room=max_chars - len(header) - 1)
    total = sum(m.weight for m in cluster.members)
    edges = tuple(RecollectionEdge(member_id=m.id, weight=m.weight / total if total else 1.0 / count)
                  for m in cluster.members)
    return Recollection(text=" ".join([header, *lines]), edges=edges, prompt_similarity=cluster.prompt_similarity,
                        first=first, last=last)


def _quoted_lines(members: Sequence[Candidate], *, prompt: str, room: int) -> list[str]:
    """Each member's sentence closest to the prompt, dated, oldest first, all within `room` characters.

    The lightest members give way until each line has at least 60 characters.
    """
    members = list(members)
    while True:
        prefixes = [f"[{_day(m.timestamp)}] " if m.timestamp else "" for m in members]
        each = (room - sum(len(p) + 1 for p in prefixes)) // len(members)
        if each >= 60 or len(members) == 1:
            break
        members.pop()  # heaviest first: the last is the lightest
    order = sorted(range(len(members)), key=lambda i: (members[i].timestamp is None, members[i].timestamp or 0,
                                                       members[i].id))
    return [prefixes[i] + (summarize([members[i].text], max_sentences=1, max_chars=max(each, 1), context=[prompt])
                           or _snippet(members[i].text, max(each, 1))) for i in order]
