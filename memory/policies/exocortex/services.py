"""The Exocortex's writes: a user's decay settings, and recollections stored back as memories.

Recollections run as maintenance after the reply (memory/services/maintenance.py), not at recall:
clustering costs 90–500 ms warm at the pool sizes the seed uses (scripts/bench_recollection.py),
and UMAP compiles its kernels for tens of seconds on the first call in a process. A turn's
recollections are therefore recalled from the next turn on, by the exocortex policy
(memory/policies/exocortex/ranking.py), like any memory. By default only turns answered by a policy that
makes recollections (RecallPolicy.makes_recollections: the Exocortex and Generative Agents) are
recollected (MEMORYOS_EXOCORTEX_RECOLLECTIONS: "policy"), "always"
recollects every turn, "off" none. Summaries are the offline engine's (dated extracts), or the
LLM's when one is configured, asked outside any transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Subquery

from memory.adapters import configured
from memory.models import (
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    PageStatus,
    Recollection,
    RetrievalTrace,
    Tier,
    UserMemoryState,
    bytes_to_vector,
    vector_to_bytes,
)
from memory.policies.exocortex.engine import decay as exo
from memory.policies.exocortex.engine.recollection import (
    Candidate,
    Cluster,
    RecollectionParams,
    cluster_recollections,
    summarize_recollection,
)
from memory.policies.exocortex.engine.recollection import Recollection as RecollectionDraft
from memory.policies.exocortex.ranking import decay_settings_of, oldest_page_time, type_weights
from memory.recall.base import policies
from memory.services import graph
from memory.services.common import MemoryInputError, embed_or_none, lock_user_state
from memory.services.events import event_record
from memory.services.model_tasks import summarise_recollection
from memory.services.recollections import recollection_point

log = logging.getLogger(__name__)

ANCHORS = 3  # the newest pages whose neighbours are gathered, the prompt's page among them
SHORT_TERM_MINUTES = (0.5, 7 * 24 * 60.0)  # half a minute to a week


# ------------------------------------------------------------------ settings

def decay_settings_update(*, user, short_term_minutes: float, long_term_threshold: float) -> exo.DecaySettings:
    """Set the user's two decay settings; out-of-range values raise MemoryInputError, change nothing."""
    try:
        minutes, threshold = float(short_term_minutes), float(long_term_threshold)
    except (TypeError, ValueError):
        raise MemoryInputError("The decay settings must be numbers.") from None
    low, high = SHORT_TERM_MINUTES
    if not low <= minutes <= high:
        raise MemoryInputError(f"The short-term duration must lie between {low:g} and {high:g} minutes.")
    try:
        decay = exo.DecaySettings(short_term_seconds=minutes * 60.0, long_term_threshold=threshold)
    except ValueError as exc:
        raise MemoryInputError(f"Invalid decay settings: {exc}.") from None
    with transaction.atomic():
        state = lock_user_state(user.pk)
        state.short_term_minutes, state.long_term_threshold = minutes, threshold
        state.save(update_fields=["short_term_minutes", "long_term_threshold"])
    return decay


# ------------------------------------------------------------------ recollections

def recollecting_policies() -> tuple[str, ...]:
    """The policies whose turns are recollected (RecallPolicy.makes_recollections)."""
    return tuple(policy.name for policy in policies() if policy.makes_recollections)


def _due_page(user_id: int) -> DialoguePage | None:
    """The newest complete page, if its turn has not been recollected and the setting wants it."""
    mode = settings.MEMORYOS["EXOCORTEX_RECOLLECTIONS"]
    if mode == "off":
        return None
    # Its id and seq first, with what decides whether it is due beside them in one read: most runs
    # end here, and a whole row (utterances, vector) is read only for a page that is due.
    recollected = UserMemoryState.objects.filter(user_id=OuterRef("user_id")).values("recollected_seq")[:1]
    recalled = RetrievalTrace.objects.filter(page_id=OuterRef("pk"), policy__in=recollecting_policies())
    newest = (DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, repressed=False)
              .exclude(embedding=b"").order_by("-seq")
              .annotate(recollected=Subquery(recollected), recalled=Exists(recalled))
              .values_list("id", "seq", "recollected", "recalled").first())
    if newest is None:
        return None
    page_id, seq, recollected_seq, recalled_by_one = newest
    if (recollected_seq is not None and seq <= recollected_seq) or (mode != "always" and not recalled_by_one):
        return None
    return DialoguePage.objects.select_related("user").filter(id=page_id).first()


def _anchors(user_id: int, page: DialoguePage) -> list[DialoguePage]:
    """The prompt's page and the newest short-term pages before it (the recent context)."""
    recent = list(DialoguePage.objects.filter(user_id=user_id, status=PageStatus.COMPLETE, repressed=False,
                                              tier=Tier.STM, seq__lt=page.seq)
                  .exclude(embedding=b"").order_by("-seq")[:ANCHORS - 1])
    return [page, *recent]


def _gathered(user, anchor: DialoguePage, *, now: datetime, limit: int,
              decay: exo.DecaySettings, span: float) -> list[Candidate]:
    """The long-term pages nearest one anchor, each weighed (Exocortex) in relation to it."""
    hits = configured.vector_index().search(user_id=str(user.pk), vector=anchor.to_engine().embedding, limit=limit,
                                            kind="page", match={"tier": Tier.MTM}, fields=())
    pages = {str(p.id): p for p in DialoguePage.objects.filter(
        user=user, id__in=[h.id for h in hits], repressed=False, tier=Tier.MTM).exclude(segment__repressed=True)}
    found = [(pages[h.id], h.score) for h in hits if h.id in pages]
    ages = [max(0.0, (now - p.timestamp).total_seconds()) for p, _ in found]
    recency = exo.recencies(ages, oldest_age_seconds=max([span, *ages]), settings=decay)
    weights = type_weights()
    return [Candidate(id=str(p.id), text=f"{p.query} {p.response}".strip(), embedding=bytes_to_vector(p.embedding),
                      timestamp=p.timestamp,
                      weight=exo.exocortex_weight(relevance=exo.relevance_from_cosine(score),
                                                  recency=float(np.clip(r, 0.0, 1.0)), kind=exo.CORE,
                                                  type_weights=weights).weight)
            for (p, score), r in zip(found, recency.tolist(), strict=True)]


def recollections_make(*, user_id: int, now: datetime, params: RecollectionParams | None = None,
                       ) -> list[Recollection]:
    """Cluster what the newest turn's context recalls and store each cluster as a recollection with
    weighted edges to its member pages; the guard (inter-cluster similarity) goes in the event."""
    page = _due_page(user_id)
    if page is None:
        return []
    params = params or RecollectionParams()
    user = page.user
    decay = decay_settings_of(user_id)
    oldest = oldest_page_time(user)
    span = max(0.0, (now - oldest).total_seconds()) if oldest else 0.0
    anchors = [_gathered(user, anchor, now=now, limit=params.pool_size, decay=decay, span=span)
               for anchor in _anchors(user_id, page)]
    plan = cluster_recollections(prompt_embedding=page.to_engine().embedding, anchors=anchors, params=params)
    drafts = [_summary(user_id, cluster, page.query) for cluster in plan.clusters]
    vectors = embed_or_none([draft.text for draft in drafts]) if drafts else []
    if vectors is None:
        raise RuntimeError("the embedder is unavailable; the turn will be recollected on the next run")
    stored = []
    with transaction.atomic():
        state = lock_user_state(user_id)
        if page.seq <= state.recollected_seq:
            return []  # another worker did it meanwhile
        for draft, vector in zip(drafts, vectors, strict=True):
            stored.append(_store(user_id=user_id, page=page, draft=draft, vector=vector, now=now))
        state.recollected_seq = page.seq
        state.save(update_fields=["recollected_seq"])
        if plan.pool:
            event_record(user_id=user_id, kind=LifecycleEvent.Kind.RECOLLECTED, subject_id=str(page.id), at=now,
                         recollections=[str(r.id) for r in stored], guard=plan.trace())
        points = [recollection_point(row, vector) for row, vector in zip(stored, vectors, strict=True)]
        transaction.on_commit(lambda: configured.vector_index().upsert(points))
    log.debug("event=recollected user=%s page=%s recollections=%s", user_id, page.id, len(stored))
    return stored


def _summary(user_id: int, cluster: Cluster, prompt: str) -> RecollectionDraft:
    """The offline summary and edges; with an LLM configured, the model's text in its place (the
    offline one stays when the model fails, and the failure is a lifecycle event)."""
    draft = summarize_recollection(cluster=cluster, prompt=prompt)
    if configured.chat_model() is None:
        return draft
    memories = [(f"[{m.timestamp:%d %B %Y}] " if m.timestamp else "") + m.text for m in cluster.members]
    text = summarise_recollection(user_id=user_id, prompt=prompt, memories=memories)
    return replace(draft, text=text) if text else draft


def _store(*, user_id: int, page: DialoguePage, draft: RecollectionDraft, vector: Sequence[float],
           now: datetime) -> Recollection:
    members = [edge.member_id for edge in draft.edges]
    row = Recollection.objects.create(
        user_id=user_id, text=draft.text, prompt=page.query, embedding=vector_to_bytes(vector), members=members,
        edge_weights=[round(edge.weight, 6) for edge in draft.edges], prompt_similarity=draft.prompt_similarity,
        created_at=now)
    node = graph.row_node_put(user_id=user_id, kind=MemoryNode.Kind.RECOLLECTION, row=row)
    targets = {str(p.id): p for p in DialoguePage.objects.filter(user_id=user_id, id__in=members)}
    for edge in draft.edges:
        target = graph.node_of(user_id=user_id, obj=targets[edge.member_id], kind=MemoryNode.Kind.PAGE)
        graph.edge_put(user_id=user_id, source=node, target=target, relation="recollects", weight=edge.weight)
    return row
