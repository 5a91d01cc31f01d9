"""A stored recollection's point in the vector index: written when the Exocortex stores one
(memory/policies/exocortex/services.py) and again when the index is rebuilt (memory/services/reindex.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.engine.ports import VectorPoint
from memory.models import Recollection

RECOLLECTION_KIND = "recollection"  # the point's kind in the index, which the Exocortex's recall searches


def recollection_point(row: Recollection, embedding: Sequence[float]) -> VectorPoint:
    return VectorPoint(id=str(row.id), vector=list(embedding), text=row.text,
                       payload={"user_id": str(row.user_id), "kind": RECOLLECTION_KIND,
                                "timestamp": row.created_at.timestamp()})
