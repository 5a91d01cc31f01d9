"""Clustering unit vectors for recollections: UMAP + HDBSCAN, and the checks on what they find.

Labels follow HDBSCAN: a cluster number per point, −1 (NOISE) for points in no cluster. The
similarity matrices are cosines between unit rows. recollection.py says why each step exists.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

NONE, SINGLE, HDBSCAN_ONLY, UMAP_HDBSCAN = "none", "single", "hdbscan", "umap+hdbscan"
NOISE = -1


def unit_rows(vectors: Sequence[Sequence[float]], names: Sequence[str]) -> np.ndarray:
    """The vectors as unit rows; `names` say which one is wrong when one is."""
    if len({len(v) for v in vectors}) > 1:
        raise ValueError("embeddings differ in dimension: " + ", ".join(f"{n}: {len(v)}" for n, v in
                                                                          zip(names, vectors, strict=True)))
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    bad = [name for name, norm in zip(names, norms, strict=True) if not (math.isfinite(norm) and norm > 0)]
    if bad:
        raise ValueError(f"embeddings must be finite and non-zero: {', '.join(bad)}")
    result: np.ndarray = matrix / norms[:, None]
    return result


@functools.cache
def _umap() -> Any:
    import umap  # here, not at the top: importing it loads numba (seconds), which most callers never need

    # A fixed random_state makes UMAP single-threaded by design; it says so on every call.
    warnings.filterwarnings("ignore", message=r"n_jobs value .* overridden", category=UserWarning)
    return umap


def _hdbscan(min_cluster_size: int, *, precomputed: bool) -> Any:
    from sklearn.cluster import HDBSCAN

    return HDBSCAN(min_cluster_size=min_cluster_size, metric="precomputed" if precomputed else "euclidean", copy=True)


def cluster_labels(vectors: np.ndarray, *, dimensions: int, min_cluster_size: int, neighbours: int,
                   min_points_for_umap: int, random_state: int) -> tuple[np.ndarray, str]:
    """HDBSCAN labels (−1: noise) for unit row vectors, and how they were found.

    No points: NONE. Fewer than `min_cluster_size`: one cluster (SINGLE). Fewer than
    `min_points_for_umap`: HDBSCAN on cosine distances (HDBSCAN_ONLY). Else UMAP (cosine,
    `min_dist` 0 as UMAP's authors advise for clustering, seeded, hence one thread) to
    `dimensions`, then HDBSCAN (UMAP_HDBSCAN).
    """
    count = len(vectors)
    if count == 0:
        return np.zeros(0, dtype=int), NONE
    if count < min_cluster_size:
        return np.zeros(count, dtype=int), SINGLE
    if count < min_points_for_umap:
        distances = np.clip(1.0 - vectors @ vectors.T, 0.0, 2.0)
        np.fill_diagonal(distances, 0.0)
        return _hdbscan(min_cluster_size, precomputed=True).fit(distances).labels_, HDBSCAN_ONLY
    reducer = _umap().UMAP(n_components=dimensions, n_neighbors=min(neighbours, count - 1), min_dist=0.0,
                           metric="cosine", random_state=random_state, n_jobs=1)
    from threadpoolctl import threadpool_limits

    # numba's first parallel launch in a process sets the OpenMP thread count of every loaded
    # libgomp to all CPUs, and torch shares it: the embedder's EMBED_THREADS would silently become
    # the CPU count. The context puts back what it found (and a seeded UMAP runs on one thread).
    with threadpool_limits(limits=1, user_api="openmp"):
        reduced = reducer.fit_transform(vectors.astype(np.float32))
    return _hdbscan(min_cluster_size, precomputed=False).fit(reduced).labels_, UMAP_HDBSCAN


def _links(similarity: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point: mean cosine to the rest of its cluster, to the closest other cluster, and which that is.

    Noise has no cluster (own +inf: never torn); a singleton has no rest (own −inf: torn as soon
    as another cluster exists).
    """
    count = len(labels)
    own, other, closest = np.full(count, np.inf), np.full(count, -np.inf), np.full(count, NOISE)
    clusters = np.array(sorted(set(labels.tolist()) - {NOISE}), dtype=int)
    if len(clusters) == 0:
        return own, other, closest
    member = labels[:, None] == clusters[None, :]
    sizes = member.sum(axis=0)
    sums = similarity @ member.astype(np.float64)
    placed = np.flatnonzero(labels != NOISE)
    column = np.argmax(member[placed], axis=1)
    rest = sizes[column] - 1
    own[placed] = np.where(rest > 0, (sums[placed, column] - similarity[placed, placed]) / np.maximum(rest, 1),
                           -np.inf)
    means = np.where(member, -np.inf, sums / sizes)
    return own, means.max(axis=1), clusters[means.argmax(axis=1)]


def _torn(own: np.ndarray, other: np.ndarray) -> np.ndarray:
    result: np.ndarray = np.isfinite(other) & (other >= own)
    return result


def refine_cohesion(similarity: np.ndarray, labels: np.ndarray, *, passes: int) -> tuple[np.ndarray, int, int]:
    """Move members closer to another cluster there (`passes` rounds), then drop those still torn."""
    labels, moved, dropped = labels.copy(), 0, 0
    for _ in range(passes):
        own, other, closest = _links(similarity, labels)
        torn = _torn(own, other)
        if not torn.any():
            return labels, moved, dropped
        labels[torn] = closest[torn]
        moved += int(torn.sum())
    while True:
        own, other, _ = _links(similarity, labels)
        torn = _torn(own, other)
        if not torn.any():
            return labels, moved, dropped
        labels[int(np.argmax(np.where(torn, other - own, -np.inf)))] = NOISE  # the most torn first
        dropped += 1


def centroids(vectors: np.ndarray, labels: np.ndarray) -> tuple[list[int], np.ndarray]:
    clusters = sorted(set(labels.tolist()) - {NOISE})
    sums = np.zeros((len(clusters), vectors.shape[1]))
    for row, cluster in enumerate(clusters):
        sums[row] = vectors[labels == cluster].sum(axis=0)
    return clusters, sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)


def average_links(similarity: np.ndarray, labels: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The clusters and their average-link similarity: the mean cosine over pairs of members, one
    from each (on the diagonal: the mean over all pairs of a cluster's members, itself included)."""
    clusters = sorted(set(labels.tolist()) - {NOISE})
    member = (labels[:, None] == np.array(clusters, dtype=int)[None, :]).astype(np.float64)
    sizes = member.sum(axis=0)
    result: np.ndarray = (member.T @ similarity @ member) / np.outer(sizes, sizes)
    return clusters, result


def merge_similar(similarity: np.ndarray, labels: np.ndarray, *, threshold: float) -> tuple[np.ndarray, list[float]]:
    """Merge the two most similar clusters (average link) while their similarity reaches `threshold`.

    Average link, not centroids: the centroid of a merged cluster moves to the middle and grows
    closer to every other one, so centroid merging cascades; an average link never exceeds the
    larger of the two it replaces.
    """
    labels, merges = labels.copy(), []
    while True:
        clusters, between = average_links(similarity, labels)
        if len(clusters) < 2:
            return labels, merges
        np.fill_diagonal(between, -np.inf)
        first, second = np.unravel_index(int(np.argmax(between)), between.shape)
        if between[first, second] < threshold:
            return labels, merges
        labels[labels == clusters[second]] = clusters[first]
        merges.append(float(between[first, second]))


def cohesion(vectors: np.ndarray) -> float:
    """Mean cosine over distinct pairs of unit vectors; 1.0 for one."""
    count = len(vectors)
    if count < 2:
        return 1.0
    return float(((vectors @ vectors.T).sum() - count) / (count * (count - 1)))
