"""The browser chat: one user's turns over a websocket, streamed token by token to all their tabs.

Every socket of a user joins the group `chat.user.<id>`; the user's message, the reply's tokens
and the finished reply are sent to that group, so every open tab (in this process or, with the
Redis channel layer, in any other) shows the same turns. Only the process that received a
message runs its turn, so each turn is stored exactly once.

A turn runs in worker threads: storing the message and recalling on a turn worker
(MEMORYOS_CHAT_TURN_WORKERS of them), the reply on a thread of its own pool (it mostly waits on the
model, and a slow or hanging model must not hold the turn workers every other user needs), then
storing the reply on a turn worker again. Its tokens cross back to the event loop through
`call_soon_threadsafe` into an asyncio queue, and one pump task per turn forwards them in order
(batching what piled up meanwhile) as group sends. The turn belongs to no socket: closing the tab
leaves it running, and its reply is stored when it finishes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from memory.adapters.configured import adapters_state, adapters_wait_ready
from memory.selectors.files import attached_files
from memory.selectors.sonas import sona_for_user
from memory.services.common import MemoryInputError
from memory.services.pages import validate_message
from memory.services.turns import GeneratedReply, PreparedTurn, turn_finish, turn_prepare, turn_reply
from memory.services.users import sona_get_or_create
from memory.web.rate_limit import rate_limit_wait

log = logging.getLogger(__name__)

GENERIC_FAILURE = "Something went wrong while replying; please try again in a moment."
CLOSE_UNAUTHENTICATED = 4401


def user_group(user_id: int) -> str:
    return f"chat.user.{user_id}"


def chat_settings() -> dict[str, Any]:
    return settings.MEMORYOS_CHAT


# --- turns -----------------------------------------------------------------------------------

class _LoopTurns:
    """Turns running on one event loop, and a lock per user that runs their turns in order."""

    def __init__(self) -> None:
        self.locks: dict[int, asyncio.Lock] = {}
        self.tasks: set[asyncio.Task] = set()


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopTurns] = weakref.WeakKeyDictionary()


def _loop_turns() -> _LoopTurns:
    loop = asyncio.get_running_loop()
    if loop not in _loops:
        _loops[loop] = _LoopTurns()
    return _loops[loop]


@functools.cache
def _turn_executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=chat_settings()["TURN_WORKERS"], thread_name_prefix="chat-turn")


@functools.cache
def _reply_executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=chat_settings()["REPLY_WORKERS"], thread_name_prefix="chat-reply")


def _on(executor: ThreadPoolExecutor, function: Callable[..., Any]) -> Callable[..., Any]:
    return database_sync_to_async(function, thread_sensitive=False, executor=executor)


async def turns_drain(timeout: float | None = None) -> None:
    """Wait for the turns running on this loop to finish (tests, a graceful shutdown)."""
    tasks = list(_loop_turns().tasks)
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


def turn_start(*, user_id: int, sona_id: str | None, message: str, turn_id: str,
               files: list[str] | None = None) -> asyncio.Task:
    """Run a turn in the background; it outlives the socket that asked for it."""
    turns = _loop_turns()
    task = asyncio.create_task(_turn(user_id=user_id, sona_id=sona_id, message=message, turn_id=turn_id,
                                     files=files or []))
    turns.tasks.add(task)
    task.add_done_callback(turns.tasks.discard)
    return task


async def broadcast(user_id: int, frame: dict[str, Any]) -> None:
    """Send a frame to every socket of the user; a failing layer is logged, never raised."""
    try:
        await get_channel_layer().group_send(user_group(user_id), {"type": "chat.frame", "frame": frame})
    except Exception:  # Redis down: the turn must still finish and be stored
        log.exception("event=chat_broadcast_failed user=%s frame=%s", user_id, frame.get("type"))


async def _turn(*, user_id: int, sona_id: str | None, message: str, turn_id: str, files: list[str]) -> None:
    turns = _loop_turns()
    lock = turns.locks.setdefault(user_id, asyncio.Lock())
    async with lock:  # a user's turns run one after another, each recalling the one before
        # A turn that comes while the server is still loading its models waits for them: say so.
        await broadcast(user_id, {"type": "turn.started", "turn_id": turn_id,
                                  "loading": adapters_state() == "loading"})
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        pump = asyncio.create_task(_pump(user_id, turn_id, queue))
        try:
            turn = await _on(_turn_executor(), _turn_prepare)(user_id=user_id, sona_id=sona_id, message=message,
                                                              files=files)
            generated = await _on(_reply_executor(), turn_reply)(
                turn=turn, on_token=_threadsafe_put(asyncio.get_running_loop(), queue))
            frame = await _on(_turn_executor(), _turn_finish)(turn=turn, generated=generated)
            frame["turn_id"] = turn_id
        except MemoryInputError as exc:
            frame = {"type": "turn.error", "turn_id": turn_id, "error": str(exc)}
        except Exception:
            log.exception("event=chat_turn_failed user=%s turn=%s", user_id, turn_id)
            frame = {"type": "turn.error", "turn_id": turn_id, "error": GENERIC_FAILURE}
        finally:
            queue.put_nowait(None)  # after every token: call_soon_threadsafe callbacks run in order
            await pump
        await broadcast(user_id, frame)


def _threadsafe_put(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue) -> Callable[[str], None]:
    def on_token(token: str) -> None:  # called in the worker thread
        try:
            loop.call_soon_threadsafe(queue.put_nowait, token)
        except RuntimeError:  # the loop is gone (server stopping): the reply is still stored
            pass

    return on_token


async def _pump(user_id: int, turn_id: str, queue: asyncio.Queue) -> None:
    """Forward tokens in order; whatever piled up during a send goes out as one frame."""
    while True:
        batch = [await queue.get()]
        while not queue.empty():
            batch.append(queue.get_nowait())
        text = "".join(token for token in batch if token)
        if text:
            await broadcast(user_id, {"type": "turn.token", "turn_id": turn_id, "text": text})
        if None in batch:
            return


def _turn_prepare(*, user_id: int, sona_id: str | None, message: str, files: list[str]) -> PreparedTurn:
    """The turn up to its reply, on a turn worker: the message stored, the prompt assembled."""
    user = get_user_model().objects.get(pk=user_id)  # fresh: the profile may have changed
    sona = sona_for_user(user=user, sona_id=sona_id) if sona_id else None  # turn_prepare takes the default
    return turn_prepare(user=user, message=message, sona=sona, files=files)


def _turn_finish(*, turn: PreparedTurn, generated: GeneratedReply) -> dict[str, Any]:
    """The reply stored, on a turn worker; returns the final frame."""
    result = turn_finish(turn=turn, generated=generated)
    page, user, sona = result.page, turn.user, turn.sona
    return {
        "type": "turn.done", "page_id": str(page.id), "seq": page.seq, "reply": result.reply,
        "model": page.reply_model, "offline": result.offline, "sona": sona.name,
        "fallback": bool(result.fallback_reason), "recalled": len(result.prompt.included),
        "recall_url": reverse("turn_recall", args=[page.id]),
        "files": [{"name": f.name, "cid": f.content_cid, "media_type": f.media_type, "size": f.size,
                   "url": reverse("api-1:get_file_content", args=[f.content_cid])}
                  for f in attached_files(user=user, page_id=page.id)],
    }


# --- the consumer ----------------------------------------------------------------------------

class ChatConsumer(AsyncJsonWebsocketConsumer):
    """One socket of a signed-in user. It only ever reads or writes that user's memory."""

    user_id: int | None = None
    models_waiter: asyncio.Task | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)  # before accept: the handshake is refused
            return
        self.user_id = user.pk
        await self.channel_layer.group_add(user_group(self.user_id), self.channel_name)
        await self.accept()
        cfg = chat_settings()
        models = adapters_state()
        await self.send_json({"type": "ready", "max_message_chars": settings.MEMORYOS["MAX_MESSAGE_CHARS"],
                              "max_frame_bytes": cfg["MAX_FRAME_BYTES"], "models": models})
        if models == "loading":
            self.models_waiter = asyncio.create_task(self._models_ready())

    async def _models_ready(self) -> None:
        """Tell this socket when the server's warm-up has ended (the chat shows it loading till then)."""
        await asyncio.to_thread(adapters_wait_ready, None)
        await self.send_json({"type": "models.ready", "models": adapters_state()})

    async def disconnect(self, code: int) -> None:
        # Turns this socket started keep running; their replies are stored when they finish.
        if self.models_waiter is not None:
            self.models_waiter.cancel()
        if self.user_id is not None:
            await self.channel_layer.group_discard(user_group(self.user_id), self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs) -> None:
        try:
            content = await self._decode(text_data, bytes_data)
            if content is not None:
                await self.receive_json(content)
        except Exception:  # one bad frame must never take the socket down
            log.exception("event=chat_frame_failed user=%s", self.user_id)
            await self.send_error("internal", "The server could not handle that message; please try again.")

    async def _decode(self, text_data: str | None, bytes_data: bytes | None) -> dict | None:
        wait = await rate_limit_wait(self.user_id)
        if wait:
            await self.send_error("rate_limited", f"You are sending messages too fast. Please wait "
                                  f"{max(1, round(wait))} s before sending another.", retry_after=wait)
            return None
        if text_data is None:
            await self.send_error("bad_frame", "Frames must be JSON text, not binary.")
            return None
        limit = chat_settings()["MAX_FRAME_BYTES"]
        size = len(text_data.encode("utf-8", "surrogatepass"))
        if size > limit:
            await self.send_error("too_large", f"The frame is {size} bytes; the limit is {limit}.")
            return None
        try:
            content = json.loads(text_data)
        except ValueError:
            await self.send_error("bad_json", "The frame is not valid JSON.")
            return None
        if not isinstance(content, dict):
            await self.send_error("bad_frame", 'A frame must be a JSON object such as {"type": "message"}.')
            return None
        return content

    async def receive_json(self, content: dict, **kwargs) -> None:
        if content.get("type") == "message":
            await self._message(content)
        else:
            await self.send_error("unknown_type", f"Unknown frame type {str(content.get('type'))[:40]!r}.")

    async def _message(self, content: dict) -> None:
        if not await self._still_signed_in():
            await self.send_error("signed_out", "You have signed out; reload the page to sign in again.")
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        try:
            text = validate_message(content.get("text"))
        except MemoryInputError as exc:
            await self.send_error("invalid", str(exc))
            return
        files = content.get("files") or []
        if not isinstance(files, list) or len(files) > settings.MEMORYOS["MAX_FILES_PER_TURN"] \
                or not all(isinstance(cid, str) and 0 < len(cid) <= 100 for cid in files):
            await self.send_error("invalid", f"Attach at most {settings.MEMORYOS['MAX_FILES_PER_TURN']} files, "
                                             "each named by the content id its upload returned.")
            return
        sona_id = content.get("sona") or None
        sona_name = await self._sona_name(sona_id)
        if sona_name is None:
            await self.send_error("unknown_sona", "That persona does not exist; choose another one.")
            return
        turn_id = uuid.uuid4().hex
        await broadcast(self.user_id, {"type": "turn.user", "turn_id": turn_id, "text": text,
                                       "sona": sona_name})
        turn_start(user_id=self.user_id, sona_id=sona_id, message=text, turn_id=turn_id, files=files)

    @database_sync_to_async
    def _still_signed_in(self) -> bool:
        """The socket was authenticated when it opened; signing out elsewhere ends its rights."""
        session = self.scope.get("session")
        key = getattr(session, "session_key", None)
        return bool(key) and session.exists(key)

    @database_sync_to_async
    def _sona_name(self, sona_id) -> str | None:
        """The chosen sona's name, looked up among this user's own sonas only."""
        user = get_user_model().objects.get(pk=self.user_id)
        if sona_id is None:
            return sona_get_or_create(user=user).name
        sona = sona_for_user(user=user, sona_id=sona_id)
        return sona.name if sona else None

    async def chat_frame(self, event: dict) -> None:
        """A frame broadcast to the user's group."""
        await self.send_json(event["frame"])

    async def send_error(self, code: str, message: str, **extra) -> None:
        await self.send_json({"type": "error", "code": code, "error": message, **extra})
