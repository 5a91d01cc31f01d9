"""The one write path for a turn: store the message, recall, generate, complete the page.

Maintenance (STM → MTM → LPM, memory/services/maintenance.py) is due once the reply is stored and
runs off the reply path; a turn counts as a reply under way from its message to its reply, and the
work after replies yields to those. The turn only says so (memory/services/follow_up.py): how that
work runs is the runtime's (memory/runtime/after_reply.py).
"""

from __future__ import annotations

import dataclasses
import logging
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.adapters import configured
from memory.adapters.circuit import ModelCircuitOpen
from memory.adapters.llm import reply_bounded
from memory.config import memory_params
from memory.engine import offline
from memory.engine.fact_answers import KnownFact, with_known_facts
from memory.engine.ports import ChatMessage, ModelError
from memory.engine.retrieval import Prompt, assemble_prompt
from memory.engine.types import RecalledItem
from memory.models import OFFLINE_MODEL_NAME, AttachedFile, DialoguePage, LifecycleEvent, Sona
from memory.recall.pipeline import embed_in_background
from memory.selectors.long_term import facts_with_periods
from memory.services.common import embed_or_none
from memory.services.events import event_record
from memory.services.facts import facts_to_note
from memory.services.files import attachment_note, attachment_prompt_text, files_for_turn
from memory.services.follow_up import after_reply_due, maintenance_due, reply_begins
from memory.services.memory_talk import memory_talk_answer
from memory.services.pages import page_reply_store, page_start, page_text
from memory.services.policy_work import after_reply_work
from memory.services.recall import (
    Recall,
    policy_choose,
    recall_for_query,
    recall_stm_only,
    trace_record_reply,
)
from memory.services.turn_input import turn_input_parse
from memory.services.users import sona_get_or_create

if TYPE_CHECKING:
    from concurrent.futures import Future

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are {sona}, a personal assistant with a long-term memory of this user. Use the memory below "
    "when it is relevant; say so when you do not remember something instead of guessing. Do not say that "
    "you will remember or have noted something: what is stored is shown to the user separately. Reply briefly."
)


def page_complete(*, page: DialoguePage, response: str, reply_model: str,
                  embedding: Sequence[float] | None = None, schedule: bool = True) -> DialoguePage:
    """Store the reply (memory/services/pages.py); once it is committed, the user's maintenance is due."""
    page = page_reply_store(page=page, response=response, reply_model=reply_model, embedding=embedding)
    if schedule:
        transaction.on_commit(lambda: maintenance_due(user_id=page.user_id))
    return page


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


def _offline_reply(query: str, recall: Recall, *, user, sona: Sona | None,
                   files: Sequence[AttachedFile] = (), facts: Sequence[KnownFact] = (),
                   noted: Sequence[str] = ()) -> str:
    profile = getattr(user, "long_term_profile", None)
    name = profile.name if profile and profile.name else None
    # The user's utterances are indexed under their profile name, else their username
    # (memory/services/utterances.py): those are the words the reply cites as "you told me".
    reply = offline.compose_reply(query, recall.items, user_name=name, sona_name=sona.name if sona else None,
                                  now=timezone.now(), user_aliases=(name or "", user.get_username()),
                                  facts=facts, persona=sona.profile if sona else "", noted=noted)
    note = attachment_note(files)
    return f"{note}\n\n{reply}" if note else reply


def _known_facts(user) -> list[KnownFact]:
    """The person's facts as the offline reply reads them: current and superseded, with periods."""
    return [KnownFact(text=f.fact.text, said_at=f.fact.timestamp, valid_until=f.fact.valid_until,
                      successor=f.successor, id=str(f.fact.pk)) for f in facts_with_periods(user=user)]


RESUMED_NOTE = "(The server stopped before answering; this reply was written from memory when it came back.)"


def turn_resumed_reply(*, page: DialoguePage) -> str:
    """The reply to a turn whose server stopped before answering, written by the offline engine from
    memory when the turn is resumed (memory/services/maintenance.py pages_interrupted_complete): the
    person's question answered, not left empty. No model is called, and nothing is said to be
    remembered. "" when even that fails (the page is completed all the same)."""
    try:
        user, sona = page.user, page.sona
        try:
            recall = recall_for_query(user=user, query=page.query, sona=sona, exclude_page_id=page.id,
                                      update_heat=False, record_trace=False)
        except Exception as exc:  # the vector store or the embedder: the database's STM still answers
            log.warning("event=resumed_recall_degraded user=%s error=%r", user.pk, exc)
            recall = recall_stm_only(user=user, query=page.query, exclude_page_id=page.id)
        reply = _offline_reply(page.query, recall, user=user, sona=sona, facts=_known_facts(user))
    except Exception:
        log.exception("event=resumed_reply_failed page=%s", page.pk)
        return ""
    return f"{reply}\n\n{RESUMED_NOTE}"


def _stream_words(text: str) -> Iterator[str]:
    """The offline reply streams like a model's, word by word."""
    words = text.split(" ")
    for i, word in enumerate(words):
        yield word if i == len(words) - 1 else word + " "


@dataclass(frozen=True)
class GeneratedReply:
    text: str
    model: str
    fallback_reason: str = ""
    breaker_open: bool = False  # the model was not asked: it is cooling off after repeated failures
    embedding: list[float] | None = None  # the page's, once the reply is known (turn_reply)


def reply_model_name() -> str:
    """The name replies are written under: the configured LLM's, else the offline engine's."""
    return settings.OPENAI_CHAT_MODEL if settings.LLM_ENABLED else OFFLINE_MODEL_NAME


def generate_reply(*, query: str, recall: Recall, prompt: Prompt, user, sona: Sona | None,
                   on_token: Callable[[str], None] | None,
                   files: Sequence[AttachedFile] = (), offline_reason: str = "",
                   facts: Sequence[KnownFact] = (), noted: Sequence[str] = ()) -> GeneratedReply:
    """The reply, streamed through `on_token`, at most REPLY_MAX_TOKENS tokens, REPLY_MAX_CHARS
    characters and REPLY_MAX_SECONDS long (memory/adapters/llm.py reply_bounded). A failing LLM, or
    one cut for time, falls back to the offline engine; one whose circuit breaker is open
    (memory/adapters/circuit.py) is not asked at all, nor is any when `offline_reason` says why not."""
    model = None if offline_reason else configured.chat_model()
    emit = on_token or (lambda _token: None)
    if model is None and not offline_reason:
        reply = _offline_reply(query, recall, user=user, sona=sona, files=files, facts=facts, noted=noted)
        for token in _stream_words(reply):
            emit(token)
        return GeneratedReply(reply, OFFLINE_MODEL_NAME)
    parts: list[str] = []
    breaker_open = False
    reason = offline_reason
    try:
        if model is not None:
            for token in reply_bounded(model.stream(prompt.messages, max_tokens=settings.REPLY_MAX_TOKENS),
                                       max_chars=settings.REPLY_MAX_CHARS,
                                       max_seconds=settings.REPLY_MAX_SECONDS or None, model=model):
                parts.append(token)
                emit(token)
            reply = "".join(parts).strip()
            if reply:
                return GeneratedReply(reply, model.name)
            reason = "the model returned an empty reply"
    except ModelError as exc:
        reason = str(exc) or exc.__class__.__name__
        breaker_open = isinstance(exc, ModelCircuitOpen)
    log.warning("event=reply_fallback user=%s breaker_open=%s reason=%r", user.pk, breaker_open, reason)
    notice = "\n\n(The language model is unavailable; this reply comes from the offline memory engine.)"
    reply = _offline_reply(query, recall, user=user, sona=sona, files=files, facts=facts, noted=noted) + notice
    for token in _stream_words(reply):
        emit(token)
    return GeneratedReply(reply, OFFLINE_MODEL_NAME, reason, breaker_open)


def _recall_or_degrade(*, user, page: DialoguePage, sona: Sona, policy: str,
                       embedding: Future[tuple[list[float], float]] | None = None,
                       prompt_for: Callable[[list[RecalledItem]], Prompt] | None = None) -> Recall:
    """Recall, or when the vector store (or the embedder) fails, STM from the database alone:
    the reply degrades, the turn is never lost.

    `embedding` is the query's vector being computed (the message's words, which are what the
    recall embeds); the recall waits for it where it would wait for its own. `prompt_for`
    assembles the prompt, which the trace records (the degraded recall has neither)."""
    try:
        return recall_for_query(user=user, query=page.query, sona=sona, exclude_page_id=page.id, page=page,
                                policy=policy, embedding=embedding, prompt_for=prompt_for)
    except Exception as exc:  # Qdrant, the embedder or the network: any of them may fail here
        log.warning("event=recall_degraded user=%s error=%r", user.pk, exc)
        event_record(user_id=user.pk, kind=LifecycleEvent.Kind.RECALL_DEGRADED, subject_id=page.id,
                     error=repr(exc)[:500])
        return recall_stm_only(user=user, query=page.query, exclude_page_id=page.id)


@dataclass
class PreparedTurn:
    """A turn whose message is stored and whose prompt is assembled: what the reply needs."""

    user: Any
    sona: Sona
    page: DialoguePage
    recall: Recall
    prompt: Prompt
    files: Sequence[AttachedFile]
    facts: Sequence[KnownFact] = ()  # what is known of the person (read by the turn worker)
    # What the work after the reply will store of this message (memory/services/facts.py
    # facts_to_note): the only facts a reply may say it remembers.
    noted: Sequence[str] = ()
    # The message's vector (the recall's query vector): a page whose text is the message alone (an
    # offline reply's, memory/services/pages.py page_text) is stored with it, not embedded again.
    query_vector: list[float] | None = None
    # Ends this turn's count of replies under way (reply_begins): at turn_finish, or when the turn is dropped.
    reply_ended: weakref.finalize | None = field(default=None, repr=False)
    # The reply to a request about memory itself ("forget that I …"), answered from memory.
    talk_reply: str | None = None

    def end_reply(self) -> None:
        if self.reply_ended is not None:
            self.reply_ended()


def turn_run(*, user, message: str, sona: Sona | None = None, policy: str | None = None,
             on_token: Callable[[str], None] | None = None,
             on_stored: Callable[[DialoguePage], None] | None = None,
             files: Sequence[str] = ()) -> TurnResult:
    """A whole turn. The message is stored first; nothing after that can lose it.

    `policy` names the recall policy (default: the sona's, else the setting's); `files` the content
    ids of files the user uploaded for this turn (memory/services/files.py). An unknown policy or
    file is refused before anything is stored. `on_stored` is called with the pending page as soon
    as the message is stored.
    """
    turn = turn_prepare(user=user, message=message, sona=sona, policy=policy, on_stored=on_stored, files=files)
    return turn_finish(turn=turn, generated=turn_reply(turn=turn, on_token=on_token))


def turn_prepare(*, user, message: str, sona: Sona | None = None, policy: str | None = None,
                 on_stored: Callable[[DialoguePage], None] | None = None,
                 files: Sequence[str] = (), context: Sequence[ChatMessage] = ()) -> PreparedTurn:
    """The turn up to its reply: store the message, recall, assemble the prompt.

    The message, the files and the policy are checked as every way in checks them
    (memory/services/turn_input.py) before anything is stored. The chat runs the three parts of a
    turn on different threads (memory/runtime/chat.py): a reply waits on the model, and must not
    hold a thread other users' turns need for their recall.

    `context` is what a client sent before this message (the OpenAI-compatible endpoint's earlier
    messages): it goes into the model's prompt after the memory, and is stored nowhere.
    """
    end = reply_begins()
    try:
        turn = _prepare(user=user, message=message, sona=sona, policy=policy, on_stored=on_stored, files=files,
                        context=context)
    except BaseException:
        end()
        raise
    turn.reply_ended = weakref.finalize(turn, end)  # a caller that drops the turn still ends the count
    return turn


def _prepare(*, user, message: str, sona: Sona | None, policy: str | None,
             on_stored: Callable[[DialoguePage], None] | None, files: Sequence[str],
             context: Sequence[ChatMessage] = ()) -> PreparedTurn:
    checked = turn_input_parse(message=message, files=files, policy=policy)
    sona = sona or sona_get_or_create(user=user)
    policy = policy_choose(requested=checked.policy, sona=sona)
    attached = files_for_turn(user=user, cids=checked.files)
    embedding = embed_in_background(checked.message)  # while the message is stored
    page = page_start(user=user, query=checked.message, sona=sona, files=attached)
    if on_stored is not None:
        on_stored(page)
    # A request about memory itself is answered from memory (and a forget may redact the message).
    talk = memory_talk_answer(user=user, page=page)
    if page.query != checked.message:  # page_start stores the message as it is; if it did not, embed that
        embedding = None
    system = SYSTEM_PROMPT.format(sona=sona.name)
    if sona.profile:
        system += f"\nYour persona: {sona.profile}"

    # What is known of the person, read here (the reply's thread keeps no connection): the offline
    # reply answers from it, and a model's prompt carries it, current facts first.
    known = _known_facts(user)
    in_prompt = known if configured.chat_model() is not None else []

    def prompt_for(items: list[RecalledItem]) -> Prompt:
        return assemble_prompt(query=page.query + attachment_prompt_text(attached),
                               items=with_known_facts(items, in_prompt), system=system,
                               budget_tokens=memory_params().prompt_token_budget, context=context,
                               context_share=settings.MEMORYOS_OPENAI["CONTEXT_SHARE"])

    recall = _recall_or_degrade(user=user, page=page, sona=sona, policy=policy, embedding=embedding,
                                prompt_for=prompt_for)
    prompt = recall.prompt if recall.prompt is not None else prompt_for(recall.items)
    query_vector = None
    if embedding is not None and embedding.done() and embedding.exception() is None:
        query_vector = embedding.result()[0]
    noted = facts_to_note(user_id=user.pk, message=page.query, known=[f.text for f in known if f.valid_until is None],
                          vector=query_vector) if talk is None else []
    return PreparedTurn(user=user, sona=sona, page=page, recall=recall, prompt=prompt, files=attached,
                        query_vector=query_vector, facts=known, noted=noted,
                        talk_reply=talk.text if talk is not None else None)


def turn_reply(*, turn: PreparedTurn, on_token: Callable[[str], None] | None = None,
               offline_reason: str = "") -> GeneratedReply:
    """The reply of a prepared turn, streamed through `on_token`, and the page's embedding;
    nothing is stored.

    The page is embedded here, on the thread that streamed the reply, not where the reply is
    stored (the chat's turn workers, which other users' recalls wait for). A page indexed by the
    message alone (an offline reply's) takes the recall's query vector: the same words."""
    if turn.talk_reply is not None:
        for token in _stream_words(turn.talk_reply):
            (on_token or (lambda _token: None))(token)
        generated = GeneratedReply(turn.talk_reply, OFFLINE_MODEL_NAME)
    else:
        generated = generate_reply(query=turn.page.query, recall=turn.recall, prompt=turn.prompt, user=turn.user,
                                   sona=turn.sona, on_token=on_token, files=turn.files,
                                   offline_reason=offline_reason, facts=turn.facts, noted=turn.noted)
    page = turn.page
    text = page_text(page.query, generated.text, generated.model, page.attachment_text)
    if turn.query_vector is not None and text == page.query:
        return dataclasses.replace(generated, embedding=turn.query_vector)
    vectors = embed_or_none([text])  # None when the embedder fails: the store tries again
    return dataclasses.replace(generated, embedding=vectors[0] if vectors else None)


def turn_finish(*, turn: PreparedTurn, generated: GeneratedReply) -> TurnResult:
    """Store the reply, and why it fell back to the offline engine if it did."""
    try:
        return _turn_store(turn=turn, generated=generated)
    finally:
        turn.end_reply()


def _turn_store(*, turn: PreparedTurn, generated: GeneratedReply) -> TurnResult:
    user, page, recall = turn.user, turn.page, turn.recall
    reply, reason = generated.text, generated.fallback_reason
    if reason:
        event_record(user_id=user.pk, kind=LifecycleEvent.Kind.REPLY_FALLBACK, subject_id=page.id,
                     reason=reason[:500], breaker_open=generated.breaker_open)
        trace_record_reply(recall=recall, fallback_reason=reason, breaker_open=generated.breaker_open)
    page_complete(page=page, response=reply, reply_model=generated.model, embedding=generated.embedding)
    work = after_reply_work(recall.policy)
    if work and recall.trace is not None:  # what the policy asked for (e.g. importance ratings), off the reply path
        trace_id = recall.trace.id
        transaction.on_commit(lambda: [after_reply_due(name=name, user_id=user.pk, trace_id=trace_id, reply=reply)
                                       for name in work])
    return TurnResult(page=page, reply=reply, recall=recall, prompt=turn.prompt, fallback_reason=reason)
