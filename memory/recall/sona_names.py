"""Sona names embedded once per name and embedder in this process: a sona's row keeps its name's
embedding (memory/services/users.py), which Memoria's sona similarity compares; a sona without one
has its name embedded here at recall.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

# Sona names embedded in this process, per embedder (dropped with it): without a stored embedding
# every Memoria recall embedded the sona's name again, a forward pass as long as the query's; and
# every new user's first sona has the same name (memory/services/users.py sona_name_vector reads it here).
_NAME_VECTORS: weakref.WeakKeyDictionary[Any, dict[str, tuple[float, ...]]] = weakref.WeakKeyDictionary()
_NAME_VECTORS_LOCK = threading.Lock()
_NAME_VECTORS_SIZE = 256  # names per embedder kept (a user has a few sonas)


def name_vector(embedder, name: str) -> tuple[float, ...]:
    """The name embedded by `embedder`, once per name and embedder in this process; an embedder's
    error goes to the caller, and nothing is kept of it."""
    with _NAME_VECTORS_LOCK:
        known = _NAME_VECTORS.setdefault(embedder, {})
        if name in known:
            return known[name]
    vector = tuple(embedder.embed([name])[0])
    with _NAME_VECTORS_LOCK:
        if len(known) >= _NAME_VECTORS_SIZE:
            known.clear()
        known[name] = vector
    return vector
