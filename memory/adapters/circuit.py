"""A circuit breaker for the chat model: after repeated failures, stop calling it for a while.

A model endpoint that hangs or keeps failing costs every turn its timeout before the offline
engine answers, and the blocked calls hold the threads other users' turns need. After
`failure_threshold` failures in a row the breaker opens: calls are refused at once (replies go
straight to the offline engine) for `cool_off_s`. Then one probe call is let through
(half-open): its success closes the breaker, its failure opens it for another cool-off.

One breaker per model adapter, so per process; a lock keeps it consistent across turn threads.
Every transition is logged (event=model_breaker_*).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from memory.engine.ports import ModelError

log = logging.getLogger(__name__)

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class ModelCircuitOpen(ModelError):
    """The breaker refused the call: the model failed repeatedly and is cooling off."""

    def __init__(self, message: str, *, retry_in_s: float) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s


@dataclass(frozen=True)
class BreakerState:
    state: str
    failures: int  # in a row
    retry_in_s: float  # until a probe is let through (0 unless open)
    last_error: str


class CircuitBreaker:
    def __init__(self, *, name: str, failure_threshold: int = 3, cool_off_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.failure_threshold = max(1, failure_threshold)
        self.cool_off_s = cool_off_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state = CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._probe_started = 0.0
        self._last_error = ""

    def before_call(self) -> None:
        """Raise ModelCircuitOpen unless a call may go to the model now."""
        with self._lock:
            now = self._clock()
            if self._state == CLOSED:
                return
            # A probe that never reported back (its caller gave up) must not hold the breaker forever.
            waited = now - (self._opened_at if self._state == OPEN else self._probe_started)
            if waited >= self.cool_off_s:
                self._state, self._probe_started = HALF_OPEN, now
                log.info("event=model_breaker_half_open model=%s", self.name)
                return
            retry_in = self.cool_off_s - waited
        raise ModelCircuitOpen(f"chat model {self.name!r} is cooling off after repeated failures "
                               f"(circuit breaker open, next try in {retry_in:.0f} s)", retry_in_s=retry_in)

    def record_success(self) -> None:
        with self._lock:
            was = self._state
            self._state, self._failures, self._last_error = CLOSED, 0, ""
        if was != CLOSED:
            log.info("event=model_breaker_closed model=%s", self.name)

    def record_failure(self, error: str) -> None:
        with self._lock:
            self._failures += 1
            self._last_error = error[:300]
            if self._state == HALF_OPEN or (self._state == CLOSED and self._failures >= self.failure_threshold):
                self._state, self._opened_at = OPEN, self._clock()
                opened, failures = True, self._failures
            else:
                opened = False
        if opened:
            log.warning("event=model_breaker_opened model=%s failures=%s cool_off_s=%s error=%r",
                        self.name, failures, self.cool_off_s, error[:300])

    def snapshot(self) -> BreakerState:
        with self._lock:
            retry_in = max(0.0, self.cool_off_s - (self._clock() - self._opened_at)) if self._state == OPEN else 0.0
            return BreakerState(self._state, self._failures, retry_in, self._last_error)
