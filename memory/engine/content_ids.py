"""Content ids for the memory graph (Memoria): a hash of a node's canonical content."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any


def content_id(kind: str, content: dict[str, Any]) -> str:
    """sha256 over the kind and its content as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps({"kind": kind, "content": content}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


TRAIT_EVIDENCE_NAMESPACE = uuid.UUID("0c8f7a3e-5d1b-4f2a-9e6c-7b4d2a1f9e30")


def trait_evidence_object_id(key: str, page_id: str) -> str:
    """The graph node of one piece of trait evidence (a dimension, a page): a uuid5 keeps it
    within an object id's 64 characters."""
    return str(uuid.uuid5(TRAIT_EVIDENCE_NAMESPACE, f"{key}:{page_id}"))
