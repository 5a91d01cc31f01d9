"""An OpenAI-compatible endpoint with memory: `POST /v1/chat/completions`, `GET /v1/models` and
`GET /v1/models/{id}`, so that any program that speaks OpenAI's chat API gets this memory by
changing its base URL.

- The API key is the person's API token (made and revoked on /settings/tokens/, the REST API's).
- `model` names one of the person's sonas, or the configured model (the LLM's name, or
  "offline-engine" without one), which then answers as the default sona; `/v1/models` lists both.
- The last message, a user's, is the turn. It runs exactly as a message in the browser chat does
  (memory/runtime/chat.py): checked, stored before any model is called, recalled against,
  answered by the configured LLM or the offline engine with what was recalled in the prompt, the
  reply stored with its trace and the same work after it, in turn with the person's other
  messages, under the chat's rate limit, breaker and reply workers; every open chat tab shows it.
  The earlier messages are the client's context: they go into the prompt and are stored only when
  MEMORYOS_OPENAI_STORE_CONTEXT is on (memory/services/context_pages.py).
- `stream: true` answers in OpenAI's server-sent events (`chat.completion.chunk` objects, then
  `data: [DONE]`); `stream_options.include_usage` adds the usage chunk. Usage counts tokens as
  the prompt's budget does, about four characters a token.
- Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, and status: 400,
  401, 404, 405, 413, 429 (with Retry-After), 500. Parameters that change nothing here
  (temperature, tools, seed, ...) are accepted and ignored, as far as OpenAI would accept them.

It is mounted before Django in the ASGI app (memoryos_site/asgi.py), as /mcp is: a turn waits on
the event loop, not on the one thread Django's synchronous middleware shares.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from memory.engine.ports import ChatMessage
from memory.engine.retrieval import estimate_tokens
from memory.runtime.chat import ChatTurn, chat_open, chat_turn_accept
from memory.runtime.connections import connections_kept
from memory.selectors.sonas import sona_list, sona_named
from memory.services.common import MemoryInputError, texts_check
from memory.services.context_pages import context_pages_store
from memory.services.tokens import token_authenticate
from memory.services.turns import reply_model_name
from memory.services.users import sona_get_or_create
from memory.web.consumers import broadcast, turn_start
from memory.web.rate_limit import rate_limit_wait

log = logging.getLogger(__name__)

PREFIX = "/v1"
Send = Callable[[dict[str, Any]], Awaitable[None]]
CONTEXT_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
JSON_HEADERS = [(b"content-type", b"application/json")]
SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
               (b"x-accel-buffering", b"no")]


class OpenAIError(Exception):
    """An answer in OpenAI's error shape with its HTTP status."""

    TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
             405: "invalid_request_error", 413: "invalid_request_error", 429: "requests", 500: "server_error"}

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param
        self.headers = headers or []

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.TYPES.get(self.status, "invalid_request_error"),
                          "param": self.param, "code": self.code}}


def configured_model() -> str:
    """The model a request may name to mean "the default sona": the LLM's, or the offline engine."""
    return reply_model_name()


# --- the request --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CompletionRequest:
    """A chat completion request after the checks: the turn's message and what came before it."""

    model: str
    message: str
    context: tuple[ChatMessage, ...]
    pairs: tuple[tuple[str, str], ...]  # the earlier (user message, assistant answer) exchanges
    stream: bool
    include_usage: bool


def _text_of(content: object, *, where: str) -> str:
    """A message's text: a string, or the text parts of a list of parts (images and other parts are
    not read here); None (an assistant message that only called tools) is no text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise OpenAIError(400, f"{where}: each content part is an object with a 'type'.", param="messages")
            if part["type"] == "text":
                if not isinstance(part.get("text"), str):
                    raise OpenAIError(400, f"{where}: a text part's 'text' must be a string.", param="messages")
                texts.append(part["text"])
        return "\n".join(texts)
    raise OpenAIError(400, f"{where}: 'content' must be a string or a list of content parts.", param="messages")


def _number(body: dict, name: str, low: float, high: float, *, integer: bool = False) -> None:
    """A parameter OpenAI would check and this endpoint ignores: refused where OpenAI refuses it."""
    value = body.get(name)
    if value is None:
        return
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise OpenAIError(400, f"'{name}' must be {kind} from {low:g} to {high:g}; got {value!r}.", param=name)


def _messages(raw: object) -> tuple[str, tuple[ChatMessage, ...], tuple[tuple[str, str], ...]]:
    limit = settings.MEMORYOS_OPENAI["MAX_MESSAGES"]
    if not isinstance(raw, list) or not raw:
        raise OpenAIError(400, "'messages' must be a non-empty list of messages.", param="messages")
    if len(raw) > limit:
        raise OpenAIError(400, f"At most {limit} messages; got {len(raw)}.", param="messages")
    parsed: list[tuple[str, str]] = []
    for number, message in enumerate(raw):
        where = f"messages[{number}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise OpenAIError(400, f"{where} must be an object with a 'role'.", param="messages")
        parsed.append((message["role"], _text_of(message.get("content"), where=where)))
    role, last = parsed[-1]
    if role != "user":
        raise OpenAIError(400, f"The last message must be the user's (got role {role!r}): it is the turn answered.",
                          param="messages")
    if not last.strip():
        raise OpenAIError(400, "The last user message has no text.", param="messages")
    earlier = parsed[:-1]
    context = tuple(ChatMessage(role=CONTEXT_ROLES[role], content=text) for role, text in earlier
                    if role in CONTEXT_ROLES and text.strip())  # tool results and empty messages: not prompt text
    pairs = []
    for index, (role, text) in enumerate(earlier):
        if role == "user" and text.strip():
            answer = earlier[index + 1][1] if index + 1 < len(earlier) and earlier[index + 1][0] == "assistant" else ""
            pairs.append((text, answer))
    return last, context, tuple(pairs)


def completion_request_parse(body: object) -> CompletionRequest:
    """The checks OpenAI makes on what this endpoint reads, and on the few others it would refuse;
    the rest of the body is accepted and ignored."""
    if not isinstance(body, dict):
        raise OpenAIError(400, "The request body must be a JSON object.")
    try:  # NUL and lone surrogates, refused as every way in refuses them (the prompt's context included)
        texts_check(body, field="body")
    except MemoryInputError as error:
        raise OpenAIError(400, str(error), param=getattr(error, "field", None)) from None
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise OpenAIError(400, "'model' is required: the name of one of your sonas (GET /v1/models lists them).",
                          param="model")
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise OpenAIError(400, "Only one choice is generated here: 'n' must be 1.", param="n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool | None):
        raise OpenAIError(400, "'stream' must be true or false.", param="stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise OpenAIError(400, "'stream_options' must be an object.", param="stream_options")
    _number(body, "temperature", 0, 2)
    _number(body, "top_p", 0, 1)
    _number(body, "presence_penalty", -2, 2)
    _number(body, "frequency_penalty", -2, 2)
    _number(body, "max_tokens", 1, 2**31, integer=True)
    _number(body, "max_completion_tokens", 1, 2**31, integer=True)
    message, context, pairs = _messages(body.get("messages"))
    return CompletionRequest(model=model.strip(), message=message, context=context, pairs=pairs,
                             stream=bool(stream), include_usage=bool(options.get("include_usage")))


# --- the person and their sonas -------------------------------------------------------------------

@database_sync_to_async
@connections_kept
def _token_user(text: str):
    found = token_authenticate(text=text) if text else None
    return found.user if found is not None else None


def _sona_for_model(user, model: str):
    """The sona `model` names (None: the default sona, for the configured model); 404 otherwise."""
    found = sona_named(user=user, name=model)
    if found is not None:
        return found
    if model == configured_model():
        return None
    raise OpenAIError(404, f"The model {model!r} does not exist: name one of your sonas or {configured_model()!r} "
                      "(GET /v1/models lists them).", code="model_not_found", param="model")


def _authorized_turn_now(token: str, request: CompletionRequest | None) -> tuple[Any, ChatTurn | None]:
    """The token's person and, for a request that parsed, its turn accepted, in one call.

    On a thread of the loop's pool, not on the one the websocket's checks share: a token's first
    use in a minute writes its last_used_at, and on SQLite that write waits for the turns' writes;
    every other request and socket would wait behind it."""
    found = token_authenticate(text=token) if token else None
    if found is None:
        raise _unauthorized()
    return found.user, (_accept(found.user, request) if request is not None else None)


_authorized_turn = database_sync_to_async(connections_kept(_authorized_turn_now), thread_sensitive=False)


def _unauthorized() -> OpenAIError:
    return OpenAIError(401, "Incorrect API key: use one of your MemoryOS API tokens (made on /settings/tokens/) "
                       "as the key.", code="invalid_api_key")


def _accept(user, request: CompletionRequest) -> ChatTurn:
    sona = _sona_for_model(user, request.model)
    try:
        turn = chat_turn_accept(user_id=user.pk, message=request.message, sona=str(sona.id) if sona else None)
    except MemoryInputError as error:
        raise OpenAIError(400, str(error), param="messages") from None
    return dataclasses.replace(turn, context=request.context)


def _store_context(user, model: str, pairs: tuple[tuple[str, str], ...]) -> int:
    sona = _sona_for_model(user, model) or sona_get_or_create(user=user)
    try:
        return context_pages_store(user=user, sona=sona, pairs=pairs)
    except MemoryInputError as error:
        raise OpenAIError(400, str(error), param="messages") from None


def _model_out(model_id: str, created, owner: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": int(created.timestamp()) if created else 0,
            "owned_by": owner}


@database_sync_to_async
@connections_kept
def _models(user) -> list[dict[str, Any]]:
    sonas = sona_list(user=user)
    listed = [_model_out(sona.name, sona.created_at, user.get_username()) for sona in sonas]
    if not any(sona.name.lower() == configured_model().lower() for sona in sonas):
        listed.append(_model_out(configured_model(), None, "memoryos"))
    return listed


# --- answers ----------------------------------------------------------------------------------

def _usage(prompt_tokens: int, reply: str) -> dict[str, int]:
    completion = estimate_tokens(reply)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion}


def _memory_out(done: dict[str, Any]) -> dict[str, Any]:
    """What this endpoint adds to OpenAI's shape: where the turn is stored and how it was answered."""
    return {"page_id": done["page_id"], "sona": done["sona"], "reply_model": done["model"],
            "offline": done["offline"], "fallback": done["fallback"], "recalled": done["recalled"],
            "recall_url": done["recall_url"]}


def _turn_error(frame: dict[str, Any]) -> OpenAIError:
    return OpenAIError(500, f"{frame['error']} The message is stored.", code="reply_failed")


async def _json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [*JSON_HEADERS, (b"content-length", str(len(data)).encode()), *headers]})
    await send({"type": "http.response.body", "body": data})


async def _read_body(receive) -> bytes:
    limit = settings.MEMORYOS_OPENAI["MAX_BODY_BYTES"]
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise OpenAIError(400, "The client went away before sending the whole request.")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise OpenAIError(413, f"The request body is over {limit} bytes.", code="request_too_large")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _bearer(headers: dict[str, str]) -> str:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class OpenAIApp:
    """The /v1 routes as an ASGI application (the host checked as Django checks it)."""

    async def __call__(self, scope, receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            domain, _ = split_domain_port(headers.get("host", ""))
            if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
                raise OpenAIError(400, "This host is not among ALLOWED_HOSTS.", code="bad_host")
            await self._route(scope, receive, send, headers)
        except OpenAIError as error:
            extra = [(b"www-authenticate", b'Bearer realm="memoryos"')] if error.status == 401 else []
            await _json(send, error.status, error.body(), [*error.headers, *extra])
        except Exception:
            log.exception("event=openai_request_failed path=%s", scope.get("path"))
            await _json(send, 500, OpenAIError(500, "The server failed to answer; try again.").body())

    async def _route(self, scope, receive, send: Send, headers: dict[str, str]) -> None:
        path, method = scope["path"].rstrip("/"), scope["method"]
        routes = {f"{PREFIX}/chat/completions": "POST", f"{PREFIX}/models": "GET"}
        wanted = routes.get(path, "GET" if path.startswith(f"{PREFIX}/models/") else None)
        if wanted is None:
            raise OpenAIError(404, f"Unknown URL {scope['path']}: this server answers /v1/chat/completions and "
                              "/v1/models.", code="unknown_url")
        if method != wanted:
            raise OpenAIError(405, f"{scope['path']} answers {wanted}, not {method}.", code="method_not_allowed",
                              headers=[(b"allow", wanted.encode())])
        if path == f"{PREFIX}/chat/completions":
            await self._complete(_bearer(headers), await _read_body(receive), send)
            return
        user = await _token_user(_bearer(headers))
        if user is None:
            raise _unauthorized()
        await self._list(user, path, send)

    async def _list(self, user, path: str, send: Send) -> None:
        await chat_open(user_id=user.pk)  # a new person's default sona, as the chat page makes it
        models = await _models(user)
        if path == f"{PREFIX}/models":
            return await _json(send, 200, {"object": "list", "data": models})
        wanted = path[len(f"{PREFIX}/models/"):]
        found = next((m for m in models if m["id"].lower() == wanted.lower()), None)
        if found is None:
            raise OpenAIError(404, f"The model {wanted!r} does not exist.", code="model_not_found", param="model")
        await _json(send, 200, found)

    async def _complete(self, token: str, body: bytes, send: Send) -> None:
        request, refused = None, None
        try:
            request = completion_request_parse(_json_body(body))
        except OpenAIError as error:
            refused = error  # told after the key is checked, as OpenAI answers 401 first
        user, turn = await _authorized_turn(token, request)
        if refused is not None:
            raise refused
        wait = await rate_limit_wait(user.pk)
        if wait:
            raise OpenAIError(429, f"You are sending messages too fast. Please wait {max(1, round(wait))} s.",
                              code="rate_limit_exceeded", headers=[(b"retry-after", str(math.ceil(wait)).encode())])
        if request.pairs and settings.MEMORYOS_OPENAI["STORE_CONTEXT"]:
            await database_sync_to_async(_store_context, thread_sensitive=False)(user, request.model, request.pairs)
        frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        await broadcast(user.pk, turn.user_frame())
        turn_start(turn, also=frames.put_nowait)  # runs to its end even if this client goes away
        ident, created = f"chatcmpl-{turn.turn_id}", int(time.time())
        if request.stream:
            await _stream(send, frames, request, ident, created)
        else:
            await _whole(send, frames, request, ident, created)


def _json_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise OpenAIError(400, "The request body is not valid JSON.") from None


async def _finished(frames: asyncio.Queue) -> dict[str, Any]:
    while True:
        frame = await frames.get()
        if frame["type"] in ("turn.done", "turn.error"):
            return frame


async def _whole(send: Send, frames: asyncio.Queue, request: CompletionRequest, ident: str, created: int) -> None:
    done = await _finished(frames)
    if done["type"] == "turn.error":
        raise _turn_error(done)
    await _json(send, 200, {
        "id": ident, "object": "chat.completion", "created": created, "model": request.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": done["reply"], "refusal": None},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": _usage(done["prompt_tokens"], done["reply"]), "system_fingerprint": None,
        "memoryos": _memory_out(done),
    })


async def _stream(send: Send, frames: asyncio.Queue, request: CompletionRequest, ident: str, created: int) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra) -> dict[str, Any]:
        return {"id": ident, "object": "chat.completion.chunk", "created": created, "model": request.model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}

    async def event(data: dict[str, Any] | str) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        await send({"type": "http.response.body", "body": f"data: {text}\n\n".encode(), "more_body": True})

    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    try:
        await _events(frames, chunk, event, request, ident, created)
        await send({"type": "http.response.body", "body": b""})
    except OSError:  # the client went away mid-stream; the turn runs on and its reply is stored
        log.info("event=openai_stream_client_gone turn=%s", ident)


async def _events(frames: asyncio.Queue, chunk, event, request: CompletionRequest, ident: str, created: int) -> None:
    await event(chunk({"role": "assistant", "content": ""}))
    while True:
        frame = await frames.get()
        if frame["type"] == "turn.token":
            await event(chunk({"content": frame["text"]}))
        elif frame["type"] == "turn.error":
            await event(_turn_error(frame).body())
            break
        elif frame["type"] == "turn.done":
            await event(chunk({}, "stop", memoryos=_memory_out(frame)))
            if request.include_usage:
                usage = _usage(frame["prompt_tokens"], frame["reply"])
                await event({"id": ident, "object": "chat.completion.chunk", "created": created,
                             "model": request.model, "system_fingerprint": None, "choices": [], "usage": usage})
            break
    await event("[DONE]")


def is_openai_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")
