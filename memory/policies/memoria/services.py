"""Memoria's writes: sona memberships (a stored page's, by the page hook in hooks.py), and what
happens after a reply the Memoria policy recalled for (the work it asks for, registered in hooks.py
and run off the reply path by memory/runtime/after_reply.py): every recalled memory is rated 1-10 for how much
it helped (the LLM in one call when configured, else word overlap: engine/rating.py), its
importance (beside its graph node, never shown to the model) moves by EWMA, and a memory of
another sona that entered the prompt and helped (rating at least MEMORIA_USED_RATING) joins the
current sona ("bubbling up"), recorded as a lifecycle event.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import transaction

from memory.adapters import configured
from memory.adapters.llm import complete_json
from memory.engine.ports import ChatMessage, ModelError
from memory.models import (
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    RetrievalTrace,
    Sona,
    SonaMembership,
)
from memory.policies.memoria.engine.rating import RATING_PROMPT, overlap_rating, rating_request, validate_ratings
from memory.policies.memoria.engine.scoring import importance_update
from memory.policies.memoria.ranking import memories_of, trace_entries
from memory.policies.memoria.settings import memoria_params
from memory.services.common import lock_user_state
from memory.services.events import event_record

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ sonas

def sona_membership_add(*, user_id: int, sona: Sona, node: MemoryNode,
                        via: str = SonaMembership.Via.ORIGIN) -> bool:
    """Put a memory in a sona; True when it was not there yet."""
    _, created = SonaMembership.objects.get_or_create(user_id=user_id, sona=sona, node=node,
                                                      defaults={"via": via})
    return created


def sona_membership_put(*, user_id: int, sona_id, node: MemoryNode, via: str = SonaMembership.Via.ORIGIN) -> None:
    """Put a memory in a sona, in one INSERT that leaves a membership already there as it is (where
    sona_membership_add's get_or_create reads first and takes a savepoint): a reply's page joins
    the sona of its turn."""
    SonaMembership.objects.bulk_create([SonaMembership(user_id=user_id, sona_id=sona_id, node=node, via=via)],
                                       ignore_conflicts=True)


# ------------------------------------------------------------------ after a reply

def _ratings(user_id: int, texts: list[str], reply: str) -> tuple[list[int], str]:
    """(one rating per memory, "llm" or "overlap"): the LLM's when configured and its answer is
    valid, else word overlap (a rejected answer is recorded)."""
    model = configured.chat_model()
    if model is not None:
        messages = [ChatMessage("system", RATING_PROMPT), ChatMessage("user", rating_request(texts, reply))]
        try:
            return complete_json(model, messages, validate=lambda value: validate_ratings(value, len(texts)),
                                 max_tokens=20 + 12 * len(texts)), "llm"
        except ModelError as exc:
            log.warning("event=model_output_rejected user=%s task=importance_rating error=%r", user_id, exc)
            event_record(user_id=user_id, kind=LifecycleEvent.Kind.MODEL_OUTPUT_REJECTED, task="importance_rating",
                         error=str(exc)[:500])
    return [overlap_rating(text, reply) for text in texts], "overlap"


def memoria_after_reply(*, user_id: int, trace_id, reply: str) -> dict[str, int]:
    """Rate, update importance and bubble up for one reply's memoria trace; node id -> rating."""
    trace = RetrievalTrace.objects.select_related("page__sona", "user").filter(id=trace_id, user_id=user_id).first()
    memoria = trace_entries(trace.payload or {}) if trace is not None else {}
    recalled = memoria.get("expansion", {}).get("order", [])
    if not recalled:
        return {}
    user = trace.user
    memories = memories_of(user, MemoryNode.objects.filter(user_id=user_id, pk__in=[int(i) for i in recalled]))
    ids = [node_id for node_id in recalled if node_id in memories]  # repressed or deleted since: left alone
    if not ids:
        return {}
    ratings, source = _ratings(user_id, [memories[node_id].text for node_id in ids], reply)
    rated = dict(zip(ids, ratings, strict=True))
    included = set(trace.payload.get("prompt", {}).get("included", []))
    sona = trace.page.sona if trace.page is not None else None
    alpha, prior = memoria_params().importance_alpha, memoria_params().importance_prior
    with transaction.atomic():
        lock_user_state(user_id)
        nodes = MemoryNode.objects.select_for_update().in_bulk([int(i) for i in ids])
        for node_id, rating in rated.items():
            node = nodes[int(node_id)]
            old = node.importance if node.importance is not None else prior
            node.importance = importance_update(old=old, rating=rating, alpha=alpha)
            node.importance_ratings += 1
            node.save(update_fields=["importance", "importance_ratings"])
        event_record(user_id=user_id, kind=LifecycleEvent.Kind.IMPORTANCE_RATED,
                     subject_id=str(trace.page_id or trace.id), trace_id=str(trace.id), source=source,
                     ratings=rated)
        if sona is not None:
            used = [nodes[int(node_id)] for node_id in ids
                    if rated[node_id] >= settings.MEMORYOS["MEMORIA_USED_RATING"]
                    and _prompt_key(memories[node_id].node) in included]
            _bubble_up(user_id=user_id, sona=sona, nodes=used, rated=rated, trace=trace)
    return rated


def _prompt_key(node: MemoryNode) -> str:
    kind = "memoria_page" if node.kind == MemoryNode.Kind.PAGE else "memoria_note"
    return f"{kind}:{node.object_id}"


def _bubble_up(*, user_id: int, sona: Sona, nodes: list[MemoryNode], rated: dict[str, int],
               trace: RetrievalTrace) -> None:
    """Memories used in `sona` that belonged to other sonas only join it."""
    members = {node_id: set() for node_id in (node.pk for node in nodes)}
    for node_id, sona_id in SonaMembership.objects.filter(node__in=nodes).values_list("node_id", "sona_id"):
        members[node_id].add(sona_id)
    page_sonas = dict(DialoguePage.objects.filter(
        user_id=user_id, id__in=[n.object_id for n in nodes if n.kind == MemoryNode.Kind.PAGE]
    ).values_list("id", "sona_id"))
    for node in nodes:
        origin = page_sonas.get(_uuid_or_none(node.object_id)) if node.kind == MemoryNode.Kind.PAGE else None
        if not members[node.pk] and origin is not None:
            members[node.pk].add(origin)  # a page with no membership row belongs to its own sona
        if sona.pk in members[node.pk]:
            continue
        sona_membership_add(user_id=user_id, sona=sona, node=node, via=SonaMembership.Via.BUBBLED_UP)
        from_names = sorted(Sona.objects.filter(pk__in=members[node.pk]).values_list("name", flat=True))
        event_record(user_id=user_id, kind=LifecycleEvent.Kind.SONA_JOINED, subject_id=node.object_id,
                     node=node.pk, cid=node.cid, memory_kind=node.kind, sona=sona.name, from_sonas=from_names,
                     rating=rated[str(node.pk)], trace_id=str(trace.id))


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
