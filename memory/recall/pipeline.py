"""One recall, read only: what every policy shares around the policy's own ranking.

All of STM (each page with its cosine to the query); the profile, the agent profile and the
user's traits whole; the policy's ranking (memory/recall/base.py); the top KB facts and agent
traits by similarity. Each item carries its
score breakdown, and each part of the recall is timed. The writes a recall makes (segment visits,
the trace) belong to memory/services/recall.py.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from django.utils import timezone

from memory.config import memory_params
from memory.engine import offline
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, PageStatus, Tier
from memory.recall import long_term, rows
from memory.recall.base import PAGE_FIELDS, Ranking, RecallContext, RecallPolicy, default_policy_name, get_policy
from memory.recall.candidates import embed_query

# The parts of a recall, in the order they run, as Recall.timings_ms and the trace name them;
# the policy's early part comes after PROFILE_PART, its rank part after SIMILAR_PART (ranking
# reads the facts found there). The
# query embedding runs beside the parts before it; its part is the wait for what they did not
# hide (Recall.embedding_ms is the embedding's own time).
STM_PART = "STM pages"
PROFILE_PART = "profile and traits"
EMBED_PART = "embedding wait"
SIMILAR_PART = "facts and agent traits"


@functools.cache
def _embedding_threads() -> ThreadPoolExecutor:
    # Several, so that an embedder that waits on the network (OpenAI) is not queued behind one
    # request; the local model runs one query at a time under its own lock anyway.
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding")


def embed_in_background(query: str) -> Future[tuple[list[float], float]]:
    """The query's vector and the milliseconds its embedding took, computed on another thread;
    an embedder's error is raised by result()."""
    def embed() -> tuple[list[float], float]:
        started = time.perf_counter()
        vector = embed_query(query)
        return vector, round((time.perf_counter() - started) * 1000, 3)

    return _embedding_threads().submit(embed)


class Stopwatch:
    """Milliseconds spent in each named part of one recall, in the order the parts ran."""

    def __init__(self) -> None:
        self.started = self._mark = time.perf_counter()
        self.parts: dict[str, float] = {}

    def lap(self, part: str) -> None:
        """Close `part`: the time since the last lap (or the start) is its."""
        now = time.perf_counter()
        self.parts[part] = round((now - self._mark) * 1000, 3)
        self._mark = now

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000


@dataclass
class Gathered:
    """What one recall found, before anything is written."""

    policy: RecallPolicy
    context: RecallContext
    stm: list[RecalledItem]
    long_term: list[RecalledItem]  # the profile and traits, then the facts and agent traits
    ranking: Ranking
    watch: Stopwatch
    embedding_ms: float | None

    @property
    def items(self) -> list[RecalledItem]:
        return self.long_term + self.stm + self.ranking.items


def _stm_pages(user, exclude_page_id, capacity: int, *, with_vectors: bool = False) -> list[DialoguePage]:
    """The last `capacity` complete pages of STM, newest first, without the page being answered."""
    fields = (*PAGE_FIELDS, "embedding") if with_vectors else PAGE_FIELDS
    pages = rows.rows(DialoguePage, fields,
                      equal={"user": user.pk, "tier": Tier.STM, "status": PageStatus.COMPLETE, "repressed": False},
                      order_by=("-seq",), limit=capacity + 1)  # one more, in case the excluded page is among them
    excluded = str(exclude_page_id) if exclude_page_id is not None else None
    return [p for p in pages if str(p.id) != excluded][:capacity]


def _stm_item(page: DialoguePage, similarity: float | None = None) -> RecalledItem:
    breakdown = {"seq": float(page.seq)}
    if similarity is not None:
        breakdown["similarity"] = round(similarity, 4)
    return RecalledItem(kind="stm_page", ref=str(page.id), text=page.recall_text,
                        score=1.0, timestamp=page.timestamp, source_ids=tuple(page.source_ids), breakdown=breakdown)


def stm_items(user, exclude_page_id, capacity: int) -> list[RecalledItem]:
    """STM whole, newest first; every page is recalled, so its score says nothing (1.0)."""
    return [_stm_item(page) for page in _stm_pages(user, exclude_page_id, capacity)]


def _stm_scored(pages: list[DialoguePage], query_vector: Sequence[float]) -> list[RecalledItem]:
    """STM whole, each page with its cosine to the query: all enter the prompt, but a reply built
    from them (the offline engine's) needs to know which one the message is about."""
    query = np.asarray(query_vector, dtype=np.float32)
    query_norm = float(np.linalg.norm(query)) or 1.0
    items = []
    for page in pages:
        vector = np.frombuffer(bytes(page.embedding or b""), dtype=np.float32)
        similarity = None
        if vector.shape == query.shape:
            similarity = float(vector @ query) / ((float(np.linalg.norm(vector)) or 1.0) * query_norm)
        items.append(_stm_item(page, similarity))
    return items


def gather(*, user, query: str, sona=None, exclude_page_id=None, now: datetime | None = None,
           query_vector: Sequence[float] | None = None, policy: str | None = None,
           turn_tiers: tuple[str, ...] = (Tier.MTM,),
           embedding: Future[tuple[list[float], float]] | None = None) -> Gathered:
    """Everything the reply may use, best first per tier, each item with its score breakdown.

    `embedding` is the query's vector already being computed (embed_in_background: a turn starts
    it while it stores the message); the recall waits for it where it would wait for its own.

    `policy` names a registered policy (default: the MEMORYOS_RECALL_POLICY setting); an unknown
    name raises UnknownPolicyError.
    """
    watch = Stopwatch()
    params = memory_params()
    chosen = get_policy(policy or default_policy_name())
    # The query is embedded on another thread while what needs no vector is read: STM, the
    # profile and the policy's early search (the hybrid policy's BM25 list, which at 100,000
    # pages takes as long as the embedding). ONNX Runtime releases the GIL for the forward pass
    # (Edge's searches and the database reads hold it), so the two run at once on two cores.
    if embedding is None and query_vector is None:
        embedding = embed_in_background(query)
    stm_pages = _stm_pages(user, exclude_page_id, params.stm_capacity, with_vectors=True)
    watch.lap(STM_PART)
    fixed = long_term.fixed_items(user=user, sona=sona)
    watch.lap(PROFILE_PART)
    context = RecallContext(user=user, query=query, query_keywords=offline.extract_keywords(query),
                            now=now or timezone.now(), params=params, sona=sona, turn_tiers=turn_tiers)
    early = None
    if chosen.early_part:
        early = chosen.search_early(context)
        watch.lap(chosen.early_part)
    qvec, embedding_ms = query_vector, None
    if embedding is not None:
        qvec, embedding_ms = embedding.result()
        watch.lap(EMBED_PART)
    similar = long_term.similar_items(user=user, query_vector=qvec, kb_limit=params.top_kb_facts,
                                      trait_limit=params.top_agent_traits)
    stm = _stm_scored(stm_pages, qvec)
    watch.lap(SIMILAR_PART)
    context = replace(context, facts=tuple(similar))
    ranking = chosen.rank(context, qvec, early)
    watch.lap(chosen.rank_part)
    return Gathered(policy=chosen, context=context, stm=stm, long_term=fixed + similar, ranking=ranking,
                    watch=watch, embedding_ms=embedding_ms)
