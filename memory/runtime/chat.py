"""The browser chat's turns: a message accepted, then the frames of its turn as it runs.

The websocket (memory/web/consumers.py) and /v1 (memory/web/openai_api.py) check nothing
themselves: `chat_turn_accept` checks the message as every way in does
(memory/services/turn_input.py) and finds the sona it names among the user's own;
`chat_turn_frames` runs the turn and yields what the user's tabs are shown: `turn.started`,
`turn.token` as the reply is written, then `turn.done` or `turn.error`.

A user's turns run one after another on the event loop, each recalling the one before. The turn
itself runs in worker threads: storing the message and recalling on a turn worker
(MEMORYOS_CHAT_TURN_WORKERS of them), the reply on a thread of its own pool (it mostly waits on the
model, and a slow or hanging model must not hold the turn workers every other user needs), then
storing the reply on a turn worker again. Its tokens cross back to the event loop through
`call_soon_threadsafe` into an asyncio queue; whatever piled up while the caller was sending the
last frame goes out as one frame. The turn belongs to no socket: once started it runs to its end,
and its reply is stored when it finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import logging
import threading
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from memory.adapters import configured
from memory.adapters.configured import adapters_state
from memory.engine.ports import ChatMessage
from memory.models import Sona
from memory.runtime.connections import connections_kept
from memory.selectors.files import attached_files
from memory.selectors.sonas import sona_for_user
from memory.services.common import MemoryInputError
from memory.services.files import files_for_turn
from memory.services.turn_input import TurnInput, turn_input_parse
from memory.services.turns import GeneratedReply, PreparedTurn, turn_finish, turn_prepare, turn_reply
from memory.services.users import DEFAULT_SONA_NAME, sona_get_or_create

log = logging.getLogger(__name__)

GENERIC_FAILURE = "Something went wrong while replying; please try again in a moment."


class UnknownSona(MemoryInputError):
    """The sona a message names is not one of this user's."""


@dataclass(frozen=True)
class ChatTurn:
    """A message the chat accepted: checked, its sona found; its turn has not started yet."""

    user_id: int
    turn_id: str
    input: TurnInput
    sona_name: str
    # What an OpenAI-compatible client sent before this message: the prompt's, never stored.
    context: tuple[ChatMessage, ...] = ()

    def user_frame(self) -> dict[str, Any]:
        """The message as every tab of the user shows it, before its turn starts."""
        return {"type": "turn.user", "turn_id": self.turn_id, "text": self.input.message, "sona": self.sona_name}


def chat_turn_accept(*, user_id: int, message: object, files: object = None, sona: object = None) -> ChatTurn:
    """Check a chat message (the sona by its id, looked up among this user's sonas only);
    MemoryInputError (UnknownSona for the sona) says what is wrong, and nothing is stored."""
    checked = turn_input_parse(message=message, files=files, sona=sona)
    if checked.files:  # another user's file, or none at all, is refused before the turn is shown
        files_for_turn(user=get_user_model()(pk=user_id), cids=checked.files)
    if checked.sona is None:
        # A new user's default sona is made by the turn, on a turn worker (it embeds its name):
        # this runs on the one thread every socket's database calls share.
        default = Sona.objects.filter(user_id=user_id, is_default=True).values_list("name", flat=True).first()
        name = default or DEFAULT_SONA_NAME
    else:
        found = sona_for_user(user=get_user_model().objects.get(pk=user_id), sona_id=checked.sona)
        if found is None:
            raise UnknownSona("That sona does not exist; choose another one.")
        name = found.name
    return ChatTurn(user_id=user_id, turn_id=uuid.uuid4().hex, input=checked, sona_name=name)


def chat_sona_ready(*, user_id: int) -> None:
    """Make the user's default sona now if they have none: what the chat page does as it loads
    (memory/web/views.py), for a socket opened without it, so that their first message does not
    wait for it (a new sona embeds its name). Then ready the vector index for the user's searches
    (the embedded shard counts their words once a process)."""
    if not Sona.objects.filter(user_id=user_id, is_default=True).exists():
        sona_get_or_create(user=get_user_model().objects.get(pk=user_id))
    configured.vector_index().prepare(user_id=str(user_id))


async def chat_open(*, user_id: int) -> None:
    """What a socket's opening starts: the default sona made (chat_sona_ready) on a turn worker, in
    turn with the messages that came before it (it is due now: the user's first message may come
    at any moment, and would make it itself). A failure is logged: the first turn makes the sona
    then."""
    try:
        await _turn_slots().run(chat_sona_ready, store=False, user_id=user_id)
    except Exception:
        log.exception("event=chat_open_failed user=%s", user_id)


# --- running a turn --------------------------------------------------------------------------

# A lock per user on each event loop (an asyncio lock belongs to one loop).
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Lock]] = weakref.WeakKeyDictionary()


def _user_lock(user_id: int) -> asyncio.Lock:
    locks = _locks.setdefault(asyncio.get_running_loop(), {})
    return locks.setdefault(user_id, asyncio.Lock())


@functools.cache
def _turn_executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.MEMORYOS_CHAT["TURN_WORKERS"], thread_name_prefix="chat-turn")


@functools.cache
def _reply_executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings.MEMORYOS_CHAT["REPLY_WORKERS"], thread_name_prefix="chat-reply")


@functools.cache
def _reply_places() -> threading.BoundedSemaphore:
    """One place for each reply worker: a turn that finds none free is not queued behind slow models."""
    return threading.BoundedSemaphore(settings.MEMORYOS_CHAT["REPLY_WORKERS"])


REPLY_WORKERS_BUSY = "every reply worker is busy with a slow model"


async def _reply(prepared: PreparedTurn, on_token: Callable[[str], None]) -> GeneratedReply:
    """The reply on a reply worker; when every one is taken (the model is slow for everyone), the
    offline engine's reply at once, on a thread of the loop's default pool (it needs no model)."""
    places = _reply_places()
    if not places.acquire(blocking=False):
        log.warning("event=reply_workers_busy user=%s", prepared.user.pk)
        return await asyncio.to_thread(turn_reply, turn=prepared, on_token=on_token, offline_reason=REPLY_WORKERS_BUSY)
    try:
        return await _on(_reply_executor(), turn_reply, keep=False)(turn=prepared, on_token=on_token)
    finally:
        places.release()


def _on(executor: ThreadPoolExecutor, function: Callable[..., Any], *, keep: bool = True) -> Callable[..., Any]:
    """`function` on one of `executor`'s threads; `keep`: its database connection stays open for
    the thread's next call (connections_kept)."""
    return database_sync_to_async(connections_kept(function) if keep else function, thread_sensitive=False,
                                  executor=executor)


class TurnSlots:
    """The turn workers' places, handed out earliest due first: a message's store-and-recall is due
    when it comes, a reply's store `store_defer_s` after it comes.

    Under a burst, the messages waiting for their recall (and their first token) go before the
    stores of replies already streamed; a reply's store is put off by at most `store_defer_s`
    behind messages that came after it, so it is never starved. On one event loop, like the locks.
    """

    def __init__(self, slots: int, store_defer_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.free = max(1, slots)
        self.store_defer_s = store_defer_s
        self.clock = clock
        self._waiting: list[tuple[float, int, asyncio.Future]] = []
        self._order = itertools.count()

    @contextlib.asynccontextmanager
    async def place(self, *, store: bool) -> AsyncIterator[None]:
        """Hold one turn worker's place: `store` for a reply's store, else a message's recall."""
        await self._acquire(self.clock() + (self.store_defer_s if store else 0.0))
        try:
            yield
        finally:
            self._release()

    async def run(self, function: Callable[..., Any], *, store: bool, **kwargs) -> Any:
        """`function(**kwargs)` on a turn worker, once this turn's place comes."""
        async with self.place(store=store):
            return await _on(_turn_executor(), function)(**kwargs)

    async def _acquire(self, due: float) -> None:
        if self.free and not self._waiting:
            self.free -= 1
            return
        place = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (due, next(self._order), place))
        try:
            await place
        except asyncio.CancelledError:
            if place.done() and not place.cancelled():  # handed the place just as it was cancelled
                self._release()
            raise

    def _release(self) -> None:
        while self._waiting:
            _due, _n, place = heapq.heappop(self._waiting)
            if not place.done():
                place.set_result(None)
                return
        self.free += 1


_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, TurnSlots] = weakref.WeakKeyDictionary()


def _turn_slots() -> TurnSlots:
    loop = asyncio.get_running_loop()
    slots = _slots.get(loop)
    if slots is None:
        cfg = settings.MEMORYOS_CHAT
        slots = _slots[loop] = TurnSlots(cfg["TURN_WORKERS"], cfg["STORE_DEFER_S"])
    return slots


async def chat_turn_frames(turn: ChatTurn) -> AsyncIterator[dict[str, Any]]:
    """Run an accepted turn after the user's earlier ones, yielding the frames its tabs are shown.

    A turn that comes while the server is still loading its models waits for them: `turn.started`
    says so. A refused input ends in `turn.error` with its reason; any other failure in
    `turn.error` with a generic message (the reason is logged)."""
    async with _user_lock(turn.user_id):
        yield {"type": "turn.started", "turn_id": turn.turn_id, "loading": adapters_state() == "loading"}
        tokens: asyncio.Queue[str | None] = asyncio.Queue()
        phases = asyncio.create_task(_phases(turn, tokens))
        while True:
            batch = [await tokens.get()]
            while not tokens.empty():
                batch.append(tokens.get_nowait())
            text = "".join(token for token in batch if token)
            if text:
                yield {"type": "turn.token", "turn_id": turn.turn_id, "text": text}
            if None in batch:
                break
        yield await phases


async def _phases(turn: ChatTurn, tokens: asyncio.Queue) -> dict[str, Any]:
    """Prepare, reply and finish on their thread pools; the final frame. None ends the tokens."""
    try:
        slots = _turn_slots()
        prepared = await slots.run(_turn_prepare, store=False, turn=turn)
        generated = await _reply(prepared, _threadsafe_put(asyncio.get_running_loop(), tokens))
        frame = await slots.run(_turn_finish, store=True, turn=prepared, generated=generated)
        frame["turn_id"] = turn.turn_id
    except MemoryInputError as exc:
        frame = {"type": "turn.error", "turn_id": turn.turn_id, "error": str(exc)}
    except Exception:
        log.exception("event=chat_turn_failed user=%s turn=%s", turn.user_id, turn.turn_id)
        frame = {"type": "turn.error", "turn_id": turn.turn_id, "error": GENERIC_FAILURE}
    finally:
        tokens.put_nowait(None)  # after every token: call_soon_threadsafe callbacks run in order
    return frame


def _threadsafe_put(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> Callable[[str], None]:
    def on_token(token: str) -> None:  # called in the worker thread
        try:
            loop.call_soon_threadsafe(queue.put_nowait, token)
        except RuntimeError:  # the loop is gone (server stopping): the reply is still stored
            pass

    return on_token


def _turn_prepare(*, turn: ChatTurn) -> PreparedTurn:
    """The turn up to its reply, on a turn worker: the message stored, the prompt assembled."""
    # Fresh (the profile may have changed), with the profile the offline reply names the user by:
    # the reply's thread then needs no database connection of its own.
    user = get_user_model().objects.select_related("long_term_profile").get(pk=turn.user_id)
    sona_id = turn.input.sona
    sona = sona_for_user(user=user, sona_id=sona_id) if sona_id else None  # turn_prepare takes the default
    return turn_prepare(user=user, message=turn.input.message, sona=sona, files=turn.input.files,
                        context=turn.context)


def _turn_finish(*, turn: PreparedTurn, generated: GeneratedReply) -> dict[str, Any]:
    """The reply stored, on a turn worker; returns the final frame."""
    result = turn_finish(turn=turn, generated=generated)
    page, user, sona = result.page, turn.user, turn.sona
    return {
        "type": "turn.done", "page_id": str(page.id), "seq": page.seq, "reply": result.reply,
        "model": page.reply_model, "offline": result.offline, "sona": sona.name,
        "fallback": bool(result.fallback_reason), "recalled": len(result.prompt.included),
        "prompt_tokens": result.prompt.tokens,
        "recall_url": reverse("turn_recall", args=[page.id]),
        "files": [{"name": f.name, "cid": f.content_cid, "media_type": f.media_type, "size": f.size,
                   "url": reverse("api-1:get_file_content", args=[f.content_cid])}
                  for f in (attached_files(user=user, page_id=page.id) if turn.files else ())],
    }
