"""The chat's rate limit: a token bucket per user (`burst` frames at once, then a steady rate),
drawn from by the websocket chat (rate_limit_wait) and the REST API's turns (rate_limit_check).

With Redis configured (REDIS_URL) a user's bucket lives in Redis and every server process draws
from it; while Redis fails each process falls back to a bucket of its own, so a flood is still
limited and no request waits on the outage. Without Redis, a bucket per process.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)


class TokenBucket:
    """`burst` frames at once, then `rate_per_minute` on average."""

    def __init__(self, *, burst: int, rate_per_minute: float, clock: Callable[[], float] = time.monotonic):
        self.capacity = float(max(burst, 1))
        self.rate = max(rate_per_minute, 0.0) / 60.0
        self.clock = clock
        self.tokens = self.capacity
        self.updated = clock()

    def take(self) -> float:
        """0 when a frame may pass (and it is counted), else the seconds until one may."""
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return min((1.0 - self.tokens) / self.rate, 3600.0) if self.rate else 3600.0


# Per user and per process: all of a user's sockets in this process draw from one bucket.
_buckets: dict[int, TokenBucket] = {}
_buckets_lock = threading.Lock()


def rate_limit_take(user_id: int) -> float:
    """This process's bucket of the user (no Redis, or Redis failing)."""
    cfg = settings.MEMORYOS_CHAT
    with _buckets_lock:
        bucket = _buckets.get(user_id)
        if bucket is None:
            bucket = _buckets[user_id] = TokenBucket(burst=cfg["RATE_BURST"],
                                                     rate_per_minute=cfg["RATE_PER_MINUTE"])
        return bucket.take()


# The same bucket as TokenBucket.take, kept in a Redis hash per user and updated atomically, so
# that several server processes share it. Redis's clock, not the processes', measures the refill.
# Lua numbers come back from Redis as integers, so the wait returns as a string.
_SHARED_TAKE = """
local capacity, rate, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'updated')
local tokens = tonumber(state[1]) or capacity
local updated = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - updated) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
elseif rate > 0 then
  wait = math.min((1 - tokens) / rate, 3600)
else
  wait = 3600
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'updated', tostring(now))
redis.call('EXPIRE', KEYS[1], ttl)
return tostring(wait)
"""
# A client per event loop: redis.asyncio connections belong to the loop that opened them.
_shared_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def _rate_key(user_id: int) -> str:
    return f"{settings.MEMORYOS_CHAT['RATE_KEY_PREFIX']}:rate:{user_id}"


def _shared_args() -> list[float]:
    """The bucket's capacity, refill per second and the idle seconds after which its key expires."""
    cfg = settings.MEMORYOS_CHAT
    burst = float(max(cfg["RATE_BURST"], 1))
    rate = max(cfg["RATE_PER_MINUTE"], 0.0) / 60.0
    idle_s = int(burst / rate) + 60 if rate else 3600  # a full bucket needs no key
    return [burst, rate, idle_s]


async def rate_limit_wait(user_id: int) -> float:
    """0 when the user's frame may pass (and it is counted), else the seconds until one may.

    With Redis configured the bucket is shared by every server process; if Redis fails, this
    process's own bucket decides, so a flood is still limited and no frame waits on the outage."""
    url = settings.MEMORYOS_CHAT.get("RATE_REDIS_URL")
    if not url:
        return rate_limit_take(user_id)
    try:
        loop = asyncio.get_running_loop()
        take = _shared_clients.get(loop)
        if take is None:
            import redis.asyncio

            take = _shared_clients[loop] = redis.asyncio.Redis.from_url(
                url, socket_timeout=1.0, socket_connect_timeout=1.0).register_script(_SHARED_TAKE)
        return float(await take(keys=[_rate_key(user_id)], args=_shared_args()))
    except Exception as exc:  # Redis down or slow: limit per process rather than not at all
        log.warning("event=rate_limit_shared_failed user=%s error=%r", user_id, exc)
        return rate_limit_take(user_id)


# One client per Redis URL for the synchronous callers (the REST API's worker threads): redis-py's
# blocking client is thread-safe through its connection pool.
_sync_clients: dict[str, Any] = {}
_sync_clients_lock = threading.Lock()


def rate_limit_check(user_id: int) -> float:
    """rate_limit_wait for synchronous code: the same bucket (the websocket chat and the REST
    API draw a user's turns from one), the same fallback while Redis fails."""
    url = settings.MEMORYOS_CHAT.get("RATE_REDIS_URL")
    if not url:
        return rate_limit_take(user_id)
    try:
        with _sync_clients_lock:
            take = _sync_clients.get(url)
            if take is None:
                import redis

                take = _sync_clients[url] = redis.Redis.from_url(
                    url, socket_timeout=1.0, socket_connect_timeout=1.0).register_script(_SHARED_TAKE)
        return float(take(keys=[_rate_key(user_id)], args=_shared_args()))
    except Exception as exc:  # Redis down or slow: limit per process rather than not at all
        log.warning("event=rate_limit_shared_failed user=%s error=%r", user_id, exc)
        return rate_limit_take(user_id)


def rate_limits_reset() -> None:
    """Every bucket full again: this process's, and the shared ones under this prefix (tests)."""
    with _buckets_lock:
        _buckets.clear()
    url = settings.MEMORYOS_CHAT.get("RATE_REDIS_URL")
    if url:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=2.0)
        try:
            keys = list(client.scan_iter(match=_rate_key("*"), count=1000))
            if keys:
                client.delete(*keys)
        finally:
            client.close()
