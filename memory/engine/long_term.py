"""Long-term memory: bounded FIFO queues for the KB and agent traits."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def fifo_overflow(ids_oldest_first: Sequence[str], *, capacity: int,
                  pinned: Collection[str] = ()) -> tuple[str, ...]:
    """Ids to drop so that at most `capacity` remain, oldest first; pinned ids are never dropped
    (so pins beyond the capacity leave room for nothing else)."""
    excess = max(0, len(ids_oldest_first) - capacity)
    return tuple([i for i in ids_oldest_first if i not in pinned][:excess])


def normalise_fact(text: str) -> str:
    """Canonical form used to avoid storing the same fact twice."""
    return " ".join(text.lower().strip(" .!?").split())
