"""The relevance core for a recall: memory/engine/relevance.py over the user's own turns.

Every utterance is indexed on its own (memory/services/utterances.py). The engine scores a
query's candidate turns (dense + BM25 fusion, pseudo-relevance feedback, a second hop, smoothing
along the conversation and by meaning, turn pairs, the speaker, time and long-term boosts); here
it reads them through the adapters (memory/recall/candidates.py), with the project's parameters,
and the best of them become items.

The policies differ in what they add to relevance, never in what matches: the hybrid policy ranks
these turns directly (with diversity across sessions), the MemoryOS policy ranks segments by
what their pages score here, Memoria, the Exocortex and Generative Agents weigh each page's
relevance from here with their own terms. `TurnRelevance` exposes the scores per turn, per page
and per segment, and normalised to [0, 1] for the formulas that expect a cosine-like relevance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memory.engine import hybrid_scoring as scoring
from memory.engine.candidates import CandidateSource
from memory.engine.relevance import RelevanceQuery, TurnRelevance, keyword_hits, relevance
from memory.engine.types import RecalledItem
from memory.models import DialoguePage, Tier
from memory.recall import rows
from memory.recall.candidates import turn_candidates

__all__ = ["PARAMS", "keyword_turns", "turn_items", "turn_relevance", "with_params"]

# The project's parameters; a benchmark's ablation runs with some parts switched off (read at
# each call, so that it can swap them).
PARAMS = scoring.HybridParams()


def keyword_turns(*, user, query: str, tiers: Sequence[str] = (Tier.MTM,),
                  params: scoring.HybridParams | None = None) -> dict[str, float]:
    """The BM25 list: turn id -> score. It needs no query vector, so recall runs it while the
    query is being embedded."""
    params = params or PARAMS
    if not query.strip():
        return {}
    return keyword_hits(turn_candidates(user, tiers), query, params.candidates)


def turn_relevance(*, user, query: str, query_vector: Sequence[float], now, tiers: Sequence[str] = (Tier.MTM,),
                   sparse: dict[str, float] | None = None, facts: Sequence[RecalledItem] = (),
                   params: scoring.HybridParams | None = None,
                   candidates: CandidateSource | None = None) -> TurnRelevance:
    """Every candidate turn of the query with its parts and final score. `sparse` is the query's
    keyword_turns when the caller has it already; `facts` the KB facts and agent traits nearest
    the query (RecallContext.facts), whose source pages gain the long-term part; `candidates`
    where the turns are read (the user's turns in `tiers` through the adapters unless given)."""
    if candidates is None:
        candidates = turn_candidates(user, tiers)
    return relevance(RelevanceQuery(text=query, vector=query_vector, now=now, sparse=sparse, facts=facts),
                     candidates, params or PARAMS)


def with_params(**changes: Any) -> scoring.HybridParams:
    """The project's parameters with some changed (ablations, experiments)."""
    return replace(PARAMS, **changes)


def turn_items(user, found: TurnRelevance, ranked: Sequence[int]) -> list[RecalledItem]:
    """The ranked candidates as items with their utterance and score breakdown."""
    facts = found.facts
    seqs = sorted({facts[found.keys[i]].seq for i in ranked})
    pages = {page.seq: page for page in rows.rows(DialoguePage, ("seq", "utterances", "segment", "timestamp"),
                                                   equal={"user": user.pk, "repressed": False}, among={"seq": seqs})}
    items = []
    for i in ranked:
        key = found.keys[i]
        page = pages.get(facts[key].seq)
        pos = facts[key].pos
        if page is None or pos >= len(page.utterances):
            continue
        utt = page.utterances[pos]
        breakdown: dict = found.breakdown(i)
        breakdown["segment_id"] = str(page.segment_id) if page.segment_id else ""
        items.append(RecalledItem(
            kind="turn", ref=key, text=f"{utt['speaker']}: {utt['text']}", score=float(found.final[i]),
            timestamp=page.timestamp, source_ids=(utt["id"],) if utt.get("id") else (), breakdown=breakdown,
        ))
    return items
