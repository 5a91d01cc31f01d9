"""The process-wide adapters are built once, even when several threads ask for them first together."""

from __future__ import annotations

import threading
import time

from memory.adapters import configured, vectors


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
