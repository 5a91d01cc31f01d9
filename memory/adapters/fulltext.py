"""Full-text search over memories: one port, two implementations chosen by the database vendor.

- SQLite (the default store): an FTS5 virtual table `memory_fulltext(doc_id UNINDEXED, user_id
  UNINDEXED, body)`, ranked by FTS5's bm25 (its `rank`, smaller is better: returned negated).
- PostgreSQL: a plain table of the same columns with a GIN index on to_tsvector('english', body),
  matched with plainto_tsquery and ranked by ts_rank.

Migration 0011_memoria_recall creates the table its vendor needs. The documents live in the same
database as the memories, so a service that writes a page indexes it in the same transaction: the
index can never claim a page that was rolled back. Scores are comparable only within one query
(memory/policies/memoria/engine/scoring.py fulltext_terms). The adapter returns ids only; callers check them against
the rows they may recall (an id of a deleted or repressed memory is simply not found there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from django.db import connection

TABLE = "memory_fulltext"
# Words FTS5 reads as operators when bare; every query term is quoted anyway.
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32


@dataclass(frozen=True)
class TextHit:
    doc_id: str
    score: float  # larger is better; comparable within one query only


class FullTextIndex(Protocol):
    vendor: str

    def upsert(self, *, user_id: int, docs: Sequence[tuple[str, str]]) -> None:
        """Index (doc_id, text) pairs of one user, replacing what those ids had."""

    def insert(self, *, user_id: int, docs: Sequence[tuple[str, str]]) -> None:
        """Index (doc_id, text) pairs of one user whose ids the index does not hold yet."""

    def delete(self, *, doc_ids: Iterable[str]) -> None: ...

    def delete_user(self, *, user_id: int) -> None: ...

    def clear(self) -> None: ...

    def search(self, *, user_id: int, text: str, limit: int) -> list[TextHit]:
        """The user's documents matching any word of `text`, best first."""

    def count(self, *, user_id: int | None = None) -> int: ...


def query_terms(text: str) -> list[str]:
    """The words of a query, lower-cased, each once, in order (at most MAX_QUERY_TERMS)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        seen.setdefault(word, None)
    return list(seen)[:MAX_QUERY_TERMS]


class _SqlIndex:
    """What both vendors share: the table's writes."""

    vendor = ""

    def upsert(self, *, user_id: int, docs: Sequence[tuple[str, str]]) -> None:
        if not docs:
            return
        self.delete(doc_ids=[doc_id for doc_id, _ in docs])
        self.insert(user_id=user_id, docs=docs)

    def insert(self, *, user_id: int, docs: Sequence[tuple[str, str]]) -> None:
        # No delete first: FTS5 finds an UNINDEXED doc_id by reading every row of the table.
        with connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {TABLE} (doc_id, user_id, body) VALUES (%s, %s, %s)",
                               [(str(doc_id), int(user_id), text) for doc_id, text in docs])

    def delete(self, *, doc_ids: Iterable[str]) -> None:
        ids = [str(doc_id) for doc_id in doc_ids]
        with connection.cursor() as cursor:
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                marks = ", ".join(["%s"] * len(chunk))
                cursor.execute(f"DELETE FROM {TABLE} WHERE doc_id IN ({marks})", chunk)

    def delete_user(self, *, user_id: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {TABLE} WHERE user_id = %s", [int(user_id)])

    def clear(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {TABLE}")

    def count(self, *, user_id: int | None = None) -> int:
        with connection.cursor() as cursor:
            if user_id is None:
                cursor.execute(f"SELECT count(*) FROM {TABLE}")
            else:
                cursor.execute(f"SELECT count(*) FROM {TABLE} WHERE user_id = %s", [int(user_id)])
            return int(cursor.fetchone()[0])


class SqliteFts5Index(_SqlIndex):
    vendor = "sqlite"

    def search(self, *, user_id: int, text: str, limit: int) -> list[TextHit]:
        terms = query_terms(text)
        if not terms or limit < 1:
            return []
        # Each word quoted (a phrase of one): no FTS5 syntax reaches the engine from a user's text.
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT doc_id, rank FROM {TABLE} WHERE {TABLE} MATCH %s AND user_id = %s "
                           f"ORDER BY rank LIMIT %s", [match, int(user_id), int(limit)])
            return [TextHit(doc_id=str(doc_id), score=-float(rank)) for doc_id, rank in cursor.fetchall()]


class PostgresIndex(_SqlIndex):
    vendor = "postgresql"

    def search(self, *, user_id: int, text: str, limit: int) -> list[TextHit]:
        terms = query_terms(text)
        if not terms or limit < 1:
            return []
        # plainto_tsquery ANDs its words; a memory should match on any of them, as with FTS5's OR:
        # each word goes through plainto_tsquery (stemmed, stop words dropped, no syntax), then the
        # alternatives are joined by | into one tsquery.
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH q AS (SELECT coalesce(string_agg('(' || p::text || ')', ' | '), '')::tsquery AS query "
                f"           FROM unnest(%s::text[]) AS t(term), plainto_tsquery('english', t.term) AS p "
                f"           WHERE p::text <> '') "
                f"SELECT doc_id, ts_rank(to_tsvector('english', body), q.query) AS score FROM {TABLE}, q "
                f"WHERE user_id = %s AND to_tsvector('english', body) @@ q.query "
                f"ORDER BY score DESC, doc_id LIMIT %s",
                [terms, int(user_id), int(limit)])
            return [TextHit(doc_id=str(doc_id), score=float(score)) for doc_id, score in cursor.fetchall()]


def fulltext_index() -> FullTextIndex:
    """The implementation for the database this process uses."""
    if connection.vendor == "postgresql":
        return PostgresIndex()
    if connection.vendor == "sqlite":
        return SqliteFts5Index()
    raise RuntimeError(f"no full-text index for the {connection.vendor} database")


def create_sql(vendor: str) -> list[str]:
    """The statements that create the index's table on `vendor` (used by the migration)."""
    if vendor == "sqlite":
        return [f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5(doc_id UNINDEXED, user_id UNINDEXED, body, "
                f"tokenize = 'porter unicode61')"]
    if vendor == "postgresql":
        return [f"CREATE TABLE IF NOT EXISTS {TABLE} (doc_id varchar(64) PRIMARY KEY, user_id integer NOT NULL, "
                f"body text NOT NULL)",
                f"CREATE INDEX IF NOT EXISTS {TABLE}_user ON {TABLE} (user_id)",
                f"CREATE INDEX IF NOT EXISTS {TABLE}_tsv ON {TABLE} USING GIN (to_tsvector('english', body))"]
    return []


def drop_sql(vendor: str) -> list[str]:
    return [f"DROP TABLE IF EXISTS {TABLE}"] if vendor in ("sqlite", "postgresql") else []
