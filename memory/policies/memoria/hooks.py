"""What Memoria plugs into the core: a page's sona membership, the rating after a reply, its bench.

A stored page joins the sona of its turn whatever the policy in use (`always`): a user who switches
a sona to Memoria later finds every memory in its sona, and the sonas API counts them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from memory.policies import registry
from memory.policies.memoria import ranking
from memory.policies.memoria.services import memoria_after_reply, sona_membership_put
from memory.recall.base import get_policy
from memory.services.policy_work import register_after_reply

BENCH_SUMMARY = "Memoria's pure core: CIDs, block verification, CAR archives, rank and budgeted expansion"


def page_stored(*, page, node, text: str, new: bool) -> None:
    """Every memory belongs to a sona: a page to the one it happened in."""
    if page.sona_id:
        sona_membership_put(user_id=page.user_id, sona_id=page.sona_id, node=node)


@contextmanager
def terms_off() -> Iterator[None]:
    """Memoria with the vector term alone: no recency, full-text, importance, sona, nor expansion."""
    saved = ranking.memoria_params
    ranking.memoria_params = lambda: dataclasses.replace(saved(), w_recency=0.0, w_fts=0.0, w_importance=0.0,
                                                         w_sona=0.0, max_pulled=0)
    try:
        yield
    finally:
        ranking.memoria_params = saved


def _is_memoria(policy: str) -> bool:
    return isinstance(get_policy(policy), ranking.MemoriaPolicy)


def register() -> None:
    registry.on_page_stored("memoria_sona_membership", page_stored, always=True)
    register_after_reply("importance_rating", memoria_after_reply)  # the runtime runs it off the reply path
    registry.on_bench("memoria", "memory.policies.memoria.bench", BENCH_SUMMARY)
    registry.on_ablation("memoria-terms", "Memoria with its relevance term alone (no recency, full-text, importance, "
                         "sona, expansion)", terms_off, _is_memoria)
