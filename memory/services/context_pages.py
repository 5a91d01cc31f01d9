"""A client's earlier messages kept as memories, when the OpenAI-compatible endpoint is told to
(MEMORYOS_OPENAI_STORE_CONTEXT): each user message with the assistant's answer that followed it
becomes a page, once.

A client such as a chat UI sends its whole conversation with every request; by default only the
last user message is a turn (memory/web/openai_api.py) and the rest is the prompt's context. With
the setting on, a conversation begun elsewhere is remembered too. An exchange already stored (the
same message and answer: this endpoint's own earlier turns among them) is not stored again, so
sending the same history twice adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import DialoguePage, Sona
from memory.services.pages import page_start
from memory.services.turn_input import validate_message
from memory.services.turns import page_complete

CONTEXT_MODEL_NAME = "client-context"  # reply_model of an exchange a client sent, not one answered here


def context_pairs_check(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The exchanges with each message checked as a turn's (MemoryInputError names the first bad one),
    before anything is stored."""
    checked = []
    for number, (message, answer) in enumerate(pairs, start=1):
        try:
            checked.append((validate_message(message), answer.strip()))
        except Exception as error:
            raise type(error)(f"Earlier user message {number}: {error}") from None
    return checked


def context_pages_store(*, user, sona: Sona | None, pairs: Sequence[tuple[str, str]]) -> int:
    """Store the exchanges not stored yet, oldest first; how many were stored."""
    stored = 0
    for message, answer in context_pairs_check(pairs):
        if DialoguePage.objects.filter(user=user, query=message, response=answer).exists():
            continue
        page = page_start(user=user, query=message, sona=sona)
        page_complete(page=page, response=answer, reply_model=CONTEXT_MODEL_NAME)
        stored += 1
    return stored
