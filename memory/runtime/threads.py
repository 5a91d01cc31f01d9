"""Work an edge starts on a thread of its own: a streamed API turn, a history import. The thread
opens its own database connections and closes them when the work ends, so a request's thread that
returns at once leaves none behind."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import close_old_connections


def work_on_thread(name: str, work: Callable[..., Any], *args: Any) -> threading.Thread:
    """Run `work(*args)` on a new daemon thread named `name`; returns the started thread."""
    def run() -> None:
        close_old_connections()
        try:
            work(*args)
        finally:
            close_old_connections()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
