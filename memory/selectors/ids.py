"""Ids as the reads take them: a malformed id names nothing (and never reaches the database)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable


def uuids(values: Iterable[str]) -> list[uuid.UUID]:
    """The values that are UUIDs, as UUIDs (the others left out: a malformed id names nothing)."""
    found = []
    for value in values:
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return found


def uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
