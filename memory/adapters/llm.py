"""ChatModel adapter for any OpenAI-compatible endpoint, and tolerant structured answers.

`OpenAIChatModel` talks to OpenAI, vLLM, llama.cpp, Ollama and the like through the `openai`
package. Every failure the backend can produce (HTTP errors, timeouts, dropped streams,
bodies that are not JSON) reaches callers as `ModelError`, so services handle one exception.

`complete_json` treats model output as untrusted input (DESIGN.md): parse tolerantly,
validate, retry once with the problem spelled out, then fail loudly naming what was wrong.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memory.adapters.circuit import CircuitBreaker
from memory.engine.ports import ChatMessage, ChatModel, ChatResult, ModelError

if TYPE_CHECKING:
    from openai import OpenAI

T = TypeVar("T")
log = logging.getLogger(__name__)

# openai 3.x refuses to build a client without a key, but local servers (Ollama, llama.cpp,
# vLLM without --api-key) accept any; this placeholder lets a key-less endpoint work.
NO_KEY_PLACEHOLDER = "sk-no-key-required"


def openai_client(*, api_key: str | None, base_url: str | None, timeout: float,
                  max_retries: int) -> OpenAI:
    """One `openai.OpenAI` client; imported lazily so the offline engine never pays for it."""
    from openai import OpenAI

    return OpenAI(
        api_key=api_key or NO_KEY_PLACEHOLDER,
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
    )


def backend_errors() -> tuple[type[BaseException], ...]:
    """What a call through the openai client can raise when the backend misbehaves.

    The client wraps HTTP and transport failures in `openai.OpenAIError`, but a 200 response
    whose body is not JSON escapes as a bare `json.JSONDecodeError` (a ValueError), and a
    JSON body of the wrong shape surfaces as attribute or type errors while reading it.
    """
    from openai import OpenAIError

    return (OpenAIError, ValueError, TypeError, AttributeError, KeyError, IndexError, OSError)


def describe_error(exc: BaseException) -> str:
    """A one-line cause for a ModelError message: class name and the server's words."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True)
class ChatUsage:
    """A snapshot of an adapter's counters, for benchmarks and the inspector."""

    calls: int
    failures: int
    prompt_tokens: int
    completion_tokens: int


class OpenAIChatModel:
    """ChatModel over /v1/chat/completions. Thread-safe: one client, counters under a lock."""

    offline = False

    def __init__(self, *, api_key: str | None, base_url: str | None, model: str,
                 timeout: float = 30.0, max_retries: int = 1, stream_usage: bool = True,
                 first_token_timeout: float | None = None, breaker: CircuitBreaker | None = None,
                 reply_timeout: float | None = None) -> None:
        self.name = model
        self._client = openai_client(api_key=api_key, base_url=base_url, timeout=timeout,
                                     max_retries=max_retries)
        # A stream whose first token has not come by then fails at once (the request may still be
        # waiting for the server's headers: `timeout` per read and its retries could take minutes).
        self.first_token_timeout = first_token_timeout
        # A stream still going this long after it was asked for is cut, however the server stalls
        # after its first token (keep-alives reset every read timeout): a failure, for the breaker.
        self.reply_timeout = reply_timeout
        self.breaker = breaker or CircuitBreaker(name=model)
        # Ask streams for a final usage chunk; a server that rejects `stream_options` can be
        # served with stream_usage=False, at the price of uncounted streamed tokens.
        self._stream_usage = stream_usage
        self._lock = threading.Lock()
        self.calls = 0
        self.failures = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.name!r}, base_url={str(self._client.base_url)!r})"

    # -- ChatModel -------------------------------------------------------------------------

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None,
                 json_mode: bool = False) -> ChatResult:
        request = self._request(messages, max_tokens)
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        self.breaker.before_call()
        self._count_call()
        try:
            response = self._client.chat.completions.create(**request)
            result = self._result_of(response)
        except backend_errors() as exc:
            raise self._failed(f"chat model {self.name!r} failed: {describe_error(exc)}") from exc
        self.breaker.record_success()
        self._count_tokens(result.prompt_tokens, result.completion_tokens)
        return result

    def stream(self, messages: Sequence[ChatMessage], *,
               max_tokens: int | None = None) -> Iterator[str]:
        """Text deltas as they arrive; the request is sent on the first `next()`.

        `max_tokens` is sent to the server and also enforced here, counting a delta as a token:
        a server that ignores it would otherwise stream until the model's context is full.
        """
        request = self._request(messages, max_tokens)
        request["stream"] = True
        if self._stream_usage:
            request["stream_options"] = {"include_usage": True}
        return self._stream(request, max_tokens)

    # -- counters --------------------------------------------------------------------------

    def usage(self) -> ChatUsage:
        with self._lock:
            return ChatUsage(self.calls, self.failures, self.prompt_tokens, self.completion_tokens)

    def reset_usage(self) -> None:
        with self._lock:
            self.calls = self.failures = self.prompt_tokens = self.completion_tokens = 0

    def _count_call(self) -> None:
        with self._lock:
            self.calls += 1

    def _count_failure(self) -> None:
        with self._lock:
            self.failures += 1

    def _failed(self, message: str) -> ModelError:
        """Count a failed call (the breaker too) and give the error to raise."""
        self._count_failure()
        self.breaker.record_failure(message)
        return ModelError(message)

    def _count_tokens(self, prompt: int, completion: int) -> None:
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion

    # -- internals -------------------------------------------------------------------------

    def _request(self, messages: Sequence[ChatMessage], max_tokens: int | None) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        if max_tokens is not None:
            # `max_tokens`, not `max_completion_tokens`: every OpenAI-compatible server knows it.
            request["max_tokens"] = max_tokens
        return request

    def _result_of(self, response: Any) -> ChatResult:
        choices = getattr(response, "choices", None)
        if not choices:
            raise ValueError(f"answer has no choices: {str(response)[:200]!r}")
        text = choices[0].message.content
        if not isinstance(text, str):
            raise ValueError(f"answer has no text content (finish_reason={choices[0].finish_reason!r})")
        usage = getattr(response, "usage", None)
        return ChatResult(
            text=text,
            model=str(getattr(response, "model", None) or self.name),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )

    def _stream(self, request: dict[str, Any], cap: int | None) -> Iterator[str]:
        """Read the stream on a thread of its own, so that waiting for the first token has a
        deadline however the server stalls (before its headers, or sending nothing after them)."""
        self.breaker.before_call()
        self._count_call()
        relay = _StreamRelay()
        threading.Thread(target=self._read_stream, args=(request, cap, relay), daemon=True,
                         name="chat-model-stream").start()
        started = time.monotonic()
        first = None if self.first_token_timeout is None else started + self.first_token_timeout
        last = None if self.reply_timeout is None else started + self.reply_timeout
        delivered = 0
        try:
            while True:
                deadline = min((d for d in (None if delivered else first, last) if d is not None), default=None)
                wait = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    kind, value = relay.queue.get(timeout=wait)
                except queue.Empty:
                    if not delivered and deadline == first:
                        raise self._failed(f"chat model {self.name!r} sent no token within "
                                           f"{self.first_token_timeout:g} s (first-token timeout)") from None
                    raise self._failed(f"chat model {self.name!r} was still replying after {self.reply_timeout:g} s "
                                       f"({delivered} deltas): cut at the reply's time cap") from None
                if kind == "delta":
                    delivered += 1
                    yield value
                elif kind == "error":
                    message, cause = value
                    raise self._failed(f"chat model {self.name!r} {message}") from cause
                else:
                    self.breaker.record_success()
                    return
        finally:
            relay.cancel()  # the caller stopped early or we gave up: the stream is closed

    def _read_stream(self, request: dict[str, Any], cap: int | None, relay: _StreamRelay) -> None:
        """The reader thread: every outcome ends in one "done" or "error" item on the relay."""
        finished = False
        delivered = 0
        try:
            with self._client.chat.completions.create(**request) as chunks:
                relay.response = chunks
                if relay.cancelled.is_set():
                    return
                for chunk in chunks:
                    if relay.cancelled.is_set():
                        return  # leaving the `with` closes the connection
                    self._count_stream_usage(chunk)
                    for choice in chunk.choices or ():
                        delta = choice.delta.content if choice.delta is not None else None
                        if delta and cap is not None and delivered >= cap:
                            log.warning("event=chat_reply_capped model=%s max_tokens=%s by=client", self.name, cap)
                            relay.put("done", None)
                            return
                        if delta:
                            delivered += 1
                            relay.put("delta", delta)
                        if choice.finish_reason == "length":
                            log.warning("event=chat_reply_capped model=%s max_tokens=%s by=server", self.name, cap)
                        finished = finished or bool(choice.finish_reason)
        except Exception as exc:  # backend_errors(), or anything else: the caller must not wait forever
            relay.put("error", (f"stream broke after {delivered} deltas: {describe_error(exc)}", exc))
            return
        if not finished:
            # A server that dies between events can end the body cleanly; without a
            # finish_reason the reply is cut short, and a partial answer must not pass as whole.
            relay.put("error", (f"stream ended after {delivered} deltas without a finish_reason", None))
            return
        relay.put("done", None)

    def _count_stream_usage(self, chunk: Any) -> None:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._count_tokens(int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))


class _StreamRelay:
    """Deltas from a reader thread to the caller, and the caller's word that it stopped listening."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.cancelled = threading.Event()
        self.response: Any = None  # the open stream, once its headers came

    def put(self, kind: str, value: Any) -> None:
        self.queue.put((kind, value))

    def cancel(self) -> None:
        """Stop listening, and close the connection now: a server that sends only keep-alives would
        otherwise hold the reader thread and the connection for as long as it likes."""
        self.cancelled.set()
        response = self.response
        if response is not None:
            try:
                response.close()
            except Exception:  # closing from another thread may race the reader's own close
                log.debug("event=chat_stream_close_failed", exc_info=True)


def reply_bounded(tokens: Iterator[str], *, max_chars: int, max_seconds: float | None, model: ChatModel,
                  clock: Callable[[], float] = time.monotonic) -> Iterator[str]:
    """`tokens` (a model's stream) up to `max_chars` characters in all, the last token cut to fit, and
    a ModelError once `max_seconds` have passed: bounds that hold whatever the model sends and
    whichever ChatModel sends it. A cut for time is recorded as the model's failure on its breaker
    (the OpenAI adapter cuts a stalled stream itself, at its own reply_timeout). The stream is
    closed when this stops early."""
    deadline = None if max_seconds is None else clock() + max_seconds
    size = 0
    try:
        for token in tokens:
            if deadline is not None and clock() > deadline:
                message = (f"chat model {model.name!r} was still replying after {max_seconds:g} s: "
                           "cut at the reply's time cap")
                breaker = getattr(model, "breaker", None)
                if breaker is not None:
                    breaker.record_failure(message)
                raise ModelError(message)
            if size + len(token) >= max_chars:
                log.warning("event=chat_reply_capped model=%s max_chars=%s", model.name, max_chars)
                breaker = getattr(model, "breaker", None)
                if breaker is not None:  # a long reply is the model working: a half-open breaker closes
                    breaker.record_success()
                yield token[:max_chars - size]
                return
            size += len(token)
            yield token
    finally:
        close = getattr(tokens, "close", None)
        if close is not None:
            close()


# -- structured answers --------------------------------------------------------------------

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_CLOSERS = {"{": "}", "[": "]"}
_CLOSER_AHEAD = re.compile(r"\s*[}\]]")
_JSON_HINT = "Answer with a single JSON value and nothing else."


def parse_json_loosely(text: str) -> Any:
    """Parse the JSON a model meant to write: the first value `json_candidates` finds."""
    return json_candidates(text)[0]


def json_candidates(text: str) -> list[Any]:
    """Every JSON value a model's answer plausibly holds, most likely first.

    Tolerates Markdown fences, prose around the value (each top-level {...} or [...] block
    that parses is a candidate) and trailing commas. Raises ValueError saying what is wrong
    when nothing parses.
    """
    fenced = _FENCE.search(text)
    candidate = (fenced.group(1) if fenced else text).strip()
    if not candidate:
        raise ValueError("the answer is empty")
    try:
        return [json.loads(candidate)]
    except ValueError:
        pass
    values: list[Any] = []
    first_error: str | None = None
    for block in _json_blocks(candidate):
        try:
            values.append(json.loads(_drop_trailing_commas(block)))
        except ValueError as exc:
            first_error = first_error or f"invalid JSON ({exc}) in: {_preview(block)}"
    if values:
        return values
    raise ValueError(first_error or f"no JSON object or array in the answer: {_preview(text)}")


def _preview(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


def _json_blocks(text: str) -> Iterator[str]:
    """Top-level {...} / [...] spans in order (prose before the value may hold "[1]").

    The search resumes after each span, never inside it, so it stays linear in the text.
    """
    index = 0
    while (start := _next_opener(text, index)) is not None:
        block = _balanced_block(text, start)
        yield block
        index = start + len(block)


def _next_opener(text: str, index: int) -> int | None:
    positions = [p for p in (text.find("{", index), text.find("[", index)) if p >= 0]
    return min(positions) if positions else None


def _balanced_block(text: str, start: int) -> str:
    """The balanced span opening at `start`, skipping brackets inside strings."""
    stack: list[str] = []
    for index, ch in _outside_strings(text, start):
        if ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return text[start:index + 1]
    # Unbalanced (the model stopped early): hand back the rest so json names the error.
    return text[start:]


def _drop_trailing_commas(text: str) -> str:
    """Remove commas that directly precede } or ], outside strings."""
    dropped = {
        index for index, ch in _outside_strings(text)
        if ch == "," and _CLOSER_AHEAD.match(text, index + 1)
    }
    return "".join(ch for index, ch in enumerate(text) if index not in dropped)


def _outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(index, char) for every character not inside a JSON string literal."""
    in_string = escaped = False
    for index in range(start, len(text)):
        ch = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            yield index, ch


def _with_json_hint(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """OpenAI's JSON mode rejects prompts that never say "JSON"; add a hint only then.

    The hint joins the first system message (or becomes one at the front): strict chat
    templates of local models reject a system message anywhere else.
    """
    conversation = list(messages)
    if any("json" in m.content.lower() for m in conversation):
        return conversation
    if conversation and conversation[0].role == "system":
        first = conversation[0]
        return [ChatMessage("system", f"{first.content}\n\n{_JSON_HINT}"), *conversation[1:]]
    return [ChatMessage("system", _JSON_HINT), *conversation]


def _correction(problem: str) -> ChatMessage:
    return ChatMessage("user", f"Your previous answer could not be used: {problem}. "
                               "Reply again with only valid JSON in the requested shape.")


def complete_json(model: ChatModel, messages: Sequence[ChatMessage], *,
                  validate: Callable[[Any], T], max_tokens: int | None = None) -> T:
    """Ask for JSON, parse it tolerantly, validate it; retry once with the problem stated.

    `validate` turns the parsed value into the caller's type and raises ValueError (or
    KeyError/TypeError from a sloppy lookup) when the shape is wrong. Transport failures
    propagate as ModelError at once: the client has already retried those.
    """
    conversation = _with_json_hint(messages)
    problems: list[str] = []
    for _attempt in range(2):
        answer = model.complete(conversation, max_tokens=max_tokens, json_mode=True)
        try:
            return _first_valid(json_candidates(answer.text), validate)
        except ValueError as exc:
            problems.append(str(exc))
            conversation += [ChatMessage("assistant", answer.text), _correction(str(exc))]
    raise ModelError(f"chat model {model.name!r} gave no usable JSON in 2 attempts: "
                     f"first: {problems[0]}; then: {problems[1]}")


def _first_valid(values: list[Any], validate: Callable[[Any], T]) -> T:
    """The first candidate `validate` accepts; otherwise a ValueError with its first complaint."""
    complaints: list[str] = []
    for value in values:
        try:
            return validate(value)
        except (ValueError, KeyError, TypeError) as exc:
            complaints.append(str(exc) if isinstance(exc, ValueError) else describe_error(exc))
    raise ValueError(f"the JSON has the wrong shape: {complaints[0]}")
