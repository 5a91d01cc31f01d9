"""Database connections on the few long-lived threads that run every user's work."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.db import connections


def connections_kept(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, leaving the database connections it opened on its thread open for that thread's
    next call: for the few threads that run every user's turns (the turn workers, and the thread
    every socket's checks share).

    With CONN_MAX_AGE 0 (the setting: Django's request threads come and go under ASGI) each call
    opened a connection and closed it: about 3 ms of CPU each on SQLite and PostgreSQL alike
    (4 ms and 0.6 ms a query in one process; 21 ms of wall time on PostgreSQL), four times a turn:
    the message's check, its store-and-recall, the reply (the user's profile), the reply's store.
    A kept connection is checked before its next use (a PostgreSQL restart closes it) and closed
    as before when its transaction was left broken (close_old_connections, around every call)."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            for connection in connections.all(initialized_only=True):
                if connection.connection is not None:
                    connection.close_at = None  # no age: the thread is one of a few, and lives on
                    connection.health_check_enabled = True
    return call
