from __future__ import annotations

from datetime import datetime

from ninja import Field, Schema


class ProfileOut(Schema):
    name: str
    gender: str
    birth_year: int | None
    extra: dict


class ProfileIn(Schema):
    name: str | None = Field(None, max_length=120)
    gender: str | None = Field(None, max_length=40)
    birth_year: int | None = None


class TraitOut(Schema):
    key: str
    name: str
    category: str
    description: str
    score: float
    pinned: bool
    repressed: bool
    evidence: list[dict]


class EntryOut(Schema):
    id: str
    text: str
    timestamp: datetime | None
    segment_id: str | None
    source_page_ids: list[str]
    pinned: bool
    repressed: bool
    version: int
    cid: str
