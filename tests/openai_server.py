"""A real OpenAI-compatible HTTP server for tests: the adapters talk to it over a socket.

It speaks POST /v1/chat/completions (plain JSON, or server-sent events with `stream: true`)
and POST /v1/embeddings, records every request, answers scripted replies in order, and can
be told to misbehave the way real endpoints do (HTTP 500, hanging, garbage, a dropped stream).

    with run_openai_server() as server:
        server.reply('{"keywords": ["dog"]}')
        server.fail("http_500", times=2)
        client = OpenAI(base_url=server.base_url, api_key=server.api_key)

Tests get one per test through the `openai_server` fixture. It is for the tests of the OpenAI
adapters themselves (memory/adapters/llm.py, the OpenAI embedder) and of what a turn does when the
endpoint misbehaves, and for child processes; a test of what the services ask a model and do with
its answers uses tests/fakes.py's FakeChatModel (the `chat_model` fixture) instead.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import struct
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

# http_500: an error body with status 500. sleep: hang `sleep_s` before answering.
# hang: accept the request and never answer (until the server stops or `release_hangs()`).
# garbage: status 200 with a body that is not JSON. drop_stream: send part of an SSE stream,
# then cut the connection in the middle of a chunk. truncate_stream: end the SSE stream
# cleanly but before the model finished (no finish_reason, no [DONE]). never_stop: a reply that
# repeats itself until the request's max_tokens (when `honour_max_tokens`) or the model's
# context (`context_tokens`) is full, then finishes with finish_reason "length".
# stall_after_first: a stream that sends one token, then only SSE keep-alive comments every
# `keepalive_s` (no read ever times out) until the client hangs up or the server stops.
# huge_tokens: a stream whose every delta is `huge_token_chars` characters long, as many as the
# request's max_tokens (4,000 × 1,024: a 4 MB reply).
Fault = Literal["http_500", "sleep", "hang", "garbage", "drop_stream", "truncate_stream", "never_stop",
                "stall_after_first", "huge_tokens"]

DEFAULT_REPLY = "Hello from the test server."
API_KEY = "sk-test-key"


def count_tokens(text: str) -> int:
    """The server's token count: whitespace-separated words, so tests can predict usage exactly."""
    return len(text.split())


def fake_vector(text: str, dimension: int) -> list[float]:
    """A deterministic, non-normalised vector derived from the text's SHA-256."""
    values: list[float] = []
    counter = 0
    while len(values) < dimension:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        # Each pair of bytes becomes a value in [-1, 1]; +0.5 keeps every value non-zero.
        for (word,) in struct.iter_unpack(">H", digest):
            values.append((word + 0.5) / 32768.0 - 1.0)
        counter += 1
    return values[:dimension]


def stream_pieces(text: str) -> list[str]:
    """How the server splits a reply into stream deltas: each word with its trailing space."""
    return re.findall(r"\s*\S+\s*", text) or [text]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or the raw text when it was not JSON

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class _FaultPlan:
    fault: Fault
    remaining: int | None  # None: every request from now on


@dataclass
class OpenAIServer:
    """State shared by the handler threads; tests script it and read `requests` back."""

    embedding_dimension: int = 8
    sleep_s: float = 5.0
    reverse_embedding_order: bool = False
    honour_max_tokens: bool = True  # never_stop: as real servers do; False: a runaway that ignores it
    context_tokens: int = 2000  # never_stop: where a runaway reply ends
    keepalive_s: float = 0.2  # stall_after_first: between keep-alive comments
    huge_token_chars: int = 4000  # huge_tokens: each delta's length
    open_streams: int = 0  # streams being sent now: a client that gave up has closed its own
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    _replies: deque[str] = field(default_factory=deque)
    _faults: deque[_FaultPlan] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _released: threading.Event = field(default_factory=threading.Event)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def api_key(self) -> str:
        return API_KEY

    # -- scripting -------------------------------------------------------------------------

    def serve_chat(self, settings, **overrides: Any) -> None:
        """Make this server the project's chat model: LLM_ENABLED on, the OpenAI adapter pointed here
        (a key it accepts), then `overrides` of other settings; the adapter is built anew."""
        from memory.adapters import configured

        settings.LLM_ENABLED = True
        settings.OPENAI_API_KEY = "sk-test"
        settings.OPENAI_BASE_URL = self.base_url
        for name, value in overrides.items():
            setattr(settings, name, value)
        configured.chat_model.cache_clear()

    def reply(self, *texts: str) -> None:
        """Queue reply texts; each chat request takes the next one, then DEFAULT_REPLY."""
        with self._lock:
            self._replies.extend(texts)

    def fail(self, fault: Fault, *, times: int | None = 1) -> None:
        """Misbehave on the next `times` requests (None: on every request from now on)."""
        with self._lock:
            self._faults.append(_FaultPlan(fault, times))

    def release_hangs(self) -> None:
        """Requests held by the "hang" fault end now, unanswered (the connection is closed)."""
        self._released.set()

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/chat/completions"]

    def embedding_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == "/v1/embeddings"]

    # -- used by the handler ---------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_fault(self) -> Fault | None:
        with self._lock:
            if not self._faults:
                return None
            plan = self._faults[0]
            if plan.remaining is not None:
                plan.remaining -= 1
                if plan.remaining <= 0:
                    self._faults.popleft()
            return plan.fault

    def _next_reply(self) -> str:
        with self._lock:
            return self._replies.popleft() if self._replies else DEFAULT_REPLY


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so streams can use chunked transfer encoding, as real servers do; that is
    # what makes a connection dropped mid-stream a transport error on the client side.
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def do_POST(self) -> None:
        state = self.server.state
        body = self._read_body()
        state._record(RecordedRequest(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        ))
        routes = {"/v1/chat/completions": self._chat, "/v1/embeddings": self._embeddings}
        route = routes.get(self.path)
        if route is None:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        if not isinstance(body, dict):
            self._send_json(400, {"error": {"message": "body is not a JSON object", "type": "invalid"}})
            return
        fault = state._next_fault()
        if fault in ("sleep", "hang"):
            # Wake early when the server stops so shutdown never waits on a hanging handler.
            if fault == "hang":
                while not (state._stopping.is_set() or state._released.wait(0.05)):
                    pass
                self.close_connection = True
                return
            state._stopping.wait(state.sleep_s)
            fault = None
        if fault == "http_500":
            self._send_json(500, {"error": {"message": "scripted failure", "type": "server_error"}})
        elif fault == "garbage":
            self._send_raw(200, b"<html>502 Bad Gateway</html> {not json", "application/json")
        else:
            route(body, fault)

    # -- routes ----------------------------------------------------------------------------

    def _chat(self, body: dict[str, Any], fault: Fault | None) -> None:
        model = str(body.get("model", ""))
        state = self.server.state
        text = state._next_reply()
        if fault == "never_stop":
            limit = int(body.get("max_tokens") or 0) if state.honour_max_tokens else 0
            words = (text.split() or ["more"]) * (state.context_tokens // max(1, count_tokens(text)) + 1)
            text = " ".join(words[:limit or state.context_tokens])
        prompt_tokens = sum(count_tokens(str(m.get("content", ""))) for m in body.get("messages", []))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": count_tokens(text),
            "total_tokens": prompt_tokens + count_tokens(text),
        }
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream_chat(model, text, usage if include_usage else None, fault)
            return
        self._send_json(200, {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }],
            "usage": usage,
        })

    def _stream_chat(self, model: str, text: str, usage: dict[str, int] | None,
                     fault: Fault | None) -> None:
        def chunk(delta: dict[str, str], finish: str | None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pieces = stream_pieces(text)
        self._send_event(chunk({"role": "assistant", "content": ""}, None))
        if fault in ("stall_after_first", "huge_tokens"):
            self._misbehaving_stream(chunk, fault)
            return
        for index, piece in enumerate(pieces):
            if fault == "drop_stream" and index == len(pieces) // 2:
                self._drop_connection()
                return
            self._send_event(chunk({"content": piece}, None))
        if fault == "truncate_stream":
            self._end_chunks()
            return
        self._send_event(chunk({}, "length" if fault == "never_stop" else "stop"))
        if usage is not None:
            self._send_event({
                "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
                "model": model, "choices": [], "usage": usage,
            })
        self._send_chunk(b"data: [DONE]\n\n")
        self._end_chunks()

    def _misbehaving_stream(self, chunk, fault: Fault) -> None:
        state = self.server.state
        with state._lock:
            state.open_streams += 1
        try:
            if fault == "stall_after_first":
                self._send_event(chunk({"content": "Thinking"}, None))
                while not state._stopping.wait(state.keepalive_s):
                    self._send_chunk(b": keep-alive\n\n")
                return
            body = state.chat_requests()[-1].body
            for index in range(int(body.get("max_tokens") or state.context_tokens)):
                if state._stopping.is_set():
                    return
                self._send_event(chunk({"content": chr(ord("a") + index % 26) * state.huge_token_chars}, None))
            self._send_event(chunk({}, "length"))
            self._send_chunk(b"data: [DONE]\n\n")
            self._end_chunks()
        except OSError:  # the client hung up
            self.close_connection = True
        finally:
            with state._lock:
                state.open_streams -= 1

    def _embeddings(self, body: dict[str, Any], fault: Fault | None) -> None:
        state = self.server.state
        raw_input = body.get("input")
        inputs = [raw_input] if isinstance(raw_input, str) else list(raw_input or [])
        dimension = int(body.get("dimensions") or state.embedding_dimension)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(inputs):
            vector = fake_vector(str(text), dimension)
            embedding: Any = (
                base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode() if as_base64 else vector
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        if state.reverse_embedding_order:
            data.reverse()
        tokens = sum(count_tokens(str(t)) for t in inputs)
        self._send_json(200, {
            "object": "list",
            "data": data,
            "model": str(body.get("model", "")),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })

    # -- wire helpers ----------------------------------------------------------------------

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace")
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json")

    def _send_raw(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_event(self, payload: dict[str, Any]) -> None:
        self._send_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop_connection(self) -> None:
        # Announce a chunk and send only half of it, then close: the client sees an
        # incomplete chunked body, exactly like a server process dying mid-stream.
        data = b'data: {"choices": [{"index": 0, "delta": {"content": "lost"}}]}\n\n'
        self.wfile.write(f"{len(data):x}\r\n".encode() + data[: len(data) // 2])
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, state: OpenAIServer) -> None:
        self.state = state
        super().__init__((state.host, state.port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout test) makes our late write fail; that is expected.
        pass


@contextmanager
def run_openai_server(*, embedding_dimension: int = 8, sleep_s: float = 5.0) -> Iterator[OpenAIServer]:
    """Start a server on 127.0.0.1 with a free port in a background thread; stop it on exit."""
    state = OpenAIServer(embedding_dimension=embedding_dimension, sleep_s=sleep_s)
    httpd = _Server(state)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              name="openai-test-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A fresh OpenAI-compatible server per test (starting one takes about a millisecond)."""
    with run_openai_server() as server:
        yield server
