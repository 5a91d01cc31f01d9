"""The memory models, one package each (Memoria, the Exocortex): a model's ranking, its engine
formulas, its writes, its hooks, its settings, its bench and its tests live in its folder.

The core never imports a model's package: it asks the registry (memory/policies/registry.py), and
the registry imports the packages named in MODELS, each of which registers its recall policies and
its hooks as it is imported. Removing a model is deleting its folder and its line here
(tests/test_architecture.py holds the rest of the project to it).
"""

from __future__ import annotations

# The installed memory models, in the order listings and benchmarks show their policies.
MODELS = ("memory.policies.memoria", "memory.policies.exocortex")
