"""Each user's document frequencies, kept beside the embedded index for keyword search's IDF.

Qdrant can weigh a keyword search by IDF itself (the sparse vector's IDF modifier, counted over
a filter such as one user's points), but then every search counts, for each of its terms, how
many of the user's points hold it: a walk of the term's posting list that grows with the store
(3.5 ms a search at 100,000 pages, BENCHMARKS.md). Here the counts are kept as the points are
written, and a query arrives with its IDF weights already in it, so the index only sums
weight x BM25 tf over the points that match.

IDF = ln(1 + (N - n + 0.5) / (n + 0.5)): Qdrant's own formula, with N the user's points that have
text and n those among them that hold the term, so rankings are the same as before.

A user's counts are built from the index on first use (one scroll of the user's text vectors)
and then follow every write; the index that owns this object calls it under its own lock, in the
same critical section as the write, so the counts never drift from the points.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence

# Users whose counts stay in memory; the least recently used are dropped and rebuilt on demand.
MAX_USERS = 256


def idf(documents: int, holding: int) -> float:
    """Qdrant's IDF modifier: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (documents - holding + 0.5) / (holding + 0.5))


class UserTerms:
    """One user's N (points with text) and n per term index."""

    __slots__ = ("documents", "holding")

    def __init__(self) -> None:
        self.documents = 0
        self.holding: Counter[int] = Counter()

    def add(self, terms: Sequence[int]) -> None:
        if terms:
            self.documents += 1
            self.holding.update(terms)

    def remove(self, terms: Sequence[int]) -> None:
        if not terms:
            return
        self.documents -= 1
        holding = self.holding
        for term in terms:
            left = holding[term] - 1
            if left > 0:
                holding[term] = left
            else:
                del holding[term]

    def weights(self, terms: Iterable[int]) -> dict[int, float]:
        """IDF of each term some point holds; a term no point holds could match nothing."""
        documents, holding = self.documents, self.holding
        return {term: idf(documents, holding[term]) for term in terms if holding.get(term)}


class DocumentFrequencies:
    """Per-user `UserTerms`, the least recently used forgotten past `max_users`."""

    def __init__(self, max_users: int = MAX_USERS) -> None:
        self.max_users = max_users
        self._users: OrderedDict[str, UserTerms] = OrderedDict()

    def __contains__(self, user_id: object) -> bool:
        return user_id in self._users

    def __bool__(self) -> bool:
        return bool(self._users)

    def held(self, user_id: str) -> UserTerms | None:
        """The user's counts if they are in memory (a write only updates counts that are)."""
        return self._users.get(user_id)

    def built(self, user_id: str, documents: Iterable[Sequence[int]]) -> UserTerms:
        """The user's counts, built from `documents` (each a point's term indices) when not held."""
        terms = self._users.get(user_id)
        if terms is None:
            terms = UserTerms()
            for document in documents:
                terms.add(document)
            self._users[user_id] = terms
            while len(self._users) > self.max_users:
                self._users.popitem(last=False)
        else:
            self._users.move_to_end(user_id)
        return terms

    def forget(self, user_id: str) -> None:
        self._users.pop(user_id, None)

    def clear(self) -> None:
        self._users.clear()
