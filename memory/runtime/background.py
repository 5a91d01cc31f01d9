"""The turns running in the background on each event loop: started by the edges (the websocket,
/v1), they outlive the socket or request that asked for them, and a test or a graceful shutdown
can wait for them (`turns_drain`)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Coroutine
from typing import Any

_tasks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[asyncio.Task]] = weakref.WeakKeyDictionary()


def _loop_tasks() -> set[asyncio.Task]:
    return _tasks.setdefault(asyncio.get_running_loop(), set())


async def turns_drain(timeout: float | None = None) -> None:
    """Wait for the turns running on this loop to finish (tests, a graceful shutdown)."""
    tasks = list(_loop_tasks())
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


def in_background(work: Coroutine[Any, Any, None]) -> asyncio.Task:
    """Run `work` on this loop, counted among the turns that turns_drain waits for."""
    tasks = _loop_tasks()
    task = asyncio.create_task(work)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task
