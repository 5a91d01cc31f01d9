"""The Exocortex (memory/policies/exocortex/): recall weighted by relevance, a two-sided decay curve
and a type weight; recollections made by maintenance after the reply; Generative Agents' formula on
the same candidates.

- engine/: the pure formulas (decay.py: the decay curve, nostalgia and both weights;
  recollection.py: clustering a turn's context and summarising each cluster);
- ranking.py: the "exocortex" and "generative_agents" policies;
- services.py: its writes (decay settings, recollections); selectors.py: the decay settings and
  curves the profile page and the inspector show; web.py: the decay settings' form and view;
  hooks.py: what it plugs into the core.
Tests: tests/policies/exocortex/.
"""

from __future__ import annotations


def register() -> None:
    """Register the policies and the hooks (memory/policies/registry.py calls this once)."""
    from memory.policies.exocortex import hooks, ranking, web  # noqa: F401  (ranking registers both policies)

    hooks.register()
    web.register()
