"""Memoria's settings as its engine takes them: the MEMORYOS_MEMORIA_* values read into MemoriaParams."""

from __future__ import annotations

from django.conf import settings

from memory.policies.memoria.engine.scoring import MemoriaParams


def memoria_params() -> MemoriaParams:
    """Memoria's weights and budgets (MEMORYOS_MEMORIA_*); MemoriaParams refuses bad values."""
    cfg = settings.MEMORYOS
    return MemoriaParams(
        w_recency=cfg["MEMORIA_W_RECENCY"], w_vector=cfg["MEMORIA_W_VECTOR"], w_fts=cfg["MEMORIA_W_FTS"],
        w_importance=cfg["MEMORIA_W_IMPORTANCE"], w_sona=cfg["MEMORIA_W_SONA"],
        recency_half_life_s=cfg["MEMORIA_HALF_LIFE_S"], importance_alpha=cfg["MEMORIA_IMPORTANCE_ALPHA"],
        top_k=cfg["MEMORIA_TOP_K"], seed_budget=cfg["MEMORIA_SEED_BUDGET"], pass_on=cfg["MEMORIA_PASS_ON"],
        min_budget=cfg["MEMORIA_MIN_BUDGET"], max_pulled=cfg["MEMORIA_MAX_PULLED"],
    )
