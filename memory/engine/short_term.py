"""Short-term memory: a FIFO of dialogue pages and their dialogue chain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Overflow:
    """Pages that leave STM for MTM, oldest first."""

    move_to_mtm: tuple[str, ...]


def stm_overflow(page_ids_oldest_first: Sequence[str], *, capacity: int) -> Overflow:
    """FIFO: everything beyond the newest `capacity` pages moves on."""
    if capacity < 1:
        raise ValueError("stm_capacity must be at least 1")
    excess = max(0, len(page_ids_oldest_first) - capacity)
    return Overflow(move_to_mtm=tuple(page_ids_oldest_first[:excess]))


@dataclass(frozen=True)
class ChainDecision:
    """Whether a new page continues the previous page's dialogue chain."""

    continues: bool
    similarity: float


def chain_link(*, similarity: float | None, threshold: float) -> ChainDecision:
    """Offline continuity verdict: the chain continues when the new page is close to the last one.

    `similarity` is None for the user's first page: a new chain starts.
    """
    if similarity is None:
        return ChainDecision(continues=False, similarity=0.0)
    return ChainDecision(continues=similarity >= threshold, similarity=similarity)
