"""The lifecycle log: every event of a user, read once per user and process and then only its new
events (it is append-only; a rewrite of old events, such as a deletion scrubbing their text,
records an event of its own and reloads it), what is computed from it, and replay."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.db.models import Q, QuerySet

from memory.engine.lifecycle import EventRecord, Replay
from memory.models import LifecycleEvent

# Events whose arrival means older events were rewritten: the cached log is read again whole.
REWRITING_KINDS = frozenset({"deleted", "user_forgotten"})
EVENT_LABELS = dict(LifecycleEvent.Kind.choices)


class _LogCache:
    """Each user's events as EventRecords, oldest first, kept per process and extended with the
    events written since (at most `size` users)."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._logs: OrderedDict[int, list[EventRecord]] = OrderedDict()
        self._replays: dict[int, Replay] = {}
        self._derived: dict[int, dict[Any, Any]] = {}  # what was computed from the log as it is now
        self._lock = threading.Lock()

    def events(self, user_id: int) -> list[EventRecord]:
        with self._lock:
            cached = self._logs.get(user_id)
        after = cached[-1].id if cached else 0
        fresh = _read_events(user_id, after_id=after)
        if cached is not None and (any(e.kind in REWRITING_KINDS for e in fresh) or _shrunk(user_id, cached)):
            cached, fresh = None, _read_events(user_id, after_id=0)
        log = (cached or []) + fresh if fresh or cached is None else cached
        with self._lock:
            self._logs[user_id] = log
            self._logs.move_to_end(user_id)
            if fresh or cached is None:
                self._replays.pop(user_id, None)
                self._derived.pop(user_id, None)
            while len(self._logs) > self.size:
                evicted, _ = self._logs.popitem(last=False)
                self._replays.pop(evicted, None)
                self._derived.pop(evicted, None)
        return log

    def derived(self, user_id: int, key: Any, compute: Callable[[list[EventRecord]], Any]) -> Any:
        """`compute(log)` once per version of the user's log (the log only grows: a new event
        makes a new version)."""
        log = self.events(user_id)
        with self._lock:
            found = self._derived.get(user_id, {}).get(key)
            if found is not None and found[0] is log:
                return found[1]
        value = compute(log)
        with self._lock:
            self._derived.setdefault(user_id, {})[key] = (log, value)
        return value

    def replay(self, user_id: int) -> Replay:
        log = self.events(user_id)
        with self._lock:
            replay = self._replays.get(user_id)
            if replay is None or replay.events is not log:
                replay = self._replays[user_id] = Replay(log)
            return replay

    def clear(self) -> None:
        with self._lock:
            self._logs.clear()
            self._replays.clear()
            self._derived.clear()


def _shrunk(user_id: int, cached: list[EventRecord]) -> bool:
    """Events were deleted (a user forgotten and written again): the first cached one is gone."""
    return not LifecycleEvent.objects.filter(user_id=user_id, id=cached[0].id).exists() if cached else False


def _read_events(user_id: int, *, after_id: int) -> list[EventRecord]:
    rows = (LifecycleEvent.objects.filter(user_id=user_id, id__gt=after_id).order_by("id")
            .values_list("id", "kind", "subject_id", "occurred_at", "payload"))
    return [EventRecord(id=i, kind=kind, subject=subject, at=at, payload=payload or {})
            for i, kind, subject, at, payload in rows.iterator(chunk_size=5000)]


_log_cache = _LogCache()


def event_log(*, user) -> list[EventRecord]:
    return _log_cache.events(user.pk)


def replay_of(*, user) -> Replay:
    return _log_cache.replay(user.pk)


def event_log_forget_cache() -> None:
    _log_cache.clear()


def log_derived(user, key: Any, compute: Callable[[list[EventRecord]], Any]) -> Any:
    """`compute(log)` once per version of the user's log (a figure, an index built from it)."""
    return _log_cache.derived(user.pk, key, compute)


EVENT_GROUPS = {
    "pages": ("page_added", "moved_to_mtm", "reply_fallback", "recall_degraded"),
    "segments": ("segment_created", "segment_merged", "segments_visited", "segment_promoted", "segment_evicted"),
    "long-term": ("fact_added", "fact_dropped", "trait_updated", "agent_trait_added", "agent_trait_dropped"),
    # What operators did: every action of the inspector's bar and of the review queue.
    "edits": ("edited", "pinned", "unpinned", "repressed", "unrepressed", "corrected", "deleted",
              "supersession_rejected"),
    "problems": ("maintenance_failed", "model_output_rejected", "recall_degraded", "reply_fallback"),
}


def events(*, user, kinds: list[str] | None = None, query: str = "") -> QuerySet[LifecycleEvent]:
    """The user's lifecycle events, newest first: of these kinds, and whose subject or kind has `query`."""
    rows = LifecycleEvent.objects.filter(user=user)
    if kinds:
        rows = rows.filter(kind__in=kinds)
    if query:
        rows = rows.filter(Q(subject_id__icontains=query) | Q(kind__icontains=query))
    return rows.order_by("-id")
