"""Waiting in tests for work another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Whether `condition()` became true within `timeout` seconds, polled every 50 ms."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
