"""Utterance-level ("turn") vectors and the hybrid recall policy over them.

Each page is also indexed by who said what: one point per utterance, dense (the utterance with
its preceding utterance as context) and sparse (BM25 terms of the text with the page's date).
Indexing runs in maintenance, off the reply path.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import transaction

from memory import components
from memory.engine import recall_policies as policy
from memory.engine.ports import VectorPoint
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, PageStatus, Tier

TURN_NAMESPACE = uuid.UUID("6f1d4a52-8a3e-4c7b-9d0e-2b5c8f4e7a10")
INDEX_BATCH = 32
TURN_FIELDS = ("seq", "pos", "speaker", "page_id", "segment_id", "timestamp")


def turn_point_id(page_id, position: int) -> str:
    return str(uuid.uuid5(TURN_NAMESPACE, f"{page_id}:{position}"))


def turn_point_ids(page: DialoguePage) -> list[str]:
    return [turn_point_id(page.id, i) for i in range(len(page.utterances))]


def page_utterances(page: DialoguePage) -> list[dict]:
    """Stored utterances, or the user's query and the reply of a live page.

    An offline reply only restates memory, so it is not indexed as something that was said.
    """
    if page.utterances:
        return page.utterances
    from memory.services import OFFLINE_MODEL_NAME

    user_name = getattr(getattr(page.user, "persona_profile", None), "name", "") or page.user.get_username()
    said = [{"id": "", "speaker": user_name, "text": page.query}]
    if page.response and page.reply_model != OFFLINE_MODEL_NAME:
        said.append({"id": "", "speaker": page.sona.name if page.sona else "assistant", "text": page.response})
    return said


def turn_text(page: DialoguePage, utterance: dict) -> str:
    """What BM25 sees: the date (temporal questions name it), the speaker and the words."""
    return f"{page.timestamp.strftime('%d %B %Y')} {utterance['speaker']}: {utterance['text']}"


def _said(utt: dict) -> str:
    return f"{utt['speaker']}: {utt['text']}"


def _points(pages: Sequence[DialoguePage], before: dict | None,
            params: policy.HybridParams) -> list[VectorPoint]:
    """Points for the pages' utterances; `before` is the utterance preceding the first page."""
    texts: list[str] = []
    slots: list[tuple[DialoguePage, int, int, int | None]] = []
    previous = before
    for page in pages:
        for pos, utt in enumerate(page.utterances):
            texts.append(_said(utt))
            turn_slot, context_slot = len(texts) - 1, None
            if previous is not None:
                texts.append(f"{_said(previous)}\n{_said(utt)}")
                context_slot = len(texts) - 1
            slots.append((page, pos, turn_slot, context_slot))
            previous = utt
    vectors = components.embedder().embed(texts) if texts else []
    points = []
    for page, pos, turn_slot, context_slot in slots:
        context = vectors[context_slot] if context_slot is not None else None
        utt = page.utterances[pos]
        points.append(VectorPoint(
            id=turn_point_id(page.id, pos),
            vector=policy.context_vector(vectors[turn_slot], context, mix=params.context_mix),
            text=turn_text(page, utt),
            payload={"user_id": str(page.user_id), "kind": "turn", "tier": page.tier,
                     "segment_id": str(page.segment_id) if page.segment_id else "", "page_id": str(page.id),
                     "seq": page.seq, "pos": pos, "speaker": utt["speaker"], "source_id": utt.get("id", ""),
                     "timestamp": page.timestamp.timestamp()},
        ))
    return points


def _utterance_before(page: DialoguePage) -> dict | None:
    """The last utterance of the page before `page` in the conversation, if any."""
    previous = (DialoguePage.objects.select_related("user", "sona")
                .filter(user_id=page.user_id, seq__lt=page.seq, status=PageStatus.COMPLETE)
                .order_by("-seq").first())
    if previous is None:
        return None
    said = page_utterances(previous)
    return said[-1] if said else None


def index_turns(*, user_id: int, params: policy.HybridParams | None = None) -> int:
    """Index the utterances of completed pages not indexed yet. Idempotent (ids are derived)."""
    params = params or policy.HybridParams()
    done = 0
    while True:
        pages = list(DialoguePage.objects.select_related("user", "sona").filter(
            user_id=user_id, status=PageStatus.COMPLETE, turns_indexed=False)
            .exclude(tier=Tier.ARCHIVED).order_by("seq")[:INDEX_BATCH])
        if not pages:
            return done
        for page in pages:
            page.utterances = page_utterances(page)
        points = _points(pages, _utterance_before(pages[0]), params)
        components.vector_index().upsert(points)
        with transaction.atomic():
            for page in pages:
                DialoguePage.objects.filter(id=page.id).update(utterances=page.utterances, turns_indexed=True)
        done += len(pages)


def recall_turns(*, user, query: str, query_vector: Sequence[float], limit: int,
                 tiers: Sequence[str] = (Tier.MTM,), params: policy.HybridParams | None = None,
                 ) -> list[RecalledItem]:
    """The best utterances by the hybrid score, each with its breakdown."""
    params = params or policy.HybridParams()
    index = components.vector_index()
    user_id = str(user.pk)
    scope = {"match_any": {"tier": list(tiers)}, "kind": "turn", "fields": TURN_FIELDS}
    dense_hits = index.search(user_id=user_id, vector=query_vector, limit=params.candidates, **scope)
    sparse_hits = index.search_text(user_id=user_id, text=query, limit=params.candidates, **scope)
    payloads = {hit.id: hit.payload for hit in [*dense_hits, *sparse_hits]}
    if not payloads:
        return []
    keys = list(payloads)
    dense = {hit.id: hit.score for hit in dense_hits}
    sparse = {hit.id: hit.score for hit in sparse_hits}
    speaker_of = {key: payloads[key].get("speaker", "") for key in keys}
    named = policy.named_speakers(query, set(speaker_of.values()))
    first = policy.fused_scores(keys=keys, dense=dense, sparse=sparse, feedback=None, speaker_of=speaker_of,
                                named=named, params=params)
    top = sorted(keys, key=lambda k: -first[k]["score"])[:params.feedback_top]
    top_vectors = list(index.get_vectors(user_id=user_id, ids=top).values())
    fb_query = policy.feedback_query(query_vector, top_vectors, mix=params.feedback_mix)
    feedback_hits = index.search(user_id=user_id, vector=fb_query, limit=params.candidates, **scope)
    for hit in feedback_hits:
        payloads.setdefault(hit.id, hit.payload)
    keys = list(payloads)
    speaker_of = {key: payloads[key].get("speaker", "") for key in keys}
    parts = policy.fused_scores(keys=keys, dense=dense, sparse=sparse,
                                feedback={hit.id: hit.score for hit in feedback_hits}, speaker_of=speaker_of,
                                named=named, params=params)
    order = {key: (int(payloads[key]["seq"]), int(payloads[key]["pos"])) for key in keys}
    final = policy.smooth_along_conversation({k: p["score"] for k, p in parts.items()}, order, params=params)
    ranked = sorted(keys, key=lambda k: (-final[k], order[k]))[:limit]
    return _turn_items(ranked, payloads, parts, final, dense, sparse)


def _turn_items(ranked, payloads, parts, final, dense, sparse) -> list[RecalledItem]:
    from datetime import UTC, datetime

    page_ids = {payloads[key]["page_id"] for key in ranked}
    pages = {str(p.id): p for p in DialoguePage.objects.filter(id__in=page_ids)}
    items = []
    for key in ranked:
        payload = payloads[key]
        page = pages.get(payload["page_id"])
        if page is None or payload["pos"] >= len(page.utterances):
            continue
        utt = page.utterances[payload["pos"]]
        breakdown: dict = {name: round(value, 4) for name, value in parts[key].items()}
        breakdown["final"] = round(final[key], 4)
        # The raw scores beside their standard scores: with few candidates the z-scores say little.
        breakdown["cosine"] = round(dense.get(key, 0.0), 4)
        breakdown["bm25"] = round(sparse.get(key, 0.0), 4)
        breakdown["segment_id"] = payload.get("segment_id", "")
        items.append(RecalledItem(
            kind="turn", ref=key, text=f"{utt['speaker']}: {utt['text']}", score=final[key],
            timestamp=datetime.fromtimestamp(payload["timestamp"], tz=UTC),
            source_ids=(utt["id"],) if utt.get("id") else (), breakdown=breakdown,
        ))
    return items
