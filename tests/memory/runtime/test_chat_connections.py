"""The chat's turn workers keep their database connection from one call to the next."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.db import connections
from django.db.backends.signals import connection_created

from memory.runtime.connections import connections_kept

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def opened():
    """The threads that opened a database connection, one entry per connection opened."""
    threads: list[str] = []

    def count(sender, connection, **kwargs):
        threads.append(threading.current_thread().name)

    connection_created.connect(count)
    yield threads
    connection_created.disconnect(count)


def read_users(*, break_first: bool = False) -> int:
    """A query, on whatever thread runs it; `break_first`: the thread's kept connection fails its
    check (as after a database restart)."""
    wrapper = connections["default"]  # this thread's
    if break_first:
        wrapper.is_usable = lambda: False
    try:
        return get_user_model().objects.count()
    finally:
        wrapper.__dict__.pop("is_usable", None)


def on_one_thread(function, name: str):
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    return database_sync_to_async(function, thread_sensitive=False, executor=executor), executor


async def test_a_kept_connection_serves_the_threads_next_calls(make_user, opened):
    await database_sync_to_async(make_user)()
    kept, kept_pool = on_one_thread(connections_kept(read_users), "kept")
    plain, plain_pool = on_one_thread(read_users, "plain")
    try:
        assert [await kept() for _ in range(3)] == [1, 1, 1]
        assert [await plain() for _ in range(3)] == [1, 1, 1]
    finally:
        kept_pool.shutdown()
        plain_pool.shutdown()
    # CONN_MAX_AGE 0: every call of a plain thread opens a connection; the kept thread opened one
    assert sum(name.startswith("kept") for name in opened) == 1
    assert sum(name.startswith("plain") for name in opened) == 3


async def test_a_kept_connection_that_fails_its_check_is_replaced_before_use(make_user, opened):
    await database_sync_to_async(make_user)()
    kept, pool = on_one_thread(connections_kept(read_users), "kept")
    try:
        assert await kept() == 1
        assert await kept(break_first=True) == 1  # checked before the query: closed, opened afresh
        assert await kept() == 1
    finally:
        pool.shutdown()
    assert sum(name.startswith("kept") for name in opened) == 2


@pytest.mark.parametrize("with_profile", [False, True])
def test_an_offline_reply_runs_without_the_database(make_user, with_profile):
    # The reply's thread (one of many, which do not keep connections) has what it needs from the
    # turn worker: the user's profile came with the user.
    from django.test.utils import CaptureQueriesContext

    from memory.runtime.chat import _turn_prepare, chat_turn_accept
    from memory.services.turns import turn_reply
    from persona.models import UserProfile

    user = make_user()
    if with_profile:
        UserProfile.objects.create(user=user, name="Ana")
    turn = chat_turn_accept(user_id=user.pk, message="My sister moved to Lisbon last spring.")
    prepared = _turn_prepare(turn=turn)
    with CaptureQueriesContext(connections["default"]) as queries:
        generated = turn_reply(turn=prepared)
    assert queries.captured_queries == []
    assert generated.text and generated.embedding is not None
