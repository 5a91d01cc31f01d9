"""The one write path for a turn: store the message, recall, generate, complete the page.

Maintenance (STM → MTM → LPM) lives in memory/maintenance.py and runs off the reply path.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory import components, graph
from memory.engine import offline
from memory.engine.graph import content_id
from memory.engine.ports import ModelError, VectorPoint
from memory.engine.retrieval import Prompt, assemble_prompt
from memory.models import (
    INTERRUPTED_MODEL_NAME,
    DialoguePage,
    LifecycleEvent,
    MemoryNode,
    PageStatus,
    Sona,
    UserMemoryState,
    vector_to_bytes,
)
from memory.recall import Recall, recall_for_query, recall_stm_only

log = logging.getLogger(__name__)
User = get_user_model()

OFFLINE_MODEL_NAME = "offline-engine"
SYSTEM_PROMPT = (
    "You are {sona}, a personal assistant with a long-term memory of this user. Use the memory below "
    "when it is relevant; say so when you do not remember something instead of guessing. Reply briefly."
)


# "Caroline: ..." in imported transcripts: a speaker label is not a topic keyword.
SPEAKER_LABEL = re.compile(r"(?:(?<=^)|(?<=\s))[A-Z][\w'-]{0,30}:\s")


class MemoryInputError(ValueError):
    """Bad input from a caller: the message says what is wrong; nothing was stored."""


def user_get(*, username: str, create: bool = False):
    """The user by username; with create=True a new one is made (without a usable password)."""
    username = (username or "").strip()
    if not username:
        raise MemoryInputError("A user name is required.")
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist:
        if not create:
            raise MemoryInputError(f"Unknown user {username!r}.") from None
    user = User(username=username)
    user.set_unusable_password()
    user.save()
    return user


def sona_get_or_create(*, user, name: str | None = None, profile: str = "") -> Sona:
    """The named sona, or the user's default one ("assistant")."""
    if not name:
        default = Sona.objects.filter(user=user, is_default=True).first()
        if default:
            return default
        name = "assistant"
    sona, _ = Sona.objects.get_or_create(
        user=user, name=name.strip()[:80],
        defaults={"profile": profile or "A helpful, warm personal assistant.",
                  "is_default": not Sona.objects.filter(user=user).exists()},
    )
    return sona


def validate_message(text: str) -> str:
    if not isinstance(text, str):
        raise MemoryInputError("The message must be text.")
    cleaned = text.strip()
    if not cleaned:
        raise MemoryInputError("The message is empty.")
    limit = settings.MEMORYOS["MAX_MESSAGE_CHARS"]
    if len(cleaned) > limit:
        raise MemoryInputError(f"The message is {len(cleaned)} characters long; the limit is {limit}.")
    return cleaned


def _lock_state(user_id: int) -> UserMemoryState:
    """Lock the user's state row: every write of one user goes through it in turn."""
    UserMemoryState.objects.get_or_create(user_id=user_id)
    return UserMemoryState.objects.select_for_update().get(user_id=user_id)


def page_start(*, user, query: str, sona: Sona | None = None, timestamp: datetime | None = None,
               source_ids: Sequence[str] = (), utterances: Sequence[dict] = ()) -> DialoguePage:
    """Store the user's message as a pending page in STM, before any model is called."""
    query = validate_message(query)
    with transaction.atomic():
        state = _lock_state(user.pk)
        page = DialoguePage.objects.create(
            user=user, sona=sona, seq=state.next_seq, query=query, status=PageStatus.PENDING,
            timestamp=timestamp or timezone.now(), source_ids=list(source_ids), utterances=list(utterances),
        )
        state.next_seq += 1
        state.save(update_fields=["next_seq"])
        graph.event_record(user_id=user.pk, kind=LifecycleEvent.Kind.PAGE_ADDED, subject_id=page.id,
                           seq=page.seq, sona=sona.name if sona else None)
    return page


def stopped_turn_pages() -> QuerySet[DialoguePage]:
    """Pages still awaiting their reply PENDING_TIMEOUT_S after they were stored (wall-clock
    time): their turn's process stopped mid-turn. Read through the partial index `page_pending`."""
    cutoff = timezone.now() - timedelta(seconds=settings.MEMORYOS["PENDING_TIMEOUT_S"])
    return DialoguePage.objects.filter(status=PageStatus.PENDING, created_at__lt=cutoff)


def pages_interrupted_complete(*, user_id: int) -> int:
    """Complete the user's stopped_turn_pages with no reply, so that the message is recalled,
    moves through the tiers and is indexed like any other. Returns how many."""
    stale = list(stopped_turn_pages().select_related("user").filter(user_id=user_id).order_by("seq"))
    for page in stale:
        page_complete(page=page, response="", reply_model=INTERRUPTED_MODEL_NAME, schedule=False)
        log.warning("event=page_interrupted_completed user=%s page=%s seq=%s", user_id, page.id, page.seq)
    return len(stale)


def page_text(query: str, response: str, reply_model: str = "") -> str:
    """What a page is indexed and summarised by. An offline reply only restates recalled memory,
    so it would add noise, not information: such pages are indexed by the user's words alone."""
    if reply_model == OFFLINE_MODEL_NAME:
        return query.strip()
    return f"{query}\n{response}".strip()


def _embed_or_none(texts: Sequence[str]) -> list[list[float]] | None:
    """Embeddings, or None when the embedder fails: the page is kept and maintenance embeds it later."""
    try:
        return components.embedder().embed(list(texts))
    except Exception as exc:  # an embeddings endpoint can fail in any way; the turn must survive
        log.warning("event=embed_failed error=%r", exc)
        return None


def page_complete(*, page: DialoguePage, response: str, reply_model: str,
                  embedding: Sequence[float] | None = None, schedule: bool = True) -> DialoguePage:
    """Store the reply, the page's keywords and embedding, and schedule maintenance."""
    text = page_text(page.query, response, reply_model)
    if embedding is None:
        vectors = _embed_or_none([text])
        embedding = vectors[0] if vectors else None
    keywords = sorted(offline.extract_keywords(SPEAKER_LABEL.sub(" ", text)))
    cid = content_id("page", {"query": page.query, "response": response, "timestamp": page.timestamp,
                              "user": page.user_id})
    with transaction.atomic():
        state = _lock_state(page.user_id)
        # Maintenance may have moved the page while the reply streamed; keep where it is now.
        page.refresh_from_db(fields=["tier", "segment"])
        page.response = response
        page.status = PageStatus.COMPLETE
        page.reply_model = reply_model
        page.keywords = keywords
        page.embedding = vector_to_bytes(embedding) if embedding is not None else b""
        page.cid = cid
        page.save(update_fields=["response", "status", "reply_model", "keywords", "embedding", "cid"])
        graph.node_put(user_id=page.user_id, kind=MemoryNode.Kind.PAGE, object_id=str(page.id), cid=cid)
        state.maintenance_due = True
        state.save(update_fields=["maintenance_due"])
        if embedding is not None:
            point = page_point(page, embedding)
            transaction.on_commit(lambda: components.vector_index().upsert([point]))
        if schedule:
            transaction.on_commit(lambda: schedule_maintenance(page.user_id))
    return page


def page_point(page: DialoguePage, embedding: Sequence[float]) -> VectorPoint:
    return VectorPoint(
        id=str(page.id), vector=list(embedding), text=page_text(page.query, page.response, page.reply_model),
        payload={"user_id": str(page.user_id), "kind": "page", "tier": page.tier,
                 "segment_id": str(page.segment_id) if page.segment_id else "", "seq": page.seq,
                 "timestamp": page.timestamp.timestamp()},
    )


def schedule_maintenance(user_id: int) -> None:
    from memory import maintenance

    maintenance.maintenance_schedule(user_id=user_id)


@dataclass
class TurnResult:
    page: DialoguePage
    reply: str
    recall: Recall
    prompt: Prompt
    fallback_reason: str = ""

    @property
    def offline(self) -> bool:
        return self.page.reply_model == OFFLINE_MODEL_NAME


def _offline_reply(query: str, recall: Recall, *, user, sona: Sona | None) -> str:
    profile = getattr(user, "persona_profile", None)
    name = profile.name if profile and profile.name else None
    return offline.compose_reply(query, recall.items, user_name=name, sona_name=sona.name if sona else None,
                                 now=timezone.now())


def _stream_words(text: str) -> Iterator[str]:
    """The offline reply streams like a model's, word by word."""
    words = text.split(" ")
    for i, word in enumerate(words):
        yield word if i == len(words) - 1 else word + " "


def generate_reply(*, query: str, recall: Recall, prompt: Prompt, user, sona: Sona | None,
                   on_token: Callable[[str], None] | None) -> tuple[str, str, str]:
    """(reply, model name, fallback reason). A failing LLM falls back to the offline engine."""
    model = components.chat_model()
    emit = on_token or (lambda _token: None)
    if model is not None:
        parts: list[str] = []
        try:
            for token in model.stream(prompt.messages):
                parts.append(token)
                emit(token)
            reply = "".join(parts).strip()
            if reply:
                return reply, model.name, ""
            reason = "the model returned an empty reply"
        except ModelError as exc:
            reason = str(exc) or exc.__class__.__name__
        log.warning("event=reply_fallback user=%s reason=%r", user.pk, reason)
        notice = "\n\n(The language model is unavailable; this reply comes from the offline memory engine.)"
        reply = _offline_reply(query, recall, user=user, sona=sona) + notice
        for token in _stream_words(reply):
            emit(token)
        return reply, OFFLINE_MODEL_NAME, reason
    reply = _offline_reply(query, recall, user=user, sona=sona)
    for token in _stream_words(reply):
        emit(token)
    return reply, OFFLINE_MODEL_NAME, ""


def _recall_or_degrade(*, user, page: DialoguePage, sona: Sona) -> Recall:
    """Recall, or when the vector store (or the embedder) fails, STM from the database alone:
    the reply degrades, the turn is never lost."""
    try:
        return recall_for_query(user=user, query=page.query, sona=sona, exclude_page_id=page.id, page=page)
    except Exception as exc:  # Qdrant, the embedder or the network: any of them may fail here
        log.warning("event=recall_degraded user=%s error=%r", user.pk, exc)
        graph.event_record(user_id=user.pk, kind=LifecycleEvent.Kind.RECALL_DEGRADED, subject_id=page.id,
                           error=repr(exc)[:500])
        return recall_stm_only(user=user, query=page.query, exclude_page_id=page.id)


def turn_run(*, user, message: str, sona: Sona | None = None,
             on_token: Callable[[str], None] | None = None,
             on_stored: Callable[[DialoguePage], None] | None = None) -> TurnResult:
    """A whole turn. The message is stored first; nothing after that can lose it.

    `on_stored` is called with the pending page as soon as the message is stored.
    """
    sona = sona or sona_get_or_create(user=user)
    page = page_start(user=user, query=message, sona=sona)
    if on_stored is not None:
        on_stored(page)
    recall = _recall_or_degrade(user=user, page=page, sona=sona)
    system = SYSTEM_PROMPT.format(sona=sona.name)
    if sona.profile:
        system += f"\nYour persona: {sona.profile}"
    prompt = assemble_prompt(query=page.query, items=recall.items, system=system,
                             budget_tokens=components.memory_params().prompt_token_budget)
    recall.record_prompt(prompt)
    reply, model_name, reason = generate_reply(query=page.query, recall=recall, prompt=prompt, user=user,
                                               sona=sona, on_token=on_token)
    if reason:
        graph.event_record(user_id=user.pk, kind=LifecycleEvent.Kind.REPLY_FALLBACK, subject_id=page.id,
                           reason=reason[:500])
    page_complete(page=page, response=reply, reply_model=model_name)
    return TurnResult(page=page, reply=reply, recall=recall, prompt=prompt, fallback_reason=reason)
