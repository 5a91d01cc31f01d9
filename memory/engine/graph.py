"""Content ids for the memory graph (Memoria): a hash of a node's canonical content."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def content_id(kind: str, content: dict[str, Any]) -> str:
    """sha256 over the kind and its content as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps({"kind": kind, "content": content}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
