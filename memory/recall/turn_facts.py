"""The fixed payload of utterance ("turn") points, kept in memory per process.

The hybrid policy (memory/recall/hybrid.py) reads candidates' ids and scores only; what ranking
needs besides (page seq, position, speaker: memory.engine.candidates.TurnFact) comes from here
(through memory/recall/candidates.py). Indexing (memory/services/
utterances.py) puts in the facts of the points it writes.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections.abc import Sequence

from django.conf import settings

from memory.engine.candidates import TurnFact

__all__ = ["FIXED_FIELDS", "TurnFacts", "turn_facts"]

# A turn point's id is derived from (page, position), so these payload fields never change for it.
FIXED_FIELDS = ("seq", "pos", "speaker", "timestamp")


class TurnFacts:
    """The fixed payload of turn points, kept in memory by id (oldest entry out first), about
    0.2 kB an entry.

    A hybrid recall takes hundreds of candidates from each of three searches; reading their
    payloads back from the index costs about 15 µs a hit, three times what id and score cost.
    The searches ask for no payload and the facts come from here, or, for ids not seen yet,
    from one batched read. Maintenance puts in the facts of the points it indexes (a re-indexed
    page's replace the old ones), and all entries are dropped when the facts are asked of
    another index than before (settings changed, a benchmark's fresh store: integer ids repeat
    across stores). A server restart clears it. Eviction is first in, first out: keeping a
    least-recently-used order cost a dictionary move per candidate, a millisecond a recall, and
    an evicted entry costs one batched read to get back.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._facts: dict[str, TurnFact] = {}
        self._source: weakref.ref | None = None  # the index the facts were read from
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._facts)

    def get(self, index, *, user_id: str, ids: Sequence[str]) -> dict[str, TurnFact]:
        with self._lock:
            cached = self._bound_to(index)
            found = {key: facts for key in ids if (facts := cached.get(key)) is not None}
        missing = [key for key in ids if key not in found]
        if missing:
            fetched = {key: TurnFact.of(payload) for key, payload in
                       index.get_payloads(user_id=user_id, ids=missing, fields=FIXED_FIELDS).items()
                       if "seq" in payload and "pos" in payload}
            found.update(fetched)
            self.put(index, fetched)
        return found

    def put(self, index, facts: dict[str, TurnFact]) -> None:
        """Keep the facts of points just read from, or just written to, `index`."""
        with self._lock:
            cached = self._bound_to(index)
            cached.update(facts)
            excess = len(cached) - self.size
            if excess > 0:
                for key in list(itertools.islice(cached, excess)):
                    del cached[key]

    def _bound_to(self, index) -> dict[str, TurnFact]:
        """The facts, emptied first if they were read from another index (call with the lock)."""
        if self._source is None or self._source() is not index:
            self._facts.clear()
            self._source = weakref.ref(index)
        return self._facts

    def clear(self) -> None:
        with self._lock:
            self._facts.clear()


@functools.cache
def turn_facts() -> TurnFacts:
    return TurnFacts(settings.MEMORYOS["TURN_FACTS_CACHE"])
