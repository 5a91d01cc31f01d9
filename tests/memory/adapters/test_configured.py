"""The process-wide adapters are built once, even when several threads ask for them first together."""

from __future__ import annotations

import threading
import time

import pytest

from memory.adapters import configured, vectors
from memory.adapters.embeddings import MiniLMEmbedder
from tests.conftest import FAKE_ADAPTERS
from tests.fakes import FakeEmbedder, FakeVectorIndex


@pytest.mark.real_adapters
def test_first_calls_from_many_threads_open_one_vector_index(memory_env, monkeypatch):
    configured.embedder()  # loaded outside the race: the index is what opens once per process
    opened = []
    real_open = vectors.open_vector_index

    def slow_open(**kwargs):
        opened.append(threading.get_ident())
        time.sleep(0.2)  # wide enough that unguarded first calls would overlap
        return real_open(**kwargs)

    monkeypatch.setattr(vectors, "open_vector_index", slow_open)
    start = threading.Barrier(4)
    got, errors = [], []

    def first_call():
        start.wait()
        try:
            got.append(configured.vector_index())
        except Exception as exc:  # the bug this guards: a second open of the same shard fails
            errors.append(exc)

    threads = [threading.Thread(target=first_call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert len(opened) == 1
    assert len(got) == 4 and all(index is got[0] for index in got)


def test_reset_forgets_the_index_and_the_next_call_builds_a_new_one(memory_env):
    first = configured.vector_index()
    configured.reset_adapters()
    second = configured.vector_index()
    assert second is not first
    assert configured.vector_index() is second


@pytest.mark.real_adapters
def test_by_default_the_real_adapters_are_built(memory_env):
    assert not getattr(memory_env, "ADAPTER_FACTORIES", None)
    assert isinstance(configured.embedder(), MiniLMEmbedder)
    assert isinstance(configured.vector_index(), vectors.EdgeVectorIndex)


def test_adapter_factories_replace_the_embedder_and_the_index(memory_env):
    real_factories = getattr(memory_env, "ADAPTER_FACTORIES", None)
    memory_env.ADAPTER_FACTORIES = {**FAKE_ADAPTERS, "vector_index": lambda path, *, dimension: (
        FakeVectorIndex(path, dimension=dimension))}
    configured.reset_adapters()
    try:
        embedder, index = configured.embedder(), configured.vector_index()
        assert isinstance(embedder, FakeEmbedder) and isinstance(index, FakeVectorIndex)
        assert index.dimension == embedder.dimension == 384
        assert configured.vector_index() is index  # built once, as the real ones
    finally:
        memory_env.ADAPTER_FACTORIES = real_factories
        configured.reset_adapters()  # later tests get the tier's own adapters back
