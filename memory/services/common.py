"""What every write path shares: the per-user lock, embedding that degrades, and the input error.

Memory changes only through memory/services/, which take these from here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from django.db import connection
from django.db.models import QuerySet

from memory.adapters import configured
from memory.models import UserMemoryState

log = logging.getLogger(__name__)


class MemoryInputError(ValueError):
    """Bad input from a caller: the message says what is wrong; nothing was stored."""


class TextRefused(MemoryInputError):
    """Text no memory can hold (text_check): `field` names where it came in, `problem` what is wrong."""

    def __init__(self, message: str, *, field: str, problem: str) -> None:
        super().__init__(message)
        self.field = field
        self.problem = problem


# Text that cannot be stored: NUL (PostgreSQL refuses it in text and jsonb; SQLite keeps it, so the
# development profile would take what production refuses) and the surrogate code points, which are
# halves of a UTF-16 pair, not characters (a lone "\ud800" is a valid JSON escape but no UTF-8
# encodes it: the database driver raises). A pair is decoded to its character before this sees it.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored, or None: the same words for every way text comes in."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    char = found.group()
    what = "a NUL character (U+0000)" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"
    return (f"holds {what} at character {found.start() + 1}: text may hold neither NUL characters "
            "nor lone surrogates.")


def text_check(text: str, *, field: str) -> str:
    """`text` as it is, or TextRefused naming `field` and why no memory can hold it."""
    problem = text_problem(text)
    if problem is not None:
        raise TextRefused(f"The {field} {problem}", field=field, problem=problem)
    return text


def texts_check(value: object, *, field: str) -> None:
    """text_check every string in `value` (JSON-like: dicts, lists, tuples; keys too), naming each by
    its path under `field` ("message", "files[1]", "state.sonas[0].name")."""
    if isinstance(value, str):
        text_check(value, field=field)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                text_check(key, field=f"key of {field}" if field else "key")
            texts_check(item, field=f"{field}.{key}" if field else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            texts_check(item, field=f"{field}[{index}]")


class MemoryNotFound(MemoryInputError):
    """The memory named is not in this user's memory (another user's is not theirs either)."""


def lock_user_state(user_id: int) -> UserMemoryState:
    """Lock the user's state row (inside a transaction): every write of one user goes through it
    in turn, in any thread or process. One statement when the row exists (maintenance takes the
    lock about six times a page); a new user's row is made first, then locked."""
    state = UserMemoryState.objects.select_for_update().filter(user_id=user_id).first()
    if state is None:
        _user_state_make(user_id)
        state = UserMemoryState.objects.select_for_update().get(user_id=user_id)
    return state


def lock_user_state_writing(user_id: int, **changes) -> QuerySet[UserMemoryState]:
    """Lock the user's state row (inside a transaction) by writing `changes` to it: one statement
    where lock_user_state and a save take two; the row is made first if the user has none yet.
    Returns the row's queryset."""
    states = UserMemoryState.objects.filter(user_id=user_id)
    if not states.update(**changes):
        _user_state_make(user_id)
        states.update(**changes)
    return states


def lock_user_state_counting_up(user_id: int, field: str) -> int:
    """Lock the user's state row (inside a transaction) by counting `field` up by one; its new
    value. One statement (UPDATE ... RETURNING, which SQLite and PostgreSQL both have) where
    lock_user_state_writing and a read take two; the row is made first if the user has none yet."""
    quote = connection.ops.quote_name
    column = quote(UserMemoryState._meta.get_field(field).column)
    sql = (f"UPDATE {quote(UserMemoryState._meta.db_table)} SET {column} = {column} + 1 "
           f"WHERE {quote('user_id')} = %s RETURNING {column}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id])
        row = cursor.fetchone()
        if row is None:
            _user_state_make(user_id)
            cursor.execute(sql, [user_id])
            row = cursor.fetchone()
    return int(row[0])


def _user_state_make(user_id: int) -> None:
    """A new user's state row, in one statement (INSERT that leaves a row made meanwhile as it is),
    where get_or_create takes five with its savepoint: a new user's first turn makes it."""
    UserMemoryState.objects.bulk_create([UserMemoryState(user_id=user_id)], ignore_conflicts=True)


def embed_or_none(texts: Sequence[str]) -> list[list[float]] | None:
    """Embeddings, or None when the embedder fails: what was written is kept, and maintenance
    embeds it later."""
    try:
        return configured.embedder().embed(list(texts))
    except Exception as exc:  # an embeddings endpoint can fail in any way; the write must survive
        log.warning("event=embed_failed error=%r", exc)
        return None
