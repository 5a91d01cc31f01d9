"""The adapters this process uses, built lazily once (an embedded Qdrant shard opens in one process)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from memory.engine.ports import ChatModel, Embedder, VectorIndex
from memory.engine.types import MemoryParams

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


def memory_params() -> MemoryParams:
    cfg = settings.MEMORYOS
    return MemoryParams(
        stm_capacity=cfg["STM_CAPACITY"], fscore_threshold=cfg["FSCORE_THRESHOLD"],
        mtm_capacity=cfg["MTM_CAPACITY"], kb_capacity=cfg["KB_CAPACITY"],
        agent_trait_capacity=cfg["AGENT_TRAIT_CAPACITY"], trait_dimensions=cfg["TRAIT_DIMENSIONS"],
        heat_threshold=cfg["HEAT_THRESHOLD"], recency_mu_seconds=cfg["RECENCY_MU_SECONDS"],
        heat_alpha=cfg["HEAT_ALPHA"], heat_beta=cfg["HEAT_BETA"], heat_gamma=cfg["HEAT_GAMMA"],
        top_m_segments=cfg["TOP_M_SEGMENTS"], top_k_pages=cfg["TOP_K_PAGES"],
        top_kb_facts=cfg["TOP_KB_FACTS"], top_agent_traits=cfg["TOP_AGENT_TRAITS"],
        chain_threshold=cfg["CHAIN_THRESHOLD"], prompt_token_budget=cfg["PROMPT_TOKEN_BUDGET"],
    )


@_built_once
def embedder() -> Embedder:
    from memory.embeddings import build_embedder

    if settings.EMBEDDING_BACKEND == "openai":
        return build_embedder(backend="openai", api_key=settings.OPENAI_API_KEY,
                              base_url=settings.OPENAI_BASE_URL, model=settings.EMBEDDING_MODEL)
    return build_embedder(backend="minilm")


@_built_once
def vector_index() -> VectorIndex:
    from memory.vectors import open_vector_index

    return open_vector_index(url=settings.QDRANT_URL or None, path=settings.QDRANT_PATH,
                             dimension=embedder().dimension, collection=settings.QDRANT_COLLECTION,
                             api_key=settings.QDRANT_API_KEY)


@_built_once
def chat_model() -> ChatModel | None:
    """The configured LLM, or None: then the offline engine answers and maintains memory."""
    if not settings.LLM_ENABLED:
        return None
    from memory.llm import OpenAIChatModel

    return OpenAIChatModel(api_key=settings.OPENAI_API_KEY or "not-needed",
                           base_url=settings.OPENAI_BASE_URL, model=settings.OPENAI_CHAT_MODEL,
                           timeout=settings.OPENAI_TIMEOUT, max_retries=settings.OPENAI_MAX_RETRIES)


def reset_components() -> None:
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
