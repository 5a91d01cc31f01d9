"""Mid-term memory: merge pages into topic segments, evict the coldest, promote the hottest."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from .heat import segment_heat
from .similarity import cosines, jaccard, running_centroid
from .types import MemoryParams, PageView, SegmentView


@dataclass(frozen=True)
class SegmentScore:
    segment_id: str
    cos: float
    jaccard: float

    @property
    def fscore(self) -> float:
        return self.cos + self.jaccard


class SegmentTopic(NamedTuple):
    """What Fscore reads of a segment: a page is scored against every active one on each move, so
    a move reads these three columns, not whole segments (the vector may be a float32 array)."""

    id: str
    keywords: frozenset[str]
    embedding: Sequence[float]


@dataclass(frozen=True)
class MergePlan:
    """Join `segment_id`, or start a new segment when it is None."""

    segment_id: str | None
    candidates: tuple[SegmentScore, ...]


@dataclass(frozen=True)
class Eviction:
    segment_ids: tuple[str, ...]
    heats: tuple[float, ...]


@dataclass(frozen=True)
class Promotion:
    segment_id: str
    heat: float


def score_segments(*, embedding: Sequence[float], keywords: frozenset[str],
                   segments: Iterable[SegmentView | SegmentTopic]) -> list[SegmentScore]:
    """Fscore of every segment against a page or query, best first (ties by id for determinism).

    The cosines in one matrix product: a page is scored against every active segment (up to
    MTM_CAPACITY) on each move, and a cosine at a time in Python was a fifth of a write's own work."""
    segments = list(segments)
    coses = cosines(embedding, [seg.embedding for seg in segments])
    scores = [SegmentScore(segment_id=seg.id, cos=cos, jaccard=jaccard(keywords, seg.keywords))
              for seg, cos in zip(segments, coses, strict=True)]
    return sorted(scores, key=lambda s: (-s.fscore, s.segment_id))


def plan_merge(page: PageView, segments: Iterable[SegmentView | SegmentTopic], *,
               params: MemoryParams) -> MergePlan:
    """A page joins the best segment whose Fscore exceeds θ, else it starts a new one."""
    scores = score_segments(embedding=page.embedding, keywords=page.keywords, segments=segments)
    best = scores[0] if scores else None
    chosen = best.segment_id if best and best.fscore > params.fscore_threshold else None
    return MergePlan(segment_id=chosen, candidates=tuple(scores))


def segment_keywords(page_keywords: Sequence[frozenset[str]], *, limit: int = 10) -> frozenset[str]:
    """The keywords that recur most across a segment's pages (ties alphabetical)."""
    counts = Counter(word for keywords in page_keywords for word in keywords)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return frozenset(word for word, _ in ranked[:limit])


def segment_after_merge(segment: SegmentView, page: PageView) -> SegmentView:
    """One more page: L_interaction and the centroid grow. Keywords are refreshed by the caller."""
    return replace(
        segment,
        l_interaction=segment.l_interaction + 1,
        page_count=segment.page_count + 1,
        embedding=running_centroid(segment.embedding, segment.page_count, page.embedding),
    )


def segment_after_visit(segment: SegmentView, *, now: datetime) -> SegmentView:
    """Retrieval bumps N_visit and refreshes recency."""
    return replace(segment, n_visit=segment.n_visit + 1, last_access=now)


def segment_after_promotion(segment: SegmentView) -> SegmentView:
    """After its content reaches LPM, L_interaction resets to 0 so its heat falls."""
    return replace(segment, l_interaction=0)


def plan_eviction(segments: Sequence[SegmentView], *, now: datetime, params: MemoryParams) -> Eviction:
    """Over capacity, the coldest segments go (ties: least recently accessed, then id); a pinned
    segment never goes, so pins beyond the capacity leave MTM over it."""
    excess = len(segments) - params.mtm_capacity
    if excess <= 0:
        return Eviction(segment_ids=(), heats=())
    ranked = sorted(
        ((segment_heat(seg, now=now, params=params), seg) for seg in segments if not seg.pinned),
        key=lambda pair: (pair[0], pair[1].last_access, pair[1].id),
    )
    coldest = ranked[:excess]
    return Eviction(segment_ids=tuple(seg.id for _, seg in coldest),
                    heats=tuple(heat for heat, _ in coldest))


def promotion_floor(params: MemoryParams) -> float:
    """What α·N_visit + β·L_interaction must exceed for a segment's heat to pass τ: recency is at
    most 1, so γ·R_recency adds at most max(γ, 0). A store may read only the segments above it
    (no recency needed) and leave the exact test to plan_promotions."""
    return params.heat_threshold - max(params.heat_gamma, 0.0)


def plan_promotions(segments: Iterable[SegmentView], *, now: datetime,
                    params: MemoryParams) -> list[Promotion]:
    """Segments whose heat exceeds τ and that hold pages not yet promoted (L_interaction > 0).

    Without the second condition a much-visited segment would be promoted again on every
    pass with nothing new to extract.
    """
    promotions = []
    for seg in segments:
        heat = segment_heat(seg, now=now, params=params)
        if heat > params.heat_threshold and seg.l_interaction > 0:
            promotions.append(Promotion(segment_id=seg.id, heat=heat))
    return sorted(promotions, key=lambda p: (-p.heat, p.segment_id))
