"""The API's pagination: `limit` (1–200, default 50) and `offset` (bounded, so a huge one is a 422
and never reaches the database, where SQLite would overflow)."""

from __future__ import annotations

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_LIMIT = 200
MAX_OFFSET = 10**9


class Pages(LimitOffsetPagination):
    class Input(Schema):
        limit: int = Field(50, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)

    def __init__(self, **kwargs) -> None:
        super().__init__(max_limit=MAX_LIMIT, **kwargs)
