"""Similarity measures used by Fscore and retrieval."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0.0 when either vector is empty or zero."""
    if not a or not b:
        return 0.0
    if len(a) != len(b):
        raise ValueError(f"vectors differ in dimension: {len(a)} != {len(b)}")
    # map(mul) adds the same products in the same order as a generator would, at a third of the cost
    # (a page is scored against every active segment on each move).
    dot = sum(map(operator.mul, a, b))
    norm = math.sqrt(sum(map(operator.mul, a, a))) * math.sqrt(sum(map(operator.mul, b, b)))
    return dot / norm if norm else 0.0


def cosines(vector: Sequence[float], others: Sequence[Sequence[float]]) -> list[float]:
    """cosine(vector, other) for each of `others` (0.0 for an empty or zero one, or an empty
    `vector`), in float64 as cosine computes it."""
    if not others:
        return []
    query = np.asarray(vector, dtype=np.float64)
    sized = [len(other) == len(query) and len(query) > 0 for other in others]
    if any(len(other) and len(query) and len(other) != len(query) for other in others):
        raise ValueError("vectors differ in dimension")
    matrix = np.zeros((len(others), len(query)), dtype=np.float64)
    for row, (other, ok) in enumerate(zip(others, sized, strict=True)):
        if ok:
            matrix[row] = other
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
    dots = matrix @ query if len(query) else np.zeros(len(others))
    return [float(d / n) if n else 0.0 for d, n in zip(dots, norms, strict=True)]


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """|A ∩ B| / |A ∪ B|; 0.0 for two empty sets."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def fscore(*, cos: float, keywords_a: frozenset[str], keywords_b: frozenset[str]) -> float:
    """Fscore = cos(e_s, e_p) + Jaccard(K_s, K_p) (MemoryOS paper, Eq. 2)."""
    return cos + jaccard(keywords_a, keywords_b)


def mean_vector(vectors: Sequence[Sequence[float] | np.ndarray]) -> tuple[float, ...]:
    """Unit-normalised mean; the segment embedding is the centroid of its pages. The vectors may be
    float32 arrays (stored vectors read with bytes_to_array): they are summed in float64, one
    vector after another, so the result is the same to the bit as a sum of Python floats."""
    if not vectors:
        return ()
    total = np.zeros(len(vectors[0]))
    for vec in vectors:
        total += np.asarray(vec, dtype=float)
    sums = total.tolist()
    norm = math.sqrt(sum(v * v for v in sums))
    return tuple(v / norm for v in sums) if norm else tuple(sums)


def running_centroid(centroid: Sequence[float], count: int, added: Sequence[float]) -> tuple[float, ...]:
    """Centroid of count+1 unit vectors from the centroid of `count` of them, re-normalised.

    The stored centroid is normalised, so this is an approximation of the true mean
    direction; it is exact for count == 0 and close enough for topic matching.
    """
    if count <= 0 or not centroid:
        return mean_vector([added])
    weighted = [c * count + a for c, a in zip(centroid, added, strict=True)]
    return mean_vector([weighted])
