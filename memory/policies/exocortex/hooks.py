"""What the Exocortex plugs into the core: recollections as a maintenance step, its bench ablation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from memory.policies import registry
from memory.policies.exocortex import ranking
from memory.policies.exocortex.services import recollections_make
from memory.recall.base import get_policy


@contextmanager
def decay_off() -> Iterator[None]:
    """The Exocortex and Generative Agents without recency (relevance · type weight)."""
    saved = ranking.DECAY
    ranking.DECAY = False
    try:
        yield
    finally:
        ranking.DECAY = saved


def _weighted(policy: str) -> bool:
    return isinstance(get_policy(policy), ranking.WeightedPolicy)


def register() -> None:
    registry.on_maintenance("recollections", recollections_make)
    registry.on_ablation("exocortex-decay", "Exocortex and Generative Agents without recency (relevance · type weight)",
                         decay_off, _weighted)
