"""The chat's rate limit: a token bucket per user, shared through Redis by every server process
when Redis is configured, and kept per process when it is not or while Redis fails."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid

import pytest
import redis

from memory.web import rate_limit
from memory.web.rate_limit import TokenBucket, rate_limit_check, rate_limit_wait, rate_limits_reset
from tests.conftest import REDIS_URL, redis_available


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the probe is closed


@pytest.fixture
def shared(settings):
    """The chat settings with the bucket in Redis under a prefix of this test's own."""
    if not redis_available():
        pytest.skip(f"no Redis server at {REDIS_URL}")
    prefix = f"memoryos-rate-test-{uuid.uuid4().hex[:10]}"
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_REDIS_URL": REDIS_URL, "RATE_KEY_PREFIX": prefix,
                              "RATE_BURST": 2, "RATE_PER_MINUTE": 0.5}
    rate_limits_reset()
    yield prefix
    rate_limits_reset()


def take_in_a_fresh_loop(user_id: int) -> float:
    """One take from a new event loop, hence a new Redis client: as another process would."""
    return asyncio.run(rate_limit_wait(user_id))


def test_the_bucket_refills_at_its_rate_and_holds_at_most_its_burst():
    now = [0.0]
    bucket = TokenBucket(burst=2, rate_per_minute=30, clock=lambda: now[0])  # one token per 2 s
    assert [bucket.take(), bucket.take()] == [0.0, 0.0]
    assert bucket.take() == pytest.approx(2.0)
    now[0] = 1.0
    assert bucket.take() == pytest.approx(1.0)
    now[0] = 100.0  # long idle: back to the burst, not more
    assert [bucket.take(), bucket.take()] == [0.0, 0.0] and bucket.take() > 0


def test_every_client_draws_from_one_bucket_kept_in_redis(shared):
    assert [take_in_a_fresh_loop(7), take_in_a_fresh_loop(7)] == [0.0, 0.0]
    rate_limit._buckets.clear()  # nothing of this process's own decides
    wait = take_in_a_fresh_loop(7)
    # 0.5 a minute: a token takes 120 s to come back
    assert 115 < wait <= 120
    stored = redis.Redis.from_url(REDIS_URL).hgetall(f"{shared}:rate:7")
    assert float(stored[b"tokens"]) < 1 and not rate_limit._buckets


def test_users_have_buckets_of_their_own(shared):
    assert [take_in_a_fresh_loop(1), take_in_a_fresh_loop(1)] == [0.0, 0.0]
    assert take_in_a_fresh_loop(1) > 0
    assert take_in_a_fresh_loop(2) == 0.0


def test_a_shared_bucket_refills_by_redis_clock(shared, settings):
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_BURST": 1, "RATE_PER_MINUTE": 600}  # 10 a second
    assert take_in_a_fresh_loop(3) == 0.0
    wait = take_in_a_fresh_loop(3)
    assert 0 < wait <= 0.1
    time.sleep(wait + 0.05)
    assert take_in_a_fresh_loop(3) == 0.0


def test_reset_empties_the_shared_buckets_of_its_prefix_only(shared):
    other = redis.Redis.from_url(REDIS_URL)
    other.hset(f"{shared}-other:rate:5", mapping={"tokens": "0", "updated": "0"})
    try:
        assert [take_in_a_fresh_loop(5) for _ in range(3)][-1] > 0
        rate_limits_reset()
        assert take_in_a_fresh_loop(5) == 0.0
        assert other.exists(f"{shared}-other:rate:5")
    finally:
        other.delete(f"{shared}-other:rate:5")


def test_while_redis_fails_each_process_limits_on_its_own(settings, caplog):
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
                              "RATE_BURST": 2, "RATE_PER_MINUTE": 0.5}
    rate_limit._buckets.clear()
    with caplog.at_level(logging.WARNING, logger="memory.web.rate_limit"):
        waits = [take_in_a_fresh_loop(9) for _ in range(3)]
    assert waits[:2] == [0.0, 0.0] and waits[2] > 0
    assert "rate_limit_shared_failed" in caplog.text
    rate_limit._buckets.clear()


def test_the_rest_api_draws_from_the_same_redis_bucket_as_the_websocket(shared):
    assert take_in_a_fresh_loop(9) == 0.0  # a websocket frame
    assert rate_limit_check(9) == 0.0  # a REST turn
    rate_limit._buckets.clear()
    assert 115 < rate_limit_check(9) <= 120  # the burst of 2 is spent, whoever spent it
    assert take_in_a_fresh_loop(9) > 0


def test_the_rest_api_falls_back_to_this_processs_bucket_while_redis_fails(settings):
    rate_limit._buckets.clear()
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
                              "RATE_BURST": 1, "RATE_PER_MINUTE": 1.0}
    assert rate_limit_check(11) == 0.0
    assert rate_limit_check(11) > 0
    rate_limit._buckets.clear()
