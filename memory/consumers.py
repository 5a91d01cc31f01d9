"""The browser chat: one user's turns over a websocket, streamed token by token to all their tabs.

Every socket of a user joins the group `chat.user.<id>`; the user's message, the reply's tokens
and the finished reply are sent to that group, so every open tab (in this process or, with the
Redis channel layer, in any other) shows the same turns. Only the process that received a
message runs its turn, so each turn is stored exactly once.

A turn runs `turn_run` in a worker thread. Its tokens cross back to the event loop through
`call_soon_threadsafe` into an asyncio queue, and one pump task per turn forwards them in order
(batching what piled up meanwhile) as group sends. The turn belongs to no socket: closing the tab
leaves it running, and its reply is stored when it finishes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
import time
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

from memory.selectors import sona_for_user
from memory.services import MemoryInputError, sona_get_or_create, turn_run, validate_message

log = logging.getLogger(__name__)

GENERIC_FAILURE = "Something went wrong while replying; please try again in a moment."
CLOSE_UNAUTHENTICATED = 4401


def user_group(user_id: int) -> str:
    return f"chat.user.{user_id}"


def chat_settings() -> dict[str, Any]:
    return settings.MEMORYOS_CHAT


# --- rate limit ------------------------------------------------------------------------------

class TokenBucket:
    """`burst` frames at once, then `rate_per_minute` on average."""

    def __init__(self, *, burst: int, rate_per_minute: float, clock: Callable[[], float] = time.monotonic):
        self.capacity = float(max(burst, 1))
        self.rate = max(rate_per_minute, 0.0) / 60.0
        self.clock = clock
        self.tokens = self.capacity
        self.updated = clock()

    def take(self) -> float:
        """0 when a frame may pass (and it is counted), else the seconds until one may."""
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return min((1.0 - self.tokens) / self.rate, 3600.0) if self.rate else 3600.0


# Per user and per process: all of a user's sockets in this process draw from one bucket.
_buckets: dict[int, TokenBucket] = {}
_buckets_lock = threading.Lock()


def rate_limit_take(user_id: int) -> float:
    """This process's bucket of the user (no Redis, or Redis failing)."""
    cfg = chat_settings()
    with _buckets_lock:
        bucket = _buckets.get(user_id)
        if bucket is None:
            bucket = _buckets[user_id] = TokenBucket(burst=cfg["RATE_BURST"],
                                                     rate_per_minute=cfg["RATE_PER_MINUTE"])
        return bucket.take()


# The same bucket as TokenBucket.take, kept in a Redis hash per user and updated atomically, so
# that several server processes share it. Redis's clock, not the processes', measures the refill.
# Lua numbers come back from Redis as integers, so the wait returns as a string.
_SHARED_TAKE = """
local capacity, rate, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'updated')
local tokens = tonumber(state[1]) or capacity
local updated = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - updated) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
elseif rate > 0 then
  wait = math.min((1 - tokens) / rate, 3600)
else
  wait = 3600
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'updated', tostring(now))
redis.call('EXPIRE', KEYS[1], ttl)
return tostring(wait)
"""
# A client per event loop: redis.asyncio connections belong to the loop that opened them.
_shared_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def _rate_key(user_id: int) -> str:
    return f"{chat_settings()['RATE_KEY_PREFIX']}:rate:{user_id}"


async def rate_limit_wait(user_id: int) -> float:
    """0 when the user's frame may pass (and it is counted), else the seconds until one may.

    With Redis configured the bucket is shared by every server process; if Redis fails, this
    process's own bucket decides, so a flood is still limited and no frame waits on the outage."""
    cfg = chat_settings()
    url = cfg.get("RATE_REDIS_URL")
    if not url:
        return rate_limit_take(user_id)
    burst = float(max(cfg["RATE_BURST"], 1))
    rate = max(cfg["RATE_PER_MINUTE"], 0.0) / 60.0
    idle_s = int(burst / rate) + 60 if rate else 3600  # a full bucket needs no key
    try:
        loop = asyncio.get_running_loop()
        take = _shared_clients.get(loop)
        if take is None:
            import redis.asyncio

            take = _shared_clients[loop] = redis.asyncio.Redis.from_url(
                url, socket_timeout=1.0, socket_connect_timeout=1.0).register_script(_SHARED_TAKE)
        return float(await take(keys=[_rate_key(user_id)], args=[burst, rate, idle_s]))
    except Exception as exc:  # Redis down or slow: limit per process rather than not at all
        log.warning("event=rate_limit_shared_failed user=%s error=%r", user_id, exc)
        return rate_limit_take(user_id)


def rate_limits_reset() -> None:
    """Every bucket full again: this process's, and the shared ones under this prefix (tests)."""
    with _buckets_lock:
        _buckets.clear()
    url = chat_settings().get("RATE_REDIS_URL")
    if url:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=2.0)
        try:
            keys = list(client.scan_iter(match=_rate_key("*"), count=1000))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


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


async def turns_drain(timeout: float | None = None) -> None:
    """Wait for the turns running on this loop to finish (tests, a graceful shutdown)."""
    tasks = list(_loop_turns().tasks)
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


def turn_start(*, user_id: int, sona_id: str | None, message: str, turn_id: str) -> asyncio.Task:
    """Run a turn in the background; it outlives the socket that asked for it."""
    turns = _loop_turns()
    task = asyncio.create_task(_turn(user_id=user_id, sona_id=sona_id, message=message, turn_id=turn_id))
    turns.tasks.add(task)
    task.add_done_callback(turns.tasks.discard)
    return task


async def broadcast(user_id: int, frame: dict[str, Any]) -> None:
    """Send a frame to every socket of the user; a failing layer is logged, never raised."""
    try:
        await get_channel_layer().group_send(user_group(user_id), {"type": "chat.frame", "frame": frame})
    except Exception:  # Redis down: the turn must still finish and be stored
        log.exception("event=chat_broadcast_failed user=%s frame=%s", user_id, frame.get("type"))


async def _turn(*, user_id: int, sona_id: str | None, message: str, turn_id: str) -> None:
    turns = _loop_turns()
    lock = turns.locks.setdefault(user_id, asyncio.Lock())
    async with lock:  # a user's turns run one after another, each recalling the one before
        await broadcast(user_id, {"type": "turn.started", "turn_id": turn_id})
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        pump = asyncio.create_task(_pump(user_id, turn_id, queue))
        run = database_sync_to_async(_turn_sync, thread_sensitive=False, executor=_turn_executor())
        try:
            frame = await run(user_id=user_id, sona_id=sona_id, message=message,
                              on_token=_threadsafe_put(asyncio.get_running_loop(), queue))
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


def _turn_sync(*, user_id: int, sona_id: str | None, message: str,
               on_token: Callable[[str], None]) -> dict[str, Any]:
    """The turn itself, in a worker thread; returns the final frame."""
    user = get_user_model().objects.get(pk=user_id)  # fresh: the profile may have changed
    sona = (sona_for_user(user=user, sona_id=sona_id) if sona_id else None) or sona_get_or_create(user=user)
    result = turn_run(user=user, message=message, sona=sona, on_token=on_token)
    page = result.page
    return {
        "type": "turn.done", "page_id": str(page.id), "seq": page.seq, "reply": result.reply,
        "model": page.reply_model, "offline": result.offline, "sona": sona.name,
        "fallback": bool(result.fallback_reason), "recalled": len(result.prompt.included),
        "recall_url": reverse("turn_recall", args=[page.id]),
    }


# --- the consumer ----------------------------------------------------------------------------

class ChatConsumer(AsyncJsonWebsocketConsumer):
    """One socket of a signed-in user. It only ever reads or writes that user's memory."""

    user_id: int | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)  # before accept: the handshake is refused
            return
        self.user_id = user.pk
        await self.channel_layer.group_add(user_group(self.user_id), self.channel_name)
        await self.accept()
        cfg = chat_settings()
        await self.send_json({"type": "ready", "max_message_chars": settings.MEMORYOS["MAX_MESSAGE_CHARS"],
                              "max_frame_bytes": cfg["MAX_FRAME_BYTES"]})

    async def disconnect(self, code: int) -> None:
        # Turns this socket started keep running; their replies are stored when they finish.
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
        sona_id = content.get("sona") or None
        sona_name = await self._sona_name(sona_id)
        if sona_name is None:
            await self.send_error("unknown_sona", "That persona does not exist; choose another one.")
            return
        turn_id = uuid.uuid4().hex
        await broadcast(self.user_id, {"type": "turn.user", "turn_id": turn_id, "text": text,
                                       "sona": sona_name})
        turn_start(user_id=self.user_id, sona_id=sona_id, message=text, turn_id=turn_id)

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
