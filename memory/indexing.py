"""Rebuilding Qdrant from the database: the vectors are derived data."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tqdm import tqdm

from memory import components
from memory.engine.ports import VectorPoint
from memory.maintenance import _segment_point
from memory.models import DialoguePage, PageStatus, Segment, Tier, bytes_to_vector, vector_to_bytes
from memory.services import page_point, page_text
from memory.turns import index_turns, turn_facts
from persona.models import AgentTrait, KnowledgeFact

BATCH = 256


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
        vectors = components.embedder().embed([page_text(p.query, p.response, p.reply_model) for p in missing])
        for page, vector in zip(missing, vectors, strict=True):
            page.embedding = vector_to_bytes(vector)
            page.save(update_fields=["embedding"])
    return [page_point(p, bytes_to_vector(p.embedding)) for p in batch]


def _lpm_points(batch: list, kind: str) -> list[VectorPoint]:
    vectors = components.embedder().embed([row.text for row in batch])
    return [VectorPoint(id=str(row.id), vector=vec, text=row.text,
                        payload={"user_id": str(row.user_id), "kind": kind,
                                 "timestamp": row.timestamp.timestamp() if row.timestamp else 0.0})
            for row, vec in zip(batch, vectors, strict=True)]


def reindex_all(*, progress: bool = False) -> dict[str, int]:
    """Drop every point, then upsert pages, segments, KB facts, agent traits and utterances."""
    index = components.vector_index()
    index.clear()
    turn_facts().clear()
    counts = {"page": 0, "segment": 0, "kb": 0, "agent_trait": 0}
    pages = DialoguePage.objects.filter(status=PageStatus.COMPLETE).exclude(tier=Tier.ARCHIVED).order_by("pk")
    sources = [
        ("page", pages, _page_points),
        ("segment", Segment.objects.filter(status=Segment.Status.ACTIVE).order_by("pk"),
         lambda b: [_segment_point(s) for s in b]),
        ("kb", KnowledgeFact.objects.order_by("pk"), lambda b: _lpm_points(b, "kb")),
        ("agent_trait", AgentTrait.objects.order_by("pk"), lambda b: _lpm_points(b, "agent_trait")),
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
