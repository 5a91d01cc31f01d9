"""Long-term persona memory: bounded FIFO queues for the KB and agent traits."""

from __future__ import annotations

from collections.abc import Sequence


def fifo_overflow(ids_oldest_first: Sequence[str], *, capacity: int) -> tuple[str, ...]:
    """Ids to drop so that at most `capacity` remain, oldest first."""
    excess = max(0, len(ids_oldest_first) - capacity)
    return tuple(ids_oldest_first[:excess])


def normalise_fact(text: str) -> str:
    """Canonical form used to avoid storing the same fact twice."""
    return " ".join(text.lower().strip(" .!?").split())
