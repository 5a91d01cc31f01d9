"""The browser chat: one user's turns over a websocket, streamed token by token to all their tabs.

Every socket of a user joins the group `chat.user.<id>`; the user's message, the reply's tokens
and the finished reply are sent to that group, so every open tab (in this process or, with the
Redis channel layer, in any other) shows the same turns. Only the process that received a
message runs its turn, so each turn is stored exactly once.

The socket parses frames and sends what the chat's runtime (memory/runtime/chat.py) yields: it
checks the message and runs the turn on worker threads. The turn belongs to no socket: closing
the tab leaves it running, and its reply is stored when it finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from memory.adapters.configured import adapters_state, adapters_wait_ready
from memory.runtime.background import in_background
from memory.runtime.chat import ChatTurn, UnknownSona, chat_open, chat_turn_accept, chat_turn_frames
from memory.runtime.connections import connections_kept
from memory.services.common import MemoryInputError, TextRefused, texts_check
from memory.services.turn_input import turn_input_limits
from memory.web.rate_limit import rate_limit_wait

log = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
# A message frame is {"type", "text", "files": [...], "sona"}: two levels.
FRAME_MAX_DEPTH = 4


def user_group(user_id: int) -> str:
    return f"chat.user.{user_id}"


def chat_settings() -> dict[str, Any]:
    return settings.MEMORYOS_CHAT


# --- turns -----------------------------------------------------------------------------------

def turn_start(turn: ChatTurn, *, also: Callable[[dict[str, Any]], None] | None = None) -> asyncio.Task:
    """Run a turn in the background, sending its frames to the user's tabs (and to `also`, as they
    are sent: the OpenAI-compatible endpoint's response); it outlives the socket or request that
    asked for it."""
    return in_background(_turn_send(turn, also))


async def _turn_send(turn: ChatTurn, also: Callable[[dict[str, Any]], None] | None = None) -> None:
    async with contextlib.aclosing(chat_turn_frames(turn)) as frames:  # a cancelled turn frees the user's lock
        async for frame in frames:
            if also is not None:
                also(frame)
            await broadcast(turn.user_id, frame)


async def broadcast(user_id: int, frame: dict[str, Any]) -> None:
    """Send a frame to every socket of the user; a failing layer is logged, never raised."""
    try:
        await get_channel_layer().group_send(user_group(user_id), {"type": "chat.frame", "frame": frame})
    except Exception:  # Redis down: the turn must still finish and be stored
        log.exception("event=chat_broadcast_failed user=%s frame=%s", user_id, frame.get("type"))


# --- the consumer ----------------------------------------------------------------------------


def _message_text(text_data: str | None) -> str:
    """The words of a message frame (for a refusal to give back), "" for anything else."""
    if not text_data or len(text_data) > chat_settings()["MAX_FRAME_BYTES"]:
        return ""
    try:
        content = json.loads(text_data)
    except ValueError:
        return ""
    text = content.get("text") if isinstance(content, dict) and content.get("type") == "message" else None
    return text if isinstance(text, str) else ""

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
        await self.send_json({"type": "ready", "max_message_chars": turn_input_limits()["max_message_chars"],
                              "max_frame_bytes": cfg["MAX_FRAME_BYTES"], "models": models})
        if models == "loading":
            self.models_waiter = asyncio.create_task(self._models_ready())
        in_background(chat_open(user_id=self.user_id))  # while the user writes their first message

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
            # The refused message's words go back with the error, so that the page gives each one
            # back to its sender, however many a burst refused.
            refused = _message_text(text_data)
            await self.send_error("rate_limited", f"You are sending messages too fast. Please wait "
                                  f"{max(1, round(wait))} s before sending another.", retry_after=wait,
                                  **({"text": refused} if refused else {}))
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
        except RecursionError:  # json's parser recurses once per level: thousands of [ or {
            await self.send_error("bad_json", f"The frame nests its JSON deeper than the parser follows "
                                  f"(at most {FRAME_MAX_DEPTH} levels are needed).")
            return None
        if not isinstance(content, dict):
            await self.send_error("bad_frame", 'A frame must be a JSON object such as {"type": "message"}.')
            return None
        try:
            texts_check(content, field="")  # as every way in checks text (memory/services/common.py)
        except TextRefused as exc:
            await self.send_error("invalid", str(exc), field=exc.field)
            return None
        return content

    async def receive_json(self, content: dict, **kwargs) -> None:
        if content.get("type") == "message":
            await self._message(content)
        else:
            await self.send_error("unknown_type", f"Unknown frame type {str(content.get('type'))[:40]!r}.")

    async def _message(self, content: dict) -> None:
        try:
            turn = await self._accept(content)
        except UnknownSona as exc:
            await self.send_error("unknown_sona", str(exc))
            return
        except MemoryInputError as exc:
            await self.send_error("invalid", str(exc))
            return
        if turn is None:
            await self.send_error("signed_out", "You have signed out; reload the page to sign in again.")
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await broadcast(self.user_id, turn.user_frame())
        turn_start(turn)

    @database_sync_to_async
    @connections_kept
    def _accept(self, content: dict) -> ChatTurn | None:
        """The message checked (chat_turn_accept), or None when the user has signed out: the socket
        was authenticated when it opened, and signing out elsewhere ends its rights. One call on
        the thread every socket's database calls share, not one for each; that thread keeps its
        connection."""
        session = self.scope.get("session")
        key = getattr(session, "session_key", None)
        if not key or not session.exists(key):
            return None
        return chat_turn_accept(user_id=self.user_id, message=content.get("text"), files=content.get("files"),
                                sona=content.get("sona"))

    async def dispatch(self, message: dict) -> None:
        # Channels closes the old database connections of the thread every socket shares before
        # each handler: a hop to that thread and back. A turn's frames (every token batch, to
        # every tab) need no database; under a burst those hops queued the messages' checks
        # (_accept, on that thread) behind them.
        if message.get("type") == "chat.frame":
            await self.chat_frame(message)
        else:
            await super().dispatch(message)

    async def chat_frame(self, event: dict) -> None:
        """A frame broadcast to the user's group."""
        await self.send_json(event["frame"])

    async def send_error(self, code: str, message: str, **extra) -> None:
        await self.send_json({"type": "error", "code": code, "error": message, **extra})
