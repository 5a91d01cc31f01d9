"""The ChatModel port's contract, run on the OpenAI adapter (over HTTP, against tests/openai_server.py)
and on tests/fakes.py's FakeChatModel: the service tests that script the fake get the answers the
adapter would hand them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory.adapters.llm import OpenAIChatModel
from memory.engine.ports import ChatMessage, ChatModel
from tests.fakes import FakeChatModel


@pytest.fixture(params=["openai", "fake"])
def model(request, openai_server) -> tuple[ChatModel, Callable[..., None]]:
    """The model, and how a test queues its answers."""
    if request.param == "fake":
        fake = FakeChatModel()
        return fake, fake.reply
    adapter = OpenAIChatModel(api_key=openai_server.api_key, base_url=openai_server.base_url, model="test-chat",
                              timeout=5.0, max_retries=0)
    return adapter, openai_server.reply


def test_it_satisfies_the_port(model) -> None:
    chat, _ = model
    assert isinstance(chat, ChatModel) and chat.offline is False and chat.name


def test_answers_come_in_the_order_they_were_queued_with_their_token_counts(model) -> None:
    chat, queue = model
    queue("First answer.", '{"summary": "Second answer here."}')
    first = chat.complete([ChatMessage("user", "one two three")])
    second = chat.complete([ChatMessage("system", "Answer in JSON."), ChatMessage("user", "again")], json_mode=True,
                           max_tokens=50)
    assert (first.text, second.text) == ("First answer.", '{"summary": "Second answer here."}')
    assert (first.prompt_tokens, first.completion_tokens) == (3, 2)  # whitespace-separated words
    assert (second.prompt_tokens, second.completion_tokens) == (4, 4)
    assert first.model == chat.name


def test_a_stream_sends_the_answer_word_by_word_and_stops_at_max_tokens(model) -> None:
    chat, queue = model
    queue("one two three four five", "one two three four five")
    pieces = list(chat.stream([ChatMessage("user", "count")]))
    assert "".join(pieces) == "one two three four five" and len(pieces) == 5
    assert "".join(chat.stream([ChatMessage("user", "count")], max_tokens=2)) == "one two "
