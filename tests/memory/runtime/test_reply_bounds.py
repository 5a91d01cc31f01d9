"""Replies bounded whatever the model sends (issue 35, findings 3 and 4): in characters (a model of
4,000-character tokens made a 4 MB reply, which the websocket could not carry), in wall time (a
model that sends one token and then only keep-alives never finished, and never counted as failing),
and in reply workers (33 such turns held all 32, and the 33rd person got nothing for 40 s)."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async

from memory.models import DialoguePage, LifecycleEvent, PageStatus
from memory.runtime import chat
from memory.runtime.chat import REPLY_WORKERS_BUSY, chat_turn_accept, chat_turn_frames
from memory.services.turns import turn_run

pytestmark = pytest.mark.usefixtures("memory_env")


def test_a_model_of_huge_tokens_is_cut_at_the_reply_character_cap(make_user, memory_env, openai_server):
    openai_server.fail("huge_tokens")
    openai_server.serve_chat(memory_env, REPLY_MAX_CHARS=6000)
    user = make_user()

    result = turn_run(user=user, message="Tell me everything.")

    assert not result.offline and len(result.reply) == 6000
    assert len(DialoguePage.objects.get(user=user).response) == 6000


def test_a_stalled_model_is_cut_at_the_time_cap_and_its_failures_open_the_breaker(make_user, memory_env,
                                                                                 openai_server):
    openai_server.fail("stall_after_first", times=None)
    openai_server.serve_chat(memory_env, REPLY_MAX_SECONDS=1.0, OPENAI_FIRST_TOKEN_TIMEOUT=5.0,
             LLM_BREAKER_FAILURES=2, LLM_BREAKER_COOL_OFF_S=600.0)
    user = make_user()
    for text in ("First message.", "Second message."):
        started = time.monotonic()
        result = turn_run(user=user, message=text)
        assert time.monotonic() - started < 1.0 + 1.0  # the cap plus a second, storing included
        assert result.offline and "time cap" in result.fallback_reason
    asked = len(openai_server.chat_requests())
    started = time.monotonic()

    result = turn_run(user=user, message="Third message.")

    assert time.monotonic() - started < 0.5 and len(openai_server.chat_requests()) == asked
    assert result.offline and "circuit breaker open" in result.fallback_reason
    assert not DialoguePage.objects.filter(user=user, status=PageStatus.PENDING).exists()


async def _turn(user, text: str) -> tuple[dict, float]:
    turn = await database_sync_to_async(chat_turn_accept)(user_id=user.pk, message=text)
    started = time.monotonic()
    frames = [frame async for frame in chat_turn_frames(turn)]
    return frames[-1], time.monotonic() - started


async def test_a_turn_that_finds_every_reply_worker_busy_gets_the_offline_reply_at_once(make_user, memory_env,
                                                                                       openai_server):
    openai_server.fail("stall_after_first", times=None)
    openai_server.serve_chat(memory_env, REPLY_MAX_SECONDS=3.0, OPENAI_FIRST_TOKEN_TIMEOUT=5.0,
             LLM_BREAKER_FAILURES=100)
    memory_env.MEMORYOS_CHAT = {**memory_env.MEMORYOS_CHAT, "REPLY_WORKERS": 2}
    chat._reply_places.cache_clear()
    chat._reply_executor.cache_clear()
    try:
        users = [await database_sync_to_async(make_user)() for _ in range(3)]
        stalled = [asyncio.create_task(_turn(user, "Tell me a long story.")) for user in users[:2]]
        while len(openai_server.chat_requests()) < 2:  # both reply workers wait on the model
            await asyncio.sleep(0.05)

        frame, took = await _turn(users[2], "Remember my sister Lena plays the cello.")

        assert frame["type"] == "turn.done" and frame["offline"] and frame["fallback"]
        event = await database_sync_to_async(LifecycleEvent.objects.get)(user=users[2], kind="reply_fallback")
        assert event.payload["reason"] == REPLY_WORKERS_BUSY
        # Answered while the stalled turns still hold both workers (they end at the 3 s cap): it
        # waited for no worker (its own store and recall take the rest on this shared machine).
        assert took < 3.0 and not any(task.done() for task in stalled)
        page = await database_sync_to_async(DialoguePage.objects.get)(user=users[2])
        assert page.status == PageStatus.COMPLETE
        for task in stalled:  # the stalled ones end at the time cap, with the offline reply
            frame, took = await task
            assert frame["type"] == "turn.done" and frame["offline"] and took < 3.0 + 1.0
        assert len(openai_server.chat_requests()) == 2  # the third was never sent to the model
    finally:
        chat._reply_places.cache_clear()
        chat._reply_executor.cache_clear()
