"""The recall policy interface, and the registry that finds a policy by name.

A policy ranks what the store offers for one query beyond what every recall carries. The rest of
a recall is shared (memory/recall/pipeline.py): STM, the profile and traits, the KB facts and
agent traits by similarity, the query embedding beside the reads; the segment visits and the
trace are written by memory/services/recall.py, the prompt assembled by the engine.

Adding a policy is one module with a `RecallPolicy` subclass decorated by `@register_policy`,
the module named in POLICY_MODULES, or a memory model's package in memory/policies/ (named in
memory.policies.MODELS), or, for a policy that lives elsewhere, the MEMORYOS_RECALL_POLICY_MODULES
setting; and its tests. A policy also declares what it needs of
the rest of the project (work after the reply, recollections) and how the recall panel and the
inspector explain its items; services, selectors, benchmarks and templates ask the policy, never
its name (tests/test_architecture.py holds them to it).
"""

from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings

from memory.engine.mid_term import SegmentScore
from memory.engine.types import MemoryParams, RecalledItem
from memory.models import Tier
from memory.policies import MODELS
from memory.policies import registry as models_registry
from memory.recall import rows

# The built-in policies, in the order listings and benchmarks show them: the core's, then the memory
# models' packages (memory/policies/: each registers its policies when the registry loads it).
POLICY_MODULES = ("memory.recall.memoryos", "memory.recall.hybrid", *MODELS)

# What a recalled page shows; the stored embedding (1.5 kB a page) and the graph fields stay behind.
PAGE_FIELDS = ("id", "user_id", "tier", "seq", "query", "response", "timestamp", "source_ids", "segment_id",
               "repressed", "attachment_text")  # recall_text reads the attachment: deferred, it cost a query a page
# What ranking reads of a candidate page before it is chosen.
PAGE_KEY_FIELDS = ("id", "user_id", "tier", "seq", "segment_id", "repressed")
# What ranking and heat read of a segment (its vector stays behind too).
SEGMENT_FIELDS = ("id", "user_id", "status", "summary", "keywords", "n_visit", "l_interaction", "last_access",
                  "page_count", "pinned", "repressed")


@dataclass(frozen=True)
class RecallContext:
    """What a policy knows of the recall it ranks for."""

    user: Any
    query: str
    query_keywords: frozenset[str]
    now: datetime
    params: MemoryParams
    sona: Any = None
    # The tiers whose utterances may be ranked: a benchmark adds STM (the prompt has STM whole anyway).
    turn_tiers: tuple[str, ...] = (Tier.MTM,)
    # The KB facts and agent traits nearest the query, read once per recall: the prompt shows them
    # and the relevance core lifts the turns they were learned from.
    facts: tuple[RecalledItem, ...] = ()


@dataclass
class Ranking:
    """A policy's answer: its items best first, each with its score breakdown, and what it visited."""

    items: list[RecalledItem]
    # Segments that count as retrieved: their N_visit and recency are refreshed (paper §3.4).
    visited: list[SegmentScore] = field(default_factory=list)
    segment_rows: dict[str, Any] = field(default_factory=dict)  # the visited segments' rows, by id
    considered: list[dict[str, Any]] = field(default_factory=list)  # segments looked at, for the trace
    trace: dict[str, Any] = field(default_factory=dict)  # the policy's own entries of the trace's payload


@dataclass(frozen=True)
class ItemExplanation:
    """How a policy explains one of its items read back from a stored trace: the scores shown
    (None: keep the shared reading's) and reasons in words, added after the shared ones."""

    scores: list[tuple[str, float]] | None = None
    why: list[str] = field(default_factory=list)


class RecallPolicy(ABC):
    """One way of ranking memory for a query, and what it needs of the rest of the project."""

    name: ClassVar[str]
    title: ClassVar[str]  # one line for people: the inspector, `--help`
    rank_part: ClassVar[str]  # the name `rank` is timed under in Recall.timings_ms
    # A search that needs no query vector, run while the query is embedded, and its part's name.
    early_part: ClassVar[str | None] = None
    # Work run once the turn's reply is stored, off the reply path: names of the services' after-reply
    # work (memory/runtime/after_reply.py), each given the turn's user, trace and reply.
    after_reply: ClassVar[tuple[str, ...]] = ()
    # Whether maintenance makes recollections after this policy's turns (memory/policies/exocortex/;
    # MEMORYOS_EXOCORTEX_RECOLLECTIONS="policy").
    makes_recollections: ClassVar[bool] = False
    # The item kinds only this policy makes, with the recall panel's section title and, where the kind
    # needs one, the sentence that says what such an item is ("" for none).
    item_kinds: ClassVar[dict[str, tuple[str, str]]] = {}
    # The scores its items show in the recall panel, explained (the panel's legend and tooltips).
    score_help: ClassVar[dict[str, str]] = {}
    # The inspector's section for this policy's part of a trace (rendered with `trace_view`), or None.
    trace_template: ClassVar[str | None] = None

    def search_early(self, context: RecallContext) -> Any:
        """Work that needs no query vector (e.g. a keyword search); handed to `rank`."""
        return None

    @abstractmethod
    def rank(self, context: RecallContext, query_vector: Sequence[float], early: Any) -> Ranking:
        """The policy's items for the query, best first, each with its score breakdown."""

    @classmethod
    def parts(cls) -> tuple[str, ...]:
        """The parts of a recall this policy times, in the order they run."""
        return tuple(part for part in (cls.early_part, cls.rank_part) if part)

    def explain_item(self, kind: str, ref: str, payload: dict[str, Any]) -> ItemExplanation | None:
        """Its own reading of one recalled item from the trace's payload; None: the shared reading alone."""
        return None

    def trace_view(self, payload: dict[str, Any]) -> Any:
        """What `trace_template` shows of a stored trace's payload (falsy: the section is left out)."""
        return None


class UnknownPolicyError(ValueError):
    """A policy name that no registered policy has."""


_registry: dict[str, RecallPolicy] = {}
_loaded = False
_load_lock = threading.Lock()


def register_policy(cls: type[RecallPolicy]) -> type[RecallPolicy]:
    """Class decorator: make the policy selectable by its name."""
    if not getattr(cls, "name", "") or not getattr(cls, "rank_part", ""):
        raise TypeError(f"{cls.__name__} needs a name and a rank_part")
    existing = _registry.get(cls.name)
    if existing is not None and type(existing) is not cls:
        raise ValueError(f"a recall policy named {cls.name!r} is already registered ({type(existing).__name__})")
    _registry[cls.name] = cls()
    return cls


def unregister_policy(name: str) -> None:
    _registry.pop(name, None)


def _load() -> None:
    """Import the policy modules once; each registers its policies as it is imported."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if not _loaded:
            for module in ("memory.recall.memoryos", "memory.recall.hybrid"):
                importlib.import_module(module)
            models_registry.load()
            for module in settings.MEMORYOS.get("RECALL_POLICY_MODULES", ()):
                importlib.import_module(module)
            _loaded = True


def policy_names() -> tuple[str, ...]:
    """The built-in policies in POLICY_MODULES' order (whichever module was imported first), then
    the others in the order they registered."""
    _load()
    return tuple(sorted(_registry, key=lambda name: _module_rank(type(_registry[name]).__module__)))


def _module_rank(module: str) -> int:
    """Where a policy's module (or the model package it is in) comes in POLICY_MODULES."""
    for rank, listed in enumerate(POLICY_MODULES):
        if module == listed or module.startswith(listed + "."):
            return rank
    return len(POLICY_MODULES)


def get_policy(name: str) -> RecallPolicy:
    _load()
    try:
        return _registry[name]
    except KeyError:
        raise UnknownPolicyError(
            f"unknown recall policy {name!r}; choose one of {', '.join(policy_names())}") from None


def default_policy_name() -> str:
    return settings.MEMORYOS["RECALL_POLICY"]


def policies() -> tuple[RecallPolicy, ...]:
    """Every registered policy, in policy_names' order."""
    return tuple(get_policy(name) for name in policy_names())


def policy_or_none(name: str | None) -> RecallPolicy | None:
    """The registered policy of this name; None for a name no policy has (a trace stored by a policy
    since removed)."""
    _load()
    return _registry.get(name or "")


def owned(model, fields: Sequence[str], ids, user, **expected) -> dict[str, Any]:
    """Rows of `model` by primary key (`fields` loaded), kept only if they belong to `user`, are
    not repressed (when `fields` has the flag) and have the expected values.

    Looked up by key alone, then checked in Python: with a user filter in the SQL, SQLite's
    planner (no statistics) walks the user's (user, tier, seq) index instead of the key, which
    grows with the store.
    """
    found = rows.by_pk(model, ids, fields)
    if "repressed" in fields:  # a repressed memory is kept, never recalled, by any policy
        expected = {"repressed": False, **expected}
    return {key: row for key, row in found.items()
            if row.user_id == user.pk and all(getattr(row, name) == value for name, value in expected.items())}
