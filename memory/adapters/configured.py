"""The adapters this process uses, built lazily once from settings (an embedded Qdrant shard opens
in one process only): the embedder, the vector index and the chat model, each behind its engine port.

`settings.ADAPTER_FACTORIES` (unset in production) may name replacements by dotted path:
{"embedder": "tests.fakes.FakeEmbedder", "vector_index": "tests.fakes.FakeVectorIndex"} is how the
fast test tier runs services on fakes. The vector index factory is called as
factory(path, dimension=...), like EdgeVectorIndex; a "chat_model" factory, with no argument, gives
the model used where LLM_ENABLED is on (tests script a fake one's answers).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.conf import settings
from django.utils.module_loading import import_string

from memory.engine.ports import ChatModel, Embedder, VectorIndex

log = logging.getLogger(__name__)

T = TypeVar("T")
_build_lock = threading.RLock()  # re-entrant: vector_index() builds embedder() on its way


def _built_once(factory: Callable[[], T]) -> Callable[[], T]:
    """functools.cache that also holds when several threads ask first at the same moment.

    Chat turns run in a thread pool: without the lock, two first turns would each open the embedded
    Qdrant shard, and the second fails ("path already contains segment data")."""
    cached = functools.cache(factory)

    @functools.wraps(factory)
    def get() -> T:
        if cached.cache_info().currsize:
            return cached()
        with _build_lock:
            return cached()

    get.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    get.cache_info = cached.cache_info  # type: ignore[attr-defined]
    return get


def _replacement(name: str) -> Callable[..., T] | None:
    factory = (getattr(settings, "ADAPTER_FACTORIES", None) or {}).get(name)
    if factory is None:
        return None
    log.info("event=adapter_replaced adapter=%s factory=%s", name, factory)
    return import_string(factory) if isinstance(factory, str) else factory


@_built_once
def embedder() -> Embedder:
    from memory.adapters.embeddings import build_embedder

    if replacement := _replacement("embedder"):
        return replacement()

    if settings.EMBEDDING_BACKEND == "openai":
        return build_embedder(backend="openai", api_key=settings.OPENAI_API_KEY,
                              base_url=settings.OPENAI_BASE_URL, model=settings.EMBEDDING_MODEL)
    return build_embedder(backend="minilm")


@_built_once
def vector_index() -> VectorIndex:
    from memory.adapters.vectors import open_vector_index

    if replacement := _replacement("vector_index"):
        return replacement(settings.QDRANT_PATH, dimension=embedder().dimension)
    return open_vector_index(url=settings.QDRANT_URL or None, path=settings.QDRANT_PATH,
                             dimension=embedder().dimension, collection=settings.QDRANT_COLLECTION,
                             api_key=settings.QDRANT_API_KEY)


@_built_once
def chat_model() -> ChatModel | None:
    """The configured LLM, or None: then the offline engine answers and maintains memory."""
    if not settings.LLM_ENABLED:
        return None
    if replacement := _replacement("chat_model"):
        return replacement()
    from memory.adapters.circuit import CircuitBreaker
    from memory.adapters.llm import OpenAIChatModel

    breaker = CircuitBreaker(name=settings.OPENAI_CHAT_MODEL, failure_threshold=settings.LLM_BREAKER_FAILURES,
                             cool_off_s=settings.LLM_BREAKER_COOL_OFF_S)
    return OpenAIChatModel(api_key=settings.OPENAI_API_KEY or "not-needed",
                           base_url=settings.OPENAI_BASE_URL, model=settings.OPENAI_CHAT_MODEL,
                           timeout=settings.OPENAI_TIMEOUT, max_retries=settings.OPENAI_MAX_RETRIES,
                           first_token_timeout=settings.OPENAI_FIRST_TOKEN_TIMEOUT or None, breaker=breaker,
                           reply_timeout=settings.REPLY_MAX_SECONDS or None)


# The warm-up a server starts (memoryos_site/asgi.py): "off" where none was started (commands,
# tests), "loading" while it runs, then "ready" (or "failed": the first turn then builds them).
_warm_up_state = "off"
_warm_up_done = threading.Event()


def adapters_warm_up(also: Sequence[Callable[[], object]] = ()) -> None:
    """Build the embedder and the vector index and embed one text, so that the first turn after a
    start does not wait for them (MiniLM loads and is exported to ONNX: seconds); then whatever
    `also` names that uses them (the fact reader's pipeline and examples)."""
    global _warm_up_state
    started = time.perf_counter()
    try:
        embedder().embed(["warm-up"])
        vector_index()
        for step in also:
            step()
        _warm_up_state = "ready"
        log.info("event=adapters_warm seconds=%.1f", time.perf_counter() - started)
    except Exception:  # a turn will try again, and say what failed
        _warm_up_state = "failed"
        log.exception("event=adapters_warm_up_failed")
    finally:
        _warm_up_done.set()


def adapters_warm_up_in_background(also: Sequence[Callable[[], object]] = ()) -> threading.Thread:
    """Start the warm-up on a thread of its own: the server answers pages meanwhile, and a turn that
    comes early waits for the adapters being built (the build lock) instead of building them twice."""
    global _warm_up_state
    _warm_up_state = "loading"
    _warm_up_done.clear()
    thread = threading.Thread(target=adapters_warm_up, kwargs={"also": also}, name="adapters-warm-up", daemon=True)
    thread.start()
    return thread


def adapters_state() -> str:
    """"off", "loading", "ready" or "failed": how the warm-up of this process stands."""
    return _warm_up_state


def adapters_wait_ready(timeout: float | None = None) -> bool:
    """Block until a started warm-up has ended (True), or the timeout passed (False)."""
    return _warm_up_state == "off" or _warm_up_done.wait(timeout)


def reset_adapters() -> None:
    """Forget built adapters (settings changed)."""
    with _build_lock:
        _reset()


def _reset() -> None:
    for factory in (embedder, chat_model):
        factory.cache_clear()
    if vector_index.cache_info().currsize:
        index = vector_index()
        close = getattr(index, "close", None)
        if close:
            close()
    vector_index.cache_clear()
