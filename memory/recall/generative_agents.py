"""The Generative Agents policy: relevance · recency · type weight over the Exocortex's candidates.

The product as seed 002 states it (Park et al. 2023, "Generative Agents"), kept beside the
Exocortex's sum so that `bench retrieval` compares the two formulas on the same candidates, the
same relevance (the shared relevance core's, scaled onto [0, 1] among the candidates) and the same
recency (the user's decay curve:
the paper's 0.995-per-hour decay since last access would change the curve too, and then the
comparison would not say which change mattered). A low recency drags a high relevance down here,
which is what the Exocortex's nostalgia term was made to prevent.
"""

from __future__ import annotations

from memory.engine import exocortex as exo
from memory.recall.base import register_policy
from memory.recall.exocortex import WeightedPolicy


@register_policy
class GenerativeAgentsPolicy(WeightedPolicy):
    name = exo.GENERATIVE_AGENTS
    title = "Generative Agents: pages and recollections by relevance · recency · type weight (the product)"
    weigh = staticmethod(exo.generative_agents_weight)
    neutral_recency = 1.0  # a product: recency 1 leaves relevance · type weight
