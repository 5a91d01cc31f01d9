"""Memory settings as the engine takes them: `settings.MEMORYOS` read into plain values."""

from __future__ import annotations

from django.conf import settings

from memory.engine.types import MemoryParams


def memory_params() -> MemoryParams:
    """Every tier parameter (the paper's defaults unless the environment says otherwise)."""
    cfg = settings.MEMORYOS
    return MemoryParams(
        stm_capacity=cfg["STM_CAPACITY"], fscore_threshold=cfg["FSCORE_THRESHOLD"],
        mtm_capacity=cfg["MTM_CAPACITY"], kb_capacity=cfg["KB_CAPACITY"],
        agent_trait_capacity=cfg["AGENT_TRAIT_CAPACITY"], trait_dimensions=cfg["TRAIT_DIMENSIONS"],
        heat_threshold=cfg["HEAT_THRESHOLD"], recency_mu_seconds=cfg["RECENCY_MU_SECONDS"],
        heat_alpha=cfg["HEAT_ALPHA"], heat_beta=cfg["HEAT_BETA"], heat_gamma=cfg["HEAT_GAMMA"],
        top_m_segments=cfg["TOP_M_SEGMENTS"], top_k_pages=cfg["TOP_K_PAGES"],
        top_kb_facts=cfg["TOP_KB_FACTS"], top_agent_traits=cfg["TOP_AGENT_TRAITS"],
        chain_threshold=cfg["CHAIN_THRESHOLD"], prompt_token_budget=cfg["PROMPT_TOKEN_BUDGET"],
    )

