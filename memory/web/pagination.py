"""The API's pagination: `limit` (1–200, default 50) and `offset` (bounded, so a huge one is a 422
and never reaches the database, where SQLite would overflow)."""

from __future__ import annotations

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_LIMIT = 200
MAX_OFFSET = 10**9


class Projected:
    """A queryset whose slices (what the paginator takes) come out converted: row by row with
    `convert`, or a whole page at once with `convert_page` (one query per page for what every row
    needs, not one per row)."""

    def __init__(self, rows, convert=None, *, convert_page=None) -> None:
        self.rows = rows
        self.convert_page = convert_page or (lambda page: [convert(row) for row in page])

    def __len__(self) -> int:
        return self.rows.count()

    def count(self) -> int:
        return self.rows.count()

    def __getitem__(self, window):
        return self.convert_page(list(self.rows[window]))


class Pages(LimitOffsetPagination):
    class Input(Schema):
        limit: int = Field(50, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)

    def __init__(self, **kwargs) -> None:
        super().__init__(max_limit=MAX_LIMIT, **kwargs)
