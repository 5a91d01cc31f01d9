"""Where a write's and a recall's SQL statements come from: each statement with the project's
innermost frame that issued it, counted by call site (issue 51's statement budget).

    .venv/bin/pytest --fakes -q -s tests/memory/services/test_statement_budget.py

prints them grouped when run with -s; the budget tests name them on failure too.
"""

from __future__ import annotations

import collections
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[3]
PROJECT = tuple(str(ROOT / part) for part in ("memory", "persona"))
# Statements that only open, close, mark or configure a transaction: counted apart (SQLite logs
# BEGIN; PostgreSQL's driver opens its transactions without a statement Django logs, and a
# recall's transaction sets its commit not to wait for the disk: SET LOCAL synchronous_commit).
BOOKKEEPING = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "SET")


@dataclass(frozen=True)
class Statement:
    sql: str
    site: str  # "memory/services/pages.py:123 page_start"

    @property
    def verb(self) -> str:
        return re.sub(r"^\d+ times: ", "", self.sql.lstrip()).split(None, 1)[0].upper()

    @property
    def bookkeeping(self) -> bool:
        return self.verb in BOOKKEEPING


@dataclass
class Captured:
    statements: list[Statement] = field(default_factory=list)

    @property
    def work(self) -> list[Statement]:
        """The statements that read or write rows (the budget's), without the transactions' own."""
        return [s for s in self.statements if not s.bookkeeping]

    @property
    def bookkeeping(self) -> list[Statement]:
        return [s for s in self.statements if s.bookkeeping]

    def report(self) -> str:
        """The statements by call site, most first, each site with its verbs."""
        by_site: dict[str, list[str]] = collections.defaultdict(list)
        for statement in self.statements:
            by_site[statement.site].append(statement.verb)
        lines = [f"{len(self.work)} statements (+{len(self.bookkeeping)} of the transactions' own: "
                 f"{' '.join(sorted({s.verb for s in self.bookkeeping}))}):"]
        for site, verbs in sorted(by_site.items(), key=lambda item: -len(item[1])):
            lines.append(f"  {len(verbs):3d}  {site}  {' '.join(verbs)}")
        return "\n".join(lines)


def _site() -> str:
    """The innermost frame of the project's own code (not Django's, not this module's)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename.startswith(PROJECT):
            return f"{Path(frame.filename).relative_to(ROOT)}:{frame.lineno} {frame.name}"
    return "(outside the project)"


@contextmanager
def statements_captured() -> Iterator[Captured]:
    """Every statement run on the default connection inside the block, with its call site.

    Savepoints and transaction statements Django runs itself (atomic's SAVEPOINT and RELEASE) go
    through the same wrapper, so they are counted, apart (Captured.bookkeeping)."""
    captured = Captured()

    def record(execute, sql, params, many, context):
        captured.statements.append(Statement(sql=sql, site=_site()))
        return execute(sql, params, many, context)

    # atomic's BEGIN on SQLite, SAVEPOINT and RELEASE run through cursors the wrapper sees; the
    # connection's own commit() does not: it is added where it happens.
    commit = connection.commit

    def counted_commit():
        captured.statements.append(Statement(sql="COMMIT", site=_site()))
        return commit()

    with connection.execute_wrapper(record):
        connection.commit = counted_commit
        try:
            yield captured
        finally:
            del connection.commit
