"""The Embedder port's contract, held by the real MiniLM embedder and by tests/fakes.py's.

The fast tier (`make test-fast`) runs services on the fake; the same assertions here keep it to
what the real one does: dimensions, unit norm, order, determinism, and similarity that follows
shared meaning (for the fake, shared words: the texts below share words where they share meaning).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from memory.adapters.embeddings import MINILM_DIMENSION, MiniLMEmbedder
from memory.engine.ports import Embedder
from tests.fakes import FakeEmbedder

TEXTS = [
    "I adopted a puppy last week and named her Biscuit.",
    "quarterly tax filing",
    "",
    "the and of",  # nothing but stopwords
    "Ünïcödé and emoji 🐶 survive tokenisation",
    " ".join(["a text longer than the model's 256 word pieces"] * 40),
]


# MiniLM's run of the contract needs MiniLM; `pytest --fakes` keeps the fake's run of the same assertions.
@pytest.fixture(scope="module", params=[pytest.param("minilm", marks=pytest.mark.real_adapters), "fake"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "fake":
        return FakeEmbedder()
    minilm = MiniLMEmbedder()
    minilm.warm_up()  # loaded once per process; test_embeddings.py reuses it
    return minilm


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_it_satisfies_the_port_with_minilms_dimension(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert isinstance(embedder.name, str) and embedder.name
    assert embedder.dimension == MINILM_DIMENSION


def test_every_text_gets_a_unit_vector_of_floats(embedder: Embedder) -> None:
    vectors = embedder.embed(TEXTS)

    assert [len(vector) for vector in vectors] == [embedder.dimension] * len(TEXTS)
    assert all(type(x) is float for vector in vectors for x in vector)
    for vector in vectors:
        assert math.sqrt(dot(vector, vector)) == pytest.approx(1.0, abs=1e-5)


def test_no_texts_give_no_vectors(embedder: Embedder) -> None:
    assert embedder.embed([]) == []


def test_a_batch_keeps_order_and_equals_one_by_one(embedder: Embedder) -> None:
    batch = embedder.embed(TEXTS)
    reversed_batch = embedder.embed(TEXTS[::-1])[::-1]
    single = [embedder.embed([text])[0] for text in TEXTS]

    for together, backwards, alone in zip(batch, reversed_batch, single, strict=True):
        assert dot(together, alone) == pytest.approx(1.0, abs=1e-4)
        assert dot(together, backwards) == pytest.approx(1.0, abs=1e-4)


def test_the_same_text_embeds_the_same_and_different_texts_differ(embedder: Embedder) -> None:
    first, again, other = embedder.embed(["my sister got married in June", "my sister got married in June",
                                          "my sister got married in July"])

    assert dot(first, again) == pytest.approx(1.0, abs=1e-6)
    assert dot(first, other) < 0.999


@pytest.mark.parametrize(("query", "related", "unrelated"), [
    ("When did my sister get married?", "My sister got married in June", "The printer is out of toner"),
    ("I'm allergic to peanuts", "a peanut allergy", "jazz concert tickets"),
    ("What is my dog's name?", "My dog is called Rex", "I moved to Berlin in March"),
    ("hiking in the mountains", "we hiked up a mountain trail", "quarterly tax filing"),
])
def test_related_text_is_closer_than_unrelated(embedder: Embedder, query: str, related: str,
                                               unrelated: str) -> None:
    query_vector, near, far = embedder.embed([query, related, unrelated])

    assert dot(query_vector, near) > dot(query_vector, far) + 0.2
    assert abs(dot(query_vector, far)) < 0.2
