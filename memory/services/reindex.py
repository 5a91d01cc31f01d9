"""Rebuilding Qdrant from the database: the vectors are derived data. index_check compares the two
(a server runs it as it starts) and reindexes the people whose pages the index lacks."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.models import Count
from tqdm import tqdm

from memory.adapters import configured
from memory.adapters.vectors import dir_size_mb
from memory.engine.ports import VectorPoint
from memory.models import DialoguePage, PageStatus, Recollection, Segment, Tier, bytes_to_vector, vector_to_bytes
from memory.recall.turn_facts import turn_facts
from memory.services.long_term import lpm_point
from memory.services.pages import page_point, page_row_text
from memory.services.recollections import recollection_point
from memory.services.segments import segment_point
from memory.services.utterances import index_turns
from persona.models import AgentTrait, KnowledgeFact

BATCH = 256
log = logging.getLogger(__name__)


def _batches(rows: Iterable, size: int = BATCH) -> Iterator[list]:
    batch: list = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _page_points(batch: list[DialoguePage]) -> list[VectorPoint]:
    missing = [p for p in batch if not p.embedding]
    if missing:
        vectors = configured.embedder().embed([page_row_text(p) for p in missing])
        for page, vector in zip(missing, vectors, strict=True):
            page.embedding = vector_to_bytes(vector)
            page.save(update_fields=["embedding"])
    return [page_point(p, bytes_to_vector(p.embedding)) for p in batch]


def _lpm_points(batch: list) -> list[VectorPoint]:
    vectors = configured.embedder().embed([row.text for row in batch])
    return [lpm_point(row, vec) for row, vec in zip(batch, vectors, strict=True)]


def _indexable_pages():
    """The pages the index holds a point for: complete, embedded, neither repressed nor archived."""
    return (DialoguePage.objects.filter(status=PageStatus.COMPLETE, repressed=False).exclude(embedding=b"")
            .exclude(tier=Tier.ARCHIVED).exclude(segment__repressed=True))


@dataclass(frozen=True)
class IndexShortfall:
    user_id: int
    pages: int  # pages the database says are indexed
    points: int  # page points the index holds for the person


def index_check(*, fix: bool = False) -> list[IndexShortfall]:
    """The people whose pages the vector index lacks (a shard lost, or restored from elsewhere,
    opens without error and recalls nothing), logged as an error; with `fix`, each reindexed
    (reindex_user). The whole index's page count is read first, and only a shortfall there asks
    person by person."""
    index = configured.vector_index()
    expected = _indexable_pages().count()
    if index.count(kind="page") >= expected:
        return []
    per_user = _indexable_pages().order_by().values("user_id").annotate(n=Count("id")).values_list("user_id", "n")
    short = [IndexShortfall(user_id=user_id, pages=pages, points=points) for user_id, pages in per_user
             if (points := index.count(user_id=str(user_id), kind="page")) < pages]
    for gap in short:
        log.error("event=index_disagrees user=%s pages=%s points=%s fix=%s", gap.user_id, gap.pages, gap.points, fix)
        if fix:
            reindex_user(user_id=gap.user_id)
    return short


def reindex_all(*, progress: bool = False) -> dict[str, int]:
    """Drop every point, then upsert pages, segments, KB facts, agent traits, recollections and utterances."""
    index = configured.vector_index()
    index.clear()
    turn_facts().clear()
    counts = {"page": 0, "segment": 0, "kb": 0, "agent_trait": 0, "recollection": 0}
    # Repressed memories are kept out of the index: that is what keeps every policy from them.
    pages = (DialoguePage.objects.filter(status=PageStatus.COMPLETE, repressed=False)
             .exclude(tier=Tier.ARCHIVED).exclude(segment__repressed=True).order_by("pk"))
    sources = [
        ("page", pages, _page_points),
        ("segment", Segment.objects.filter(status=Segment.Status.ACTIVE, repressed=False).order_by("pk"),
         lambda b: [segment_point(s) for s in b]),
        ("kb", KnowledgeFact.objects.filter(repressed=False).order_by("pk"), _lpm_points),
        ("agent_trait", AgentTrait.objects.filter(repressed=False).order_by("pk"), _lpm_points),
        # Their stored vectors (a recollection's text is not re-embedded: it is what was stored);
        # one with a repressed member stays indexed, the policy checks its members at recall.
        ("recollection", Recollection.objects.filter(repressed=False).exclude(embedding=b"").order_by("pk"),
         lambda b: [recollection_point(r, bytes_to_vector(r.embedding)) for r in b]),
    ]
    DialoguePage.objects.filter(turns_indexed=True).update(turns_indexed=False)
    for kind, queryset, to_points in sources:
        bar = tqdm(total=queryset.count(), desc=f"reindex {kind}", disable=not progress, unit="pt")
        for batch in _batches(queryset.iterator(chunk_size=BATCH)):
            index.upsert(to_points(batch))
            counts[kind] += len(batch)
            bar.update(len(batch))
        bar.close()
    user_ids = DialoguePage.objects.values_list("user_id", flat=True).distinct()
    counts["turn_pages"] = sum(index_turns(user_id=user_id) for user_id in tqdm(
        list(user_ids), desc="reindex turns", disable=not progress, unit="user"))
    return counts


@dataclass(frozen=True)
class OptimizeReport:
    points: int
    seconds: float
    changed: bool
    shard_dir: Path
    size_before_mb: float
    size_after_mb: float


def vectors_optimize() -> OptimizeReport | None:
    """Build the embedded shard's HNSW indexes and merge its segments; None with a Qdrant server
    (QDRANT_URL), which optimises its collection itself."""
    if settings.QDRANT_URL:
        return None
    index = configured.vector_index()
    shard_dir = index.shard_dir
    points = index.count()
    before = dir_size_mb(shard_dir)
    started = time.perf_counter()
    changed = index.optimize()
    return OptimizeReport(points=points, seconds=time.perf_counter() - started, changed=changed,
                          shard_dir=Path(shard_dir), size_before_mb=before, size_after_mb=dir_size_mb(shard_dir))



def reindex_user(*, user_id: int) -> dict[str, int]:
    """Upsert one user's points (pages, segments, KB facts, agent traits, recollections, utterances),
    as reindex_all does for everyone; after an import, say. Repressed memories stay out."""
    index = configured.vector_index()
    pages = (DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, repressed=False)
             .exclude(tier=Tier.ARCHIVED).exclude(segment__repressed=True).order_by("pk"))
    sources = [
        ("page", pages, _page_points),
        ("segment", Segment.objects.filter(user_id=user_id, status=Segment.Status.ACTIVE, repressed=False)
         .order_by("pk"), lambda b: [segment_point(s) for s in b]),
        ("kb", KnowledgeFact.objects.filter(user_id=user_id, repressed=False).order_by("pk"), _lpm_points),
        ("agent_trait", AgentTrait.objects.filter(user_id=user_id, repressed=False).order_by("pk"), _lpm_points),
        ("recollection", Recollection.objects.filter(user_id=user_id, repressed=False).exclude(embedding=b"")
         .order_by("pk"), lambda b: [recollection_point(r, bytes_to_vector(r.embedding)) for r in b]),
    ]
    counts = {}
    for kind, queryset, to_points in sources:
        counts[kind] = 0
        for batch in _batches(queryset.iterator(chunk_size=BATCH)):
            index.upsert(to_points(batch))
            counts[kind] += len(batch)
    counts["turn_pages"] = index_turns(user_id=user_id)
    return counts
