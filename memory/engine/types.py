"""Plain values the engine computes with. Frozen; functions return new ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class MemoryParams:
    """Every tier parameter, with the MemoryOS paper's defaults."""

    stm_capacity: int = 7
    fscore_threshold: float = 0.6  # theta
    mtm_capacity: int = 200
    kb_capacity: int = 100
    agent_trait_capacity: int = 100
    trait_dimensions: int = 90
    heat_threshold: float = 5.0  # tau
    recency_mu_seconds: float = 1e7
    heat_alpha: float = 1.0
    heat_beta: float = 1.0
    heat_gamma: float = 1.0
    top_m_segments: int = 5
    top_k_pages: int = 10
    top_kb_facts: int = 10
    top_agent_traits: int = 10
    # How many segments by cosine the vector index proposes before Fscore re-ranks them.
    segment_candidates: int = 20
    # Cosine between consecutive pages above which the dialogue chain continues.
    chain_threshold: float = 0.3
    prompt_token_budget: int = 3000


@dataclass(frozen=True)
class PageView:
    id: str
    query: str
    response: str
    timestamp: datetime
    keywords: frozenset[str] = frozenset()
    embedding: tuple[float, ...] = ()
    seq: int = 0


@dataclass(frozen=True)
class SegmentView:
    id: str
    summary: str
    keywords: frozenset[str]
    embedding: tuple[float, ...]
    n_visit: int
    l_interaction: int
    last_access: datetime
    page_count: int = 0
    pinned: bool = False  # by an operator, or holding a pinned page: never evicted


@dataclass(frozen=True)
class RecalledItem:
    """One thing retrieval put in front of the model, with why it was chosen."""

    kind: str  # stm_page | mtm_page | kb_fact | agent_trait | profile | user_trait | agent_profile
    ref: str
    text: str
    score: float = 0.0
    timestamp: datetime | None = None
    breakdown: Mapping[str, float] = field(default_factory=dict)
    source_ids: tuple[str, ...] = ()
    # For a KB fact or agent trait: the pages it was learned from (the relevance core lifts their turns).
    source_page_ids: tuple[str, ...] = ()
