"""The OpenAI-compatible adapters against a real HTTP server on 127.0.0.1 (no Django needed)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memory.adapters.circuit import CircuitBreaker, ModelCircuitOpen
from memory.adapters.embeddings import OpenAIEmbedder, build_embedder, normalise
from memory.adapters.llm import (
    NO_KEY_PLACEHOLDER,
    ChatUsage,
    OpenAIChatModel,
    complete_json,
    json_candidates,
    parse_json_loosely,
    reply_bounded,
)
from memory.engine.ports import ChatMessage, ChatModel, ChatResult, Embedder, ModelError
from tests.openai_server import API_KEY, OpenAIServer, fake_vector, run_openai_server


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    # The same server the shared `openai_server` fixture yields, under a local name
    # (importing the fixture itself into a test module trips ruff's F811).
    with run_openai_server() as running:
        yield running


QUESTION = [
    ChatMessage("system", "You are terse."),  # 3 words
    ChatMessage("user", "What is the capital of France?"),  # 6 words
]


def make_chat(server: OpenAIServer, **kw: Any) -> OpenAIChatModel:
    options: dict[str, Any] = {"timeout": 2.0, "max_retries": 0} | kw
    return OpenAIChatModel(api_key=server.api_key, base_url=server.base_url, model="test-chat", **options)


def keywords(value: Any) -> list[str]:
    """A validator as services write them: the shape or a ValueError saying what is off."""
    if not isinstance(value, dict) or not isinstance(value.get("keywords"), list):
        raise ValueError("expected an object with a 'keywords' list")
    return [str(k) for k in value["keywords"]]


# -- complete --------------------------------------------------------------------------------


def test_complete_returns_the_text_and_usage(server: OpenAIServer) -> None:
    server.reply("The capital is Paris.")

    result = make_chat(server).complete(QUESTION)

    assert result == ChatResult(text="The capital is Paris.", model="test-chat",
                                prompt_tokens=9, completion_tokens=4)


def test_complete_sends_model_messages_and_bearer_key(server: OpenAIServer) -> None:
    make_chat(server).complete(QUESTION, max_tokens=50)

    [request] = server.chat_requests()
    assert request.authorization == f"Bearer {API_KEY}"
    assert request.body["model"] == "test-chat"
    assert request.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is the capital of France?"},
    ]
    assert request.body["max_tokens"] == 50
    assert "response_format" not in request.body
    assert "stream" not in request.body


def test_json_mode_asks_for_a_json_object(server: OpenAIServer) -> None:
    make_chat(server).complete(QUESTION, json_mode=True)

    [request] = server.chat_requests()
    assert request.body["response_format"] == {"type": "json_object"}
    assert "max_tokens" not in request.body


def test_a_keyless_endpoint_gets_a_placeholder_key(server: OpenAIServer) -> None:
    # Local servers need no key, but openai 3.x refuses to build a client without one.
    chat = OpenAIChatModel(api_key=None, base_url=server.base_url, model="local")

    assert chat.complete(QUESTION).text == "Hello from the test server."
    assert server.chat_requests()[0].authorization == f"Bearer {NO_KEY_PLACEHOLDER}"


def test_the_adapter_satisfies_the_port(server: OpenAIServer) -> None:
    chat = make_chat(server)

    assert isinstance(chat, ChatModel)
    assert (chat.name, chat.offline) == ("test-chat", False)
    assert server.requests == []  # checking the port sends nothing


def test_counters_add_up_calls_and_tokens_across_threads(server: OpenAIServer) -> None:
    chat = make_chat(server)

    def ask() -> None:
        for _ in range(5):
            chat.complete(QUESTION)  # 9 prompt tokens, 5 for the default reply

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert chat.usage() == ChatUsage(calls=40, failures=0, prompt_tokens=360, completion_tokens=200)
    chat.reset_usage()
    assert chat.usage() == ChatUsage(0, 0, 0, 0)


# -- stream ----------------------------------------------------------------------------------


def test_stream_yields_the_deltas_in_order(server: OpenAIServer) -> None:
    server.reply("Paris is the capital.")
    chat = make_chat(server)

    deltas = list(chat.stream(QUESTION, max_tokens=20))

    assert deltas == ["Paris ", "is ", "the ", "capital."]
    assert "".join(deltas) == "Paris is the capital."
    [request] = server.chat_requests()
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["max_tokens"] == 20
    assert chat.usage() == ChatUsage(calls=1, failures=0, prompt_tokens=9, completion_tokens=4)


def test_stream_sends_nothing_until_iterated(server: OpenAIServer) -> None:
    deltas = make_chat(server).stream(QUESTION)

    assert server.requests == []
    assert next(deltas) == "Hello "
    assert len(server.chat_requests()) == 1


def test_stream_without_usage_option(server: OpenAIServer) -> None:
    chat = make_chat(server, stream_usage=False)

    assert "".join(chat.stream(QUESTION)) == "Hello from the test server."
    assert "stream_options" not in server.chat_requests()[0].body
    assert chat.usage() == ChatUsage(calls=1, failures=0, prompt_tokens=0, completion_tokens=0)


# -- failures --------------------------------------------------------------------------------


def test_http_500_is_a_model_error(server: OpenAIServer) -> None:
    server.fail("http_500", times=None)
    chat = make_chat(server, max_retries=1)

    with pytest.raises(ModelError, match=r"test-chat.*InternalServerError.*500"):
        chat.complete(QUESTION)

    assert len(server.chat_requests()) == 2  # the client's one retry, then give up
    assert chat.usage() == ChatUsage(calls=1, failures=1, prompt_tokens=0, completion_tokens=0)


def test_one_500_is_retried_by_the_client(server: OpenAIServer) -> None:
    server.fail("http_500", times=1)

    result = make_chat(server, max_retries=1).complete(QUESTION)

    assert result.text == "Hello from the test server."
    assert len(server.chat_requests()) == 2


def test_a_hanging_server_times_out_as_model_error() -> None:
    with run_openai_server(sleep_s=10.0) as server:
        server.fail("sleep", times=None)
        chat = make_chat(server, timeout=0.3, max_retries=0)
        started = time.monotonic()

        with pytest.raises(ModelError, match="APITimeoutError"):
            chat.complete(QUESTION)

        assert time.monotonic() - started < 2.0


def test_a_hanging_stream_times_out_as_model_error() -> None:
    with run_openai_server(sleep_s=10.0) as server:
        server.fail("sleep", times=None)
        started = time.monotonic()

        with pytest.raises(ModelError, match="APITimeoutError"):
            list(make_chat(server, timeout=0.3).stream(QUESTION))

        assert time.monotonic() - started < 2.0


def test_a_non_json_body_is_a_model_error(server: OpenAIServer) -> None:
    # openai 3.x lets a bare json.JSONDecodeError escape here; the adapter must not.
    server.fail("garbage")

    with pytest.raises(ModelError, match="JSONDecodeError"):
        make_chat(server).complete(QUESTION)


def test_a_stream_dropped_midway_raises_from_the_iterator(server: OpenAIServer) -> None:
    server.reply("alpha beta gamma delta")
    server.fail("drop_stream")
    chat = make_chat(server)
    received: list[str] = []

    with pytest.raises(ModelError, match="stream broke after 2 deltas"):
        for delta in chat.stream(QUESTION):
            received.append(delta)

    assert received == ["alpha ", "beta "]
    assert chat.usage().failures == 1


def test_a_stream_that_ends_before_finishing_is_a_model_error(server: OpenAIServer) -> None:
    server.reply("alpha beta gamma delta")
    server.fail("truncate_stream")
    received: list[str] = []

    with pytest.raises(ModelError, match="without a finish_reason"):
        for delta in make_chat(server).stream(QUESTION):
            received.append(delta)

    assert received == ["alpha ", "beta ", "gamma ", "delta"]


def test_a_stream_refused_with_500_raises_from_the_iterator(server: OpenAIServer) -> None:
    server.fail("http_500")

    with pytest.raises(ModelError, match="after 0 deltas.*500"):
        list(make_chat(server).stream(QUESTION))


def test_an_unreachable_server_is_a_model_error() -> None:
    with run_openai_server() as server:
        base_url = server.base_url  # the port is free again once the server stops
    chat = OpenAIChatModel(api_key="k", base_url=base_url, model="gone", timeout=1.0, max_retries=0)

    with pytest.raises(ModelError, match="APIConnectionError"):
        chat.complete(QUESTION)


# -- runaway replies, hanging endpoints, the circuit breaker --------------------------------


def test_a_runaway_stream_is_cut_at_max_tokens_even_when_the_server_ignores_it(server: OpenAIServer) -> None:
    server.honour_max_tokens = False  # streams until the "context" (2000 words) is full
    server.reply("again and")
    server.fail("never_stop")
    chat = make_chat(server)

    deltas = list(chat.stream(QUESTION, max_tokens=20))

    assert len(deltas) == 20
    assert server.chat_requests()[0].body["max_tokens"] == 20
    assert chat.usage().failures == 0 and chat.breaker.snapshot().failures == 0


def test_a_server_that_honours_max_tokens_finishes_with_length(server: OpenAIServer) -> None:
    server.reply("again and")
    server.fail("never_stop")
    chat = make_chat(server)

    deltas = list(chat.stream(QUESTION, max_tokens=12))

    assert len(deltas) == 12
    assert chat.usage().completion_tokens == 12


def test_first_token_timeout_ends_a_stream_that_never_answers(server: OpenAIServer) -> None:
    server.fail("hang", times=None)
    # Without a first-token timeout this waits timeout x attempts (30 s x 2 with the defaults).
    chat = make_chat(server, timeout=30.0, max_retries=1, first_token_timeout=0.3)
    started = time.monotonic()

    with pytest.raises(ModelError, match="first-token timeout"):
        list(chat.stream(QUESTION))

    assert time.monotonic() - started < 5.0
    assert chat.usage().failures == 1


def test_the_breaker_opens_after_repeated_failures_and_refuses_calls(server: OpenAIServer) -> None:
    server.fail("http_500", times=None)
    chat = make_chat(server, breaker=CircuitBreaker(name="test-chat", failure_threshold=2, cool_off_s=60))
    for _ in range(2):
        with pytest.raises(ModelError, match="500"):
            list(chat.stream(QUESTION))
    sent = len(server.chat_requests())

    with pytest.raises(ModelCircuitOpen, match="circuit breaker open"):
        list(chat.stream(QUESTION))
    with pytest.raises(ModelCircuitOpen):
        chat.complete(QUESTION)

    assert len(server.chat_requests()) == sent  # refused without a request
    assert chat.breaker.snapshot().state == "open"


def test_after_the_cool_off_one_probe_closes_or_reopens_the_breaker(server: OpenAIServer, caplog) -> None:
    now = [0.0]
    breaker = CircuitBreaker(name="test-chat", failure_threshold=1, cool_off_s=30, clock=lambda: now[0])
    chat = make_chat(server, breaker=breaker)
    server.fail("http_500", times=2)
    caplog.set_level(logging.INFO, logger="memory.adapters.circuit")

    with pytest.raises(ModelError):
        chat.complete(QUESTION)
    now[0] = 31.0  # cooled off: a probe goes through, fails, and the breaker opens again
    with pytest.raises(ModelError, match="500"):
        chat.complete(QUESTION)
    with pytest.raises(ModelCircuitOpen):
        chat.complete(QUESTION)
    now[0] = 62.0
    assert chat.complete(QUESTION).text == "Hello from the test server."

    assert breaker.snapshot().state == "closed"
    events = [r.getMessage().split()[0] for r in caplog.records if r.name == "memory.adapters.circuit"]
    assert events == ["event=model_breaker_opened", "event=model_breaker_half_open",
                      "event=model_breaker_opened", "event=model_breaker_half_open",
                      "event=model_breaker_closed"]


def test_the_breaker_is_safe_across_threads(server: OpenAIServer) -> None:
    breaker = CircuitBreaker(name="test-chat", failure_threshold=5, cool_off_s=60)
    server.fail("http_500", times=None)
    chat = make_chat(server, breaker=breaker)
    refused: list[bool] = []

    def call() -> None:
        try:
            chat.complete(QUESTION)
        except ModelCircuitOpen:
            refused.append(True)
        except ModelError:
            refused.append(False)

    threads = [threading.Thread(target=call) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(refused) == 12
    assert breaker.snapshot().state == "open"
    assert len(server.chat_requests()) <= 12 - refused.count(True)


# -- complete_json ---------------------------------------------------------------------------

EXTRACT = [ChatMessage("user", "Give the keywords of: I adopted a puppy. Answer in JSON.")]


def test_complete_json_returns_the_validated_value(server: OpenAIServer) -> None:
    server.reply('{"keywords": ["puppy", "adoption"]}')

    result = complete_json(make_chat(server), EXTRACT, validate=keywords, max_tokens=64)

    assert result == ["puppy", "adoption"]
    [request] = server.chat_requests()
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["max_tokens"] == 64
    assert request.body["messages"] == [{"role": "user", "content": EXTRACT[0].content}]


def test_complete_json_reads_fenced_json_with_trailing_commas(server: OpenAIServer) -> None:
    server.reply('Sure! Here it is:\n```json\n{"keywords": ["puppy", "dog",],}\n```\nAnything else?')

    assert complete_json(make_chat(server), EXTRACT, validate=keywords) == ["puppy", "dog"]
    assert len(server.chat_requests()) == 1


def test_complete_json_skips_a_block_that_does_not_validate(server: OpenAIServer) -> None:
    server.reply('As noted in [1], the answer is {"keywords": ["puppy"]}.')

    assert complete_json(make_chat(server), EXTRACT, validate=keywords) == ["puppy"]
    assert len(server.chat_requests()) == 1


def test_complete_json_retries_once_after_a_bad_answer(server: OpenAIServer) -> None:
    server.reply("The keywords are puppy and adoption.", '{"keywords": ["puppy", "adoption"]}')

    result = complete_json(make_chat(server), EXTRACT, validate=keywords)

    assert result == ["puppy", "adoption"]
    first, second = server.chat_requests()
    assert len(server.chat_requests()) == 2
    retry_messages = second.body["messages"]
    assert retry_messages[:2] == [
        {"role": "user", "content": EXTRACT[0].content},
        {"role": "assistant", "content": "The keywords are puppy and adoption."},
    ]
    assert retry_messages[2]["role"] == "user"
    assert "no JSON object or array" in retry_messages[2]["content"]
    assert first.body["messages"] == retry_messages[:1]


def test_complete_json_names_the_problem_after_two_bad_answers(server: OpenAIServer) -> None:
    server.reply('{"topics": ["puppy"]}', '{"topics": ["puppy"],}')

    with pytest.raises(ModelError) as caught:
        complete_json(make_chat(server), EXTRACT, validate=keywords)

    message = str(caught.value)
    assert "2 attempts" in message
    assert message.count("expected an object with a 'keywords' list") == 2
    assert len(server.chat_requests()) == 2


def test_complete_json_reports_a_broken_value(server: OpenAIServer) -> None:
    server.reply('{"keywords": ["puppy"', '{"keywords": ["puppy"')

    with pytest.raises(ModelError, match=r"invalid JSON \(Expecting"):
        complete_json(make_chat(server), EXTRACT, validate=keywords)


def test_complete_json_does_not_retry_transport_failures(server: OpenAIServer) -> None:
    server.fail("http_500", times=None)

    with pytest.raises(ModelError, match="500"):
        complete_json(make_chat(server), EXTRACT, validate=keywords)

    assert len(server.chat_requests()) == 1


def test_complete_json_adds_a_json_hint_when_the_prompt_lacks_one(server: OpenAIServer) -> None:
    # OpenAI's JSON mode rejects a conversation that never mentions JSON.
    server.reply('{"keywords": []}')

    complete_json(make_chat(server), QUESTION, validate=keywords)

    messages = server.chat_requests()[0].body["messages"]
    assert messages[0] == {"role": "system",
                           "content": "You are terse.\n\nAnswer with a single JSON value and nothing else."}
    assert messages[1:] == [{"role": "user", "content": "What is the capital of France?"}]


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1}', [{"a": 1}]),
    ("  [1, 2, 3,]  ", [[1, 2, 3]]),
    ('```\n{"a": "x, }"}\n```', [{"a": "x, }"}]),
    ('prefix {"a": "brace } and \\" quote", "b": [1,],} suffix', [{"a": 'brace } and " quote', "b": [1]}]),
    ('see [1] then {"a": {"b": [2,]}}', [[1], {"a": {"b": [2]}}]),
])
def test_json_candidates(text: str, expected: list[Any]) -> None:
    assert json_candidates(text) == expected
    assert parse_json_loosely(text) == expected[0]


@pytest.mark.parametrize(("text", "problem"), [
    ("", "the answer is empty"),
    ("```json\n```", "the answer is empty"),
    ("no json here", "no JSON object or array"),
    ('{"a": 1', "invalid JSON"),
    ("{'a': 1}", "invalid JSON"),
])
def test_json_candidates_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        json_candidates(text)


# -- embeddings over HTTP ---------------------------------------------------------------------


def make_embedder(server: OpenAIServer, **kw: Any) -> OpenAIEmbedder:
    options: dict[str, Any] = {"timeout": 2.0, "max_retries": 0, "dimension": 8} | kw
    return OpenAIEmbedder(api_key=server.api_key, base_url=server.base_url, model="test-embed", **options)


def test_openai_embeddings_are_normalised_and_in_order(server: OpenAIServer) -> None:
    server.reverse_embedding_order = True  # the API does not promise order
    embedder = make_embedder(server)

    vectors = embedder.embed(["my new dog", "quarterly tax filing"])

    assert vectors == [pytest.approx(normalise(fake_vector(t, 8)), abs=1e-12)
                       for t in ["my new dog", "quarterly tax filing"]]
    assert all(math.isclose(math.hypot(*v), 1.0, abs_tol=1e-12) for v in vectors)
    [request] = server.embedding_requests()
    assert request.authorization == f"Bearer {API_KEY}"
    assert request.body == {"model": "test-embed", "input": ["my new dog", "quarterly tax filing"],
                            "encoding_format": "float"}


def test_openai_embedder_satisfies_the_port(server: OpenAIServer) -> None:
    embedder = make_embedder(server)

    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("test-embed", 8)
    assert server.requests == []


def test_openai_embedder_batches_and_handles_empty_input(server: OpenAIServer) -> None:
    embedder = make_embedder(server, batch_size=2)

    assert embedder.embed([]) == []
    vectors = embedder.embed(["a", "b", "c", "d", ""])

    assert len(vectors) == 5
    assert [r.body["input"] for r in server.embedding_requests()] == [["a", "b"], ["c", "d"], [" "]]
    assert vectors[4] == pytest.approx(normalise(fake_vector(" ", 8)), abs=1e-12)


def test_openai_embedder_learns_an_unknown_models_dimension(server: OpenAIServer) -> None:
    embedder = make_embedder(server, dimension=None)

    assert embedder.dimension == 8
    assert [r.body["input"] for r in server.embedding_requests()] == [["dimension probe"]]


def test_openai_embedder_knows_openai_model_sizes(server: OpenAIServer) -> None:
    embedder = OpenAIEmbedder(api_key="k", base_url=server.base_url, model="text-embedding-3-small")

    assert embedder.dimension == 1536
    assert server.requests == []


def test_openai_embedder_can_request_a_dimension(server: OpenAIServer) -> None:
    embedder = make_embedder(server, dimension=4, send_dimensions=True)

    [vector] = embedder.embed(["puppy"])

    assert vector == pytest.approx(normalise(fake_vector("puppy", 4)), abs=1e-12)
    assert server.embedding_requests()[0].body["dimensions"] == 4


def test_openai_embedder_rejects_a_wrong_dimension(server: OpenAIServer) -> None:
    embedder = make_embedder(server, dimension=16)

    with pytest.raises(ModelError, match="returned 8 dimensions, expected 16"):
        embedder.embed(["puppy"])


@pytest.mark.parametrize(("fault", "cause"), [
    ("http_500", "InternalServerError"),
    ("garbage", "JSONDecodeError"),
])
def test_openai_embedder_failures_are_model_errors(server: OpenAIServer, fault: Any,
                                                   cause: str) -> None:
    server.fail(fault)

    with pytest.raises(ModelError, match=f"test-embed.*{cause}"):
        make_embedder(server).embed(["puppy"])


def test_openai_embedder_times_out_as_model_error() -> None:
    with run_openai_server(sleep_s=10.0) as server:
        server.fail("sleep", times=None)
        started = time.monotonic()

        with pytest.raises(ModelError, match="APITimeoutError"):
            make_embedder(server, timeout=0.3).embed(["puppy"])

        assert time.monotonic() - started < 2.0


def test_normalise_refuses_a_zero_vector() -> None:
    with pytest.raises(ModelError, match="cannot be normalised"):
        normalise([0.0, 0.0])
    assert normalise([3.0, 4.0]) == [0.6, 0.8]


def test_build_embedder_picks_the_backend(server: OpenAIServer) -> None:
    embedder = build_embedder(backend="openai", api_key="k", base_url=server.base_url,
                              model="test-embed", dimension=8)

    assert isinstance(embedder, OpenAIEmbedder)
    with pytest.raises(ValueError, match="unknown embedding backend 'bert'"):
        build_embedder(backend="bert")


# -- replies without an end (issue 35, findings 3 and 4) ----------------------------------------

def test_a_stream_that_stalls_after_its_first_token_is_cut_at_the_reply_timeout(server: OpenAIServer) -> None:
    """One token, then only keep-alives: no read ever timed out and the stream never ended. Now it
    is cut at reply_timeout, the cut is the breaker's failure, and the connection is closed."""
    server.fail("stall_after_first")
    chat = make_chat(server, timeout=30.0, first_token_timeout=5.0, reply_timeout=0.8)
    started = time.monotonic()
    got: list[str] = []
    with pytest.raises(ModelError, match="reply's time cap"):
        for delta in chat.stream(QUESTION):
            got.append(delta)
    assert got == ["Thinking"]
    assert 0.7 < time.monotonic() - started < 1.8
    assert chat.breaker.snapshot().failures == 1
    deadline = time.monotonic() + 5
    while server.open_streams and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.open_streams == 0  # the client hung up: no reader thread left holding it


def test_reply_bounded_cuts_huge_tokens_at_the_character_cap(server: OpenAIServer) -> None:
    server.fail("huge_tokens")
    chat = make_chat(server, timeout=30.0)
    text = "".join(reply_bounded(chat.stream(QUESTION, max_tokens=1024), max_chars=10_000, max_seconds=30.0,
                                 model=chat))
    assert len(text) == 10_000 and text.startswith("a" * 4000 + "b" * 4000 + "c")


def test_reply_bounded_fails_a_model_without_deadline_of_its_own_once_time_is_up() -> None:
    class Slow:
        name = "slow"

        def __init__(self) -> None:
            self.breaker = CircuitBreaker(name="slow", failure_threshold=1)
            self.closed = False

        def stream(self):
            try:
                while True:
                    time.sleep(0.05)
                    yield "word "
            finally:
                self.closed = True

    model = Slow()
    got = []
    with pytest.raises(ModelError, match="reply's time cap"):
        for token in reply_bounded(model.stream(), max_chars=10**6, max_seconds=0.3, model=model):
            got.append(token)
    assert 3 <= len(got) <= 8 and model.closed
    assert model.breaker.snapshot().state == "open"
