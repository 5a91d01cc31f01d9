"""What a turn takes, checked once for every way in: the websocket, the REST API, the `chat` command
and the services themselves refuse the same input with the same words.

The limits come from the settings (memoryos_site/settings.py, MEMORYOS), read on every call so that
a changed setting holds at once:

- MEMORYOS_MAX_MESSAGE_CHARS (4000): the message, without the spaces around it;
- MEMORYOS_MAX_FILES_PER_TURN (5): the content ids of uploaded files a turn carries, as sent.

A policy must be registered (memory/recall/); whether a named file or sona exists is the
services' business (memory/services/files.py, turns.py): it needs the database, this does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from memory.services.common import MemoryInputError, text_check
from memory.services.recall import policy_choose

# A content id (CIDv1, base32) is 59 characters; the margin leaves room for other encodings.
CONTENT_ID_MAX_CHARS = 100
# The sona a turn names: its id over the websocket, its name over the API (at most
# SONA_NAME_MAX_CHARS, checked where a sona is created).
SONA_REF_MAX_CHARS = 100
POLICY_NAME_MAX_CHARS = 100


@dataclass(frozen=True)
class TurnInput:
    """A turn's input after the checks: the message stripped, the files' content ids in order."""

    message: str
    files: tuple[str, ...] = ()
    sona: str | None = None  # as the caller names it; resolved by the edge that knows how
    policy: str | None = None  # a recall policy by name; None: the sona's, else the setting's


def turn_input_limits() -> dict[str, int]:
    """The limits in force, for the pages and frames that tell people about them."""
    return {"max_message_chars": settings.MEMORYOS["MAX_MESSAGE_CHARS"],
            "max_files": settings.MEMORYOS["MAX_FILES_PER_TURN"]}


def validate_message(text: object) -> str:
    """The message without the spaces around it; MemoryInputError when it is not text, empty or long."""
    if not isinstance(text, str):
        raise MemoryInputError("The message must be text.")
    cleaned = text_check(text, field="message").strip()
    if not cleaned:
        raise MemoryInputError("The message is empty.")
    limit = settings.MEMORYOS["MAX_MESSAGE_CHARS"]
    if len(cleaned) > limit:
        raise MemoryInputError(f"The message is {len(cleaned)} characters long; the limit is {limit}.")
    return cleaned


def validate_files(cids: object) -> tuple[str, ...]:
    """The content ids a turn names, stripped, in the order sent (none: an empty tuple)."""
    if cids is None:
        return ()
    if isinstance(cids, str) or not isinstance(cids, Sequence) \
            or not all(isinstance(cid, str) and 0 < len(cid.strip()) <= CONTENT_ID_MAX_CHARS for cid in cids):
        raise MemoryInputError("Files are named by a list of content ids, each the one its upload returned.")
    for index, cid in enumerate(cids):
        text_check(cid, field=f"files[{index}]")
    limit = settings.MEMORYOS["MAX_FILES_PER_TURN"]
    if len(cids) > limit:
        raise MemoryInputError(f"A turn carries at most {limit} files; got {len(cids)}.")
    return tuple(cid.strip() for cid in cids)


def _optional_name(value: object, *, what: str, limit: int, field: str) -> str | None:
    if not value:  # none, or an empty choice: the default
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise MemoryInputError(f"The {what} is named by text of at most {limit} characters.")
    return text_check(value, field=field)


def turn_input_parse(*, message: object, files: object = None, sona: object = None,
                     policy: object = None) -> TurnInput:
    """Check what a caller sent for a turn; MemoryInputError says what is wrong, before anything
    is stored. The message is checked first, then the files, the sona and the policy."""
    return TurnInput(
        message=validate_message(message),
        files=validate_files(files),
        sona=_optional_name(sona, what="sona", limit=SONA_REF_MAX_CHARS, field="sona"),
        policy=_policy(policy),
    )


def _policy(value: object) -> str | None:
    """A policy named but not registered is refused here, before an edge makes a sona for the turn."""
    name = _optional_name(value, what="recall policy", limit=POLICY_NAME_MAX_CHARS, field="policy")
    return policy_choose(requested=name) if name is not None else None
