"""The reader's second opinion: whether a message states something lasting about the person, by
its meaning (its MiniLM vector) beside labelled statements.

The parse reads who did what (memory/engine/reading/); some messages it cannot read ("Island girl
here, Samoa born, Auckland raised") and some it reads that state nothing lasting (a day's news told
in the first person). A message's vector is compared with those of labelled statements
(memory/engine/data/statement_examples.json, scripts/statement_examples.py): the nearest ones vote,
each by its similarity. The vote decides only where the parse has no answer of its own
(memory/engine/facts.py judged_facts). Pure: the caller passes the vectors in.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

EXAMPLES = Path(__file__).resolve().parent / "data" / "statement_examples.json"
NEIGHBOURS = 9
# Below this similarity the nearest example is no neighbour: the message is like none of them (and
# a vector that carries no meaning, a fake embedder's, never reaches it).
NEAR = 0.5
STATES = 0.7  # at or above: the message states a fact
STATES_NOTHING = 0.2  # at or below: it states none


@dataclass(frozen=True)
class Examples:
    """The labelled statements' unit vectors and labels (True: states a fact)."""

    vectors: np.ndarray
    facts: np.ndarray


@functools.cache
def example_statements() -> tuple[tuple[str, bool], ...]:
    data = json.loads(EXAMPLES.read_text(encoding="utf-8"))
    return tuple((entry["text"], bool(entry["fact"])) for entry in data["examples"])


def examples_of(vectors: Sequence[Sequence[float]], labels: Sequence[bool]) -> Examples:
    import numpy as np  # only where a judgement is made: the offline engine imports this module

    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
    return Examples(vectors=matrix, facts=np.asarray(labels, dtype=bool))


def fact_likelihood(vector: Sequence[float], examples: Examples, *, neighbours: int = NEIGHBOURS) -> float | None:
    """The share of the nearest labelled statements that state a fact, each weighted by its
    similarity; None when no example is near enough to vote."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    query /= max(float(np.linalg.norm(query)), 1e-9)
    similarities = examples.vectors @ query
    nearest = np.argsort(-similarities)[:neighbours]
    weights = np.clip(similarities[nearest], 0.0, None)
    if similarities[nearest[0]] < NEAR or weights.sum() <= 0:
        return None
    return float((weights * examples.facts[nearest]).sum() / weights.sum())
