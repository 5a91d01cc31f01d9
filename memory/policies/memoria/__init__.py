"""Memoria (memory/policies/memoria/): recall by a weighted sum of five terms and budgeted expansion
along the memory graph; importance rated after each reply; memories bubbling up between sonas.

- engine/: the pure formulas (scoring.py: the five terms and the ranking; expansion.py: budgeted
  expansion and the causal order; rating.py: the rating prompt and the word-overlap fallback);
- settings.py: the MEMORYOS_MEMORIA_* values as MemoriaParams;
- ranking.py: the "memoria" recall policy; services.py: its writes (ratings, importance, bubbling up,
  sona memberships); hooks.py: what it plugs into the core; bench.py: `manage.py bench memoria`.
Tests: tests/policies/memoria/.
"""

from __future__ import annotations


def register() -> None:
    """Register the policy and the hooks (memory/policies/registry.py calls this once)."""
    from memory.policies.memoria import hooks, ranking  # noqa: F401  (ranking registers the policy)

    hooks.register()
