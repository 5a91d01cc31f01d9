"""A memory added from outside a chat (Memoria's `add_memory`, the MCP tool): a page with the text
and no reply, in a sona, depending on memories already stored, by content id.

Everything is checked before anything is written: a dependency that names no memory of this user,
a weight outside [0, 1] or a bad name is refused with a clear message and nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction

from memory.models import DialoguePage, MemoryNode
from memory.services import graph
from memory.services.common import MemoryInputError, lock_user_state
from memory.services.pages import page_start
from memory.services.turn_input import validate_message
from memory.services.turns import page_complete
from memory.services.users import sona_get_or_create

ADDED_MODEL_NAME = "added"  # reply_model of a page added without a conversation
MAX_DEPENDENCIES = 64
RELATION_MAX_CHARS = 24


def _node_by_cid(user, cid: str) -> MemoryNode | None:
    return (MemoryNode.objects.filter(user=user, cid=cid).first()
            or MemoryNode.objects.filter(user=user, aliases__cid=cid).first())


def _dependencies_check(user, dependencies: Mapping[str, Any]) -> list[tuple[str, float, MemoryNode]]:
    if not isinstance(dependencies, Mapping):
        raise MemoryInputError("Dependencies are a mapping of name -> [weight, content id].")
    if len(dependencies) > MAX_DEPENDENCIES:
        raise MemoryInputError(f"At most {MAX_DEPENDENCIES} dependencies; got {len(dependencies)}.")
    checked = []
    for name, value in dependencies.items():
        if not isinstance(name, str) or not name.strip() or len(name) > RELATION_MAX_CHARS or "/" in name:
            # "/" is how a node numbers repeated relations (engine/content_ids.py dependency_map)
            raise MemoryInputError(f"A dependency's name is 1 to {RELATION_MAX_CHARS} characters without '/': "
                                   f"{name!r}.")
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise MemoryInputError(f"Dependency {name!r}: expected [weight, content id], got {value!r}.")
        weight, cid = value
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0.0 <= float(weight) <= 1.0:
            raise MemoryInputError(f"Dependency {name!r}: the weight must be a number in [0, 1], not {weight!r}.")
        node = _node_by_cid(user, cid) if isinstance(cid, str) else None
        if node is None:
            raise MemoryInputError(f"Dependency {name!r}: no memory with content id {cid!r} here.")
        checked.append((name.strip(), float(weight), node))
    return checked


def memory_add(*, user, text: str, sona: str | None = None, dependencies: Mapping[str, Any] | None = None,
               timestamp: datetime | None = None) -> DialoguePage:
    """Store `text` as a memory of `user` in `sona` (the default one when not given), depending on
    the memories named by `dependencies` ({name: [weight, content id]}); the stored page."""
    text = validate_message(text)
    checked = _dependencies_check(user, dependencies or {})
    sona_row = sona_get_or_create(user=user, name=sona)
    page = page_start(user=user, query=text, sona=sona_row, timestamp=timestamp)
    # Embedding happens here, outside the transaction that writes the edges.
    page = page_complete(page=page, response="", reply_model=ADDED_MODEL_NAME)
    with transaction.atomic():
        lock_user_state(user.pk)
        source = graph.node_of(user_id=user.pk, obj=page, kind=MemoryNode.Kind.PAGE)
        for name, weight, target in checked:
            graph.edge_put(user_id=user.pk, source=source, target=target, relation=name, weight=weight)
        page.refresh_from_db(fields=["cid"])
    return page
