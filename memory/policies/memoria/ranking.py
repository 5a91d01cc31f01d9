"""Memoria's recall policy ("memoria"): a weighted sum of five terms, then budgeted expansion along
the memory graph, shown dependencies first (memory/policies/memoria/engine/scoring.py, expansion.py).

Candidates are the dialogue pages the relevance core ranks best and those whose lines share the
most words with the query (TurnRelevance.page_keyword_scores: the best BM25 score of a page's
utterances in the core's keyword list), each with its page's graph node: its importance (the EWMA
beside the node) and the sonas it belongs to (SonaMembership; the page's own sona when it has
none). The top_k are the seeds; each spends its budget along MemoryEdge rows (read one batch of
nodes per step), which pulls in the pages, segments, facts and agent traits they depend on. Nodes
the user may not recall are never read through: another user's, repressed memories (the page,
its segment, the fact), old versions of corrected memories and trait evidence. The engine's ids are
the nodes' primary keys as strings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memory.adapters import configured
from memory.engine.ipld import Dependency
from memory.engine.types import RecalledItem
from memory.models import (
    DialoguePage,
    MemoryEdge,
    MemoryNode,
    PageStatus,
    Segment,
    Sona,
    SonaMembership,
    Tier,
    bytes_to_vector,
)
from memory.policies.memoria.engine.expansion import GraphNode
from memory.policies.memoria.engine.scoring import Candidate, MemoriaParams, memoria_recall, sona_similarity
from memory.policies.memoria.settings import memoria_params
from memory.recall import rows
from memory.recall.base import (
    PAGE_FIELDS,
    ItemExplanation,
    Ranking,
    RecallContext,
    RecallPolicy,
    owned,
    register_policy,
)
from memory.recall.relevance import keyword_turns, turn_relevance
from memory.recall.sona_names import name_vector
from persona.models import AgentTrait, KnowledgeFact

# What ranking reads of a candidate page; the text is read for the pages recalled.
PAGE_LIGHT_FIELDS = ("id", "user_id", "tier", "seq", "timestamp", "segment_id", "repressed", "sona_id", "status")
# What a recall reads of a graph node (its block stays behind).
NODE_FIELDS = ("id", "user_id", "kind", "object_id", "cid", "importance")
RECALLABLE_KINDS = (MemoryNode.Kind.PAGE, MemoryNode.Kind.SEGMENT, MemoryNode.Kind.FACT, MemoryNode.Kind.AGENT_TRAIT)
ITEM_KINDS = {MemoryNode.Kind.PAGE: "memoria_page"}  # the others are notes: "memoria_note"
TRACE_KEY = "memoria"  # the policy's entries in a trace's payload
# The terms of a seed's score as the recall panel labels them.
SCORE_LABELS = (("score", "Memoria score"), ("recency", "Memoria recency"), ("vector", "meaning"),
                ("fulltext", "words"), ("importance", "importance"), ("sona", "sona similarity"))


@dataclass(frozen=True)
class Memory:
    """A graph node this recall may use, with what it shows and when it happened."""

    node: MemoryNode
    text: str
    timestamp: Any  # an aware datetime, or None
    source_ids: tuple[str, ...] = ()

    @property
    def seconds(self) -> float | None:
        return self.timestamp.timestamp() if self.timestamp is not None else None


@register_policy
class MemoriaPolicy(RecallPolicy):
    name = TRACE_KEY
    title = ("Memoria: recency + vector + full-text + importance + sona similarity, then budgeted expansion "
             "along the memory graph in topological order")
    rank_part = "memoria"
    early_part = "keyword search"
    # The recalled memories are rated after the reply: importance, and bubbling up between sonas.
    after_reply = ("importance_rating",)
    item_kinds = {"memoria_page": ("Earlier conversations (Memoria, causal order)", ""),
                  "memoria_note": ("Topics and facts (Memoria)", "")}
    score_help = {
        "Memoria score": "The weighted sum of Memoria's five terms (recency, meaning, words, importance, sona).",
        "Memoria recency": "0.5 ** (age / half-life): 1 when just said, 0.5 one half-life later.",
        "meaning": "Cosine of your message and the memory, at least 0.",
        "words": "The full-text match, as a share of the best match for this message (0 to 1).",
        "importance": "How much this memory helped earlier replies (EWMA of 1-10 ratings), on 0 to 1.",
        "sona similarity": "Closeness of the persona's name to the names of the personas the memory belongs to.",
        "budget": "What the memory got of a recalled memory's budget: its share of a perfect match, passed "
                  "along dependencies (budget × pass-on × edge weight).",
    }
    trace_template = "memoria/trace_expansion.html"  # in this package's templates/

    def search_early(self, context: RecallContext) -> dict[str, float]:
        """The relevance core's keyword list: the turns' BM25, which also gives the words term."""
        return keyword_turns(user=context.user, query=context.query, tiers=context.turn_tiers)

    def rank(self, context: RecallContext, query_vector: Sequence[float], early: Any) -> Ranking:
        return memoria_ranking(context, query_vector, params=memoria_params(), sparse=early)

    def explain_item(self, kind: str, ref: str, payload: dict[str, Any]) -> ItemExplanation | None:
        return _explain_item(kind, ref, payload)

    def trace_view(self, payload: dict[str, Any]) -> list[ExpansionRow]:
        return expansion_rows(payload)


def memoria_ranking(context: RecallContext, query_vector: Sequence[float], *, params: MemoriaParams,
                    sparse: dict[str, float] | None = None) -> Ranking:
    user = context.user
    limit = settings.MEMORYOS["MEMORIA_CANDIDATES"]
    found = turn_relevance(user=context.user, query=context.query, query_vector=query_vector, now=context.now,
                           tiers=context.turn_tiers, sparse=sparse, facts=context.facts)
    by_seq = found.page_scores()
    best = sorted(by_seq, key=lambda seq: (-by_seq[seq], seq))[:limit]
    words = found.page_keyword_scores()
    most_words = set(sorted(words, key=lambda seq: (-words[seq], seq))[:limit])
    seq_rows = rows.rows(DialoguePage, ("id", "seq"), equal={"user": user.pk},
                         among={"seq": sorted({*best, *most_words})})
    normalised = found.normalised({seq: by_seq[seq] for seq in best})
    relevance = {str(row.id): normalised[row.seq] for row in seq_rows if row.seq in normalised}
    fulltext = {str(row.id): words[row.seq] for row in seq_rows if row.seq in most_words}
    pages = _pages(user, [*relevance, *fulltext], tiers=context.turn_tiers, fields=PAGE_LIGHT_FIELDS)
    nodes = {node.object_id: node for node in rows.rows(MemoryNode, NODE_FIELDS, equal={
        "user": user.pk, "kind": MemoryNode.Kind.PAGE}, among={"object_id": list(pages)})}
    sonas = _sona_terms(context, nodes.values(), pages)
    candidates = [
        Candidate(cid=str(node.pk), timestamp=pages[page_id].timestamp.timestamp(),
                  cosine=relevance.get(page_id, 0.0), fulltext=fulltext.get(page_id, 0.0),
                  importance=node.importance, sona=sonas.get(node.pk, 0.0))
        for page_id, node in nodes.items()
    ]
    memories: dict[str, Memory] = {str(nodes[pid].pk): _page_memory(nodes[pid], page) for pid, page in pages.items()
                                   if pid in nodes}
    result = memoria_recall(candidates=candidates, now=context.now.timestamp(), params=params,
                            read=_Reader(user, memories))
    _read_texts(user, memories, result.order)
    items = _items(result, memories, params)
    trace = result.trace()
    trace["nodes"] = {node_id: {"kind": memories[node_id].node.kind, "ref": memories[node_id].node.object_id,
                                "cid": memories[node_id].node.cid, "text": memories[node_id].text[:160]}
                      for node_id in result.order}
    trace["candidates"] = len(candidates)
    trace["sona"] = context.sona.name if context.sona is not None else ""
    return Ranking(items=items, trace={"memoria": trace})


def _pages(user, ids: Iterable[str], *, tiers: Sequence[str],
           fields: Sequence[str] = (*PAGE_FIELDS, "sona_id", "status")) -> dict[str, DialoguePage]:
    """The user's complete pages among `ids` in the tiers, neither repressed nor in a repressed segment."""
    found = owned(DialoguePage, fields, list(dict.fromkeys(ids)), user, status=PageStatus.COMPLETE)
    found = {key: page for key, page in found.items() if page.tier in tiers}
    hidden = {segment.id for segment in rows.rows(
        Segment, ("id",), equal={"user": user.pk, "repressed": True},
        among={"id": list({p.segment_id for p in found.values() if p.segment_id})})}
    return {key: page for key, page in found.items() if page.segment_id not in hidden}


def _page_memory(node: MemoryNode, page: DialoguePage) -> Memory:
    """A page's memory; its text and source ids only when the row was read with them (the
    candidates are read without, and only those recalled are read again: _read_texts)."""
    if "query" in page.get_deferred_fields():
        return Memory(node=node, text="", timestamp=page.timestamp)
    return Memory(node=node, text=page.recall_text, timestamp=page.timestamp,
                  source_ids=tuple(page.source_ids))


def _read_texts(user, memories: dict[str, Memory], order: Sequence[str]) -> None:
    """Fill in the text of the recalled pages that were read as candidates without it."""
    missing = {memories[node_id].node.object_id: node_id for node_id in order
               if not memories[node_id].text and memories[node_id].node.kind == MemoryNode.Kind.PAGE}
    for page_id, page in rows.by_pk(DialoguePage, list(missing), PAGE_FIELDS).items():
        if page.user_id == user.pk:
            memories[missing[page_id]] = _page_memory(memories[missing[page_id]].node, page)


def sona_vector(sona: Sona) -> tuple[float, ...]:
    """The sona's stored name embedding, or (a sona made before names were embedded, or whose
    embedding failed) its name embedded now, once per name and embedder in this process."""
    stored = bytes_to_vector(sona.name_embedding)
    return stored or name_vector(configured.embedder(), sona.name)


def _sona_terms(context: RecallContext, nodes: Iterable[MemoryNode], pages: Mapping[str, DialoguePage]
                ) -> dict[int, float]:
    """Node pk -> the best cosine between the current sona's name and those of the node's sonas.

    Two reads (memberships, then the sonas named), and one cosine per sona rather than per node:
    a node's term is the best of its sonas' (sona_similarity over one sona each, then the best)."""
    if context.sona is None:
        return {}
    nodes = list(nodes)
    member_of: dict[int, set] = {node.pk: set() for node in nodes}
    for node_id, sona_id in rows.values(SonaMembership, ("node", "sona"), equal={},
                                        among={"node": list(member_of)}):
        member_of[node_id].add(sona_id)
    for node in nodes:  # a page with no membership row yet belongs to the sona it happened in
        if not member_of[node.pk] and pages[node.object_id].sona_id:
            member_of[node.pk].add(pages[node.object_id].sona_id)
    wanted = set().union(*member_of.values()) if member_of else set()
    vectors = {sona.pk: sona_vector(sona) for sona in rows.rows(
        Sona, ("id", "user", "name", "name_embedding"), equal={"user": context.user.pk}, among={"id": list(wanted)})}
    current = vectors.get(context.sona.pk) or sona_vector(context.sona)
    alike = {sona_id: sona_similarity(current=current, memory_sonas=[vector]) for sona_id, vector in vectors.items()}
    return {node_id: max((alike[s] for s in ids if s in alike), default=0.0) for node_id, ids in member_of.items()}


class _Reader:
    """The expansion's `read`: nodes by id with their dependencies, one batch of queries per call,
    only those this user may recall (module docstring)."""

    def __init__(self, user, known: dict[str, Memory]) -> None:
        self.user = user
        self.known = known  # every node read so far (the candidates to start with)

    def __call__(self, ids: frozenset[str]) -> dict[str, GraphNode]:
        wanted = [int(i) for i in ids if i.isdigit()]
        unknown = [i for i in wanted if str(i) not in self.known]
        if unknown:
            self.known.update(memories_of(self.user, rows.rows(MemoryNode, NODE_FIELDS, equal={"user": self.user.pk},
                                                               among={"id": unknown})))
        visible = [i for i in wanted if str(i) in self.known]
        dependencies: dict[str, dict[str, Dependency]] = {str(i): {} for i in visible}
        for edge in rows.rows(MemoryEdge, ("id", "source_id", "target_id", "relation", "weight"),
                              equal={"user": self.user.pk}, among={"source": visible}):
            weight = edge.weight
            if math.isfinite(weight) and 0 < weight <= 1:
                dependencies[str(edge.source_id)][f"{edge.relation}:{edge.target_id}"] = Dependency(
                    weight=weight, cid=str(edge.target_id))
        return {node_id: GraphNode(timestamp=self.known[node_id].seconds, dependencies=deps)
                for node_id, deps in dependencies.items()}


def memories_of(user, nodes: Iterable[MemoryNode]) -> dict[str, Memory]:
    """The nodes this recall may use, by id, each with its row's text: not repressed, not an old
    version ("<id>@<cid>"), not trait evidence."""
    by_kind: dict[str, dict[str, MemoryNode]] = {}
    for node in nodes:
        if node.kind in RECALLABLE_KINDS and "@" not in node.object_id:
            by_kind.setdefault(node.kind, {})[node.object_id] = node
    found: dict[str, Memory] = {}
    pages = by_kind.get(MemoryNode.Kind.PAGE, {})
    for page_id, page in _pages(user, pages, tiers=(Tier.STM, Tier.MTM, Tier.ARCHIVED)).items():
        found[str(pages[page_id].pk)] = _page_memory(pages[page_id], page)
    segments = by_kind.get(MemoryNode.Kind.SEGMENT, {})
    for segment in rows.rows(Segment, ("id", "summary", "created_at"),
                             equal={"user": user.pk, "repressed": False, "status": Segment.Status.ACTIVE},
                             among={"id": list(segments)}):
        node = segments[str(segment.id)]
        found[str(node.pk)] = Memory(node=node, text=f"Topic: {segment.summary}", timestamp=segment.created_at)
    for kind, model in ((MemoryNode.Kind.FACT, KnowledgeFact), (MemoryNode.Kind.AGENT_TRAIT, AgentTrait)):
        entries = by_kind.get(kind, {})
        # (their keys are UUIDs: a filter on digits once kept every fact and trait out of the expansion)
        for entry in rows.rows(model, ("id", "text", "timestamp", "source_ids"),
                               equal={"user": user.pk, "repressed": False}, among={"id": list(entries)}):
            node = entries[str(entry.pk)]
            found[str(node.pk)] = Memory(node=node, text=entry.text, timestamp=entry.timestamp,
                                         source_ids=tuple(entry.source_ids))
    return found


def _items(result, memories: Mapping[str, Memory], params: MemoriaParams) -> list[RecalledItem]:
    """The recalled memories in the context's order (dependencies first, then older first). A score
    is the budget's equivalent (budget · max_score / seed_budget): a seed's own score, and for a
    memory pulled in, the score a seed would need to give it that budget."""
    seeds = {scored.candidate.cid: scored for scored in result.seeds}
    expansion = result.expansion
    items = []
    for node_id in result.order:
        memory = memories[node_id]
        budget = expansion.budgets[node_id]
        breakdown: dict[str, Any] = {"node": node_id, "node_kind": memory.node.kind, "budget": round(budget, 4)}
        if node_id in seeds:
            breakdown.update({name: round(value, 4) for name, value in seeds[node_id].breakdown.as_dict().items()})
        if node_id in expansion.pulled_by:
            breakdown["pulled_by"] = expansion.pulled_by[node_id].source
        items.append(RecalledItem(
            kind=ITEM_KINDS.get(memory.node.kind, "memoria_note"), ref=memory.node.object_id, text=memory.text,
            score=budget * params.max_score / params.seed_budget, timestamp=memory.timestamp,
            source_ids=memory.source_ids, breakdown=breakdown))
    return items


# ------------------------------------------------------------------ read back from a stored trace

def trace_entries(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The policy's part of a stored trace's payload ({} for another policy's trace)."""
    return payload.get(TRACE_KEY) or {}


def _explain_item(kind: str, ref: str, payload: Mapping[str, Any]) -> ItemExplanation | None:
    """A memory Memoria recalled: its terms when it was a seed, its budget, and which memory pulled it in."""
    if kind not in MemoriaPolicy.item_kinds:
        return None
    memoria = trace_entries(payload)
    nodes = memoria.get("nodes", {})
    node_id = next((node for node, entry in nodes.items() if entry.get("ref") == ref), None)
    if node_id is None:
        return None
    seed = next((entry for entry in memoria.get("seeds", []) if entry.get("cid") == node_id), None)
    scores = ([(label, round(float(seed[name]), 4)) for name, label in SCORE_LABELS if name in seed]
              if seed is not None else [])
    expansion = memoria.get("expansion", {})
    scores.append(("budget", round(float(expansion.get("budgets", {}).get(node_id, 0.0)), 4)))
    pull = expansion.get("pulled_by", {}).get(node_id)
    why = []
    if pull is not None:
        source = nodes.get(pull.get("source"), {}).get("text", "another memory")
        why = [f"Pulled in as a dependency ({str(pull.get('name', '')).split(':')[0]}, weight "
               f"{float(pull.get('weight', 0)):.2f}) of “{source[:80]}”."]
    return ItemExplanation(scores=scores, why=why)


@dataclass(frozen=True)
class ExpansionRow:
    """One memory of a Memoria recall, in the order the prompt showed it: why it was there."""

    kind: str
    ref: str
    text: str
    budget: float
    seed_score: float | None  # its score when it was a seed (a top-k hit), else None
    pulled_by: str  # the text of the memory whose dependency pulled it in ("" for a seed)
    relation: str
    weight: float | None


def expansion_rows(payload: Mapping[str, Any]) -> list[ExpansionRow]:
    """The expansion as stored on a trace: each included memory (dependencies first) with its budget,
    and the seed or the dependency edge that brought it in."""
    memoria = trace_entries(payload)
    nodes = memoria.get("nodes") or {}
    expansion = memoria.get("expansion") or {}
    budgets = expansion.get("budgets") or {}
    pulls = expansion.get("pulled_by") or {}
    seeds = {seed.get("cid"): seed for seed in memoria.get("seeds") or []}
    found = []
    for node_id in expansion.get("order") or []:
        node, pull = nodes.get(node_id, {}), pulls.get(node_id) or {}
        seed = seeds.get(node_id)
        source = nodes.get(pull.get("source"), {}) if pull else {}
        found.append(ExpansionRow(
            kind=str(node.get("kind", "")), ref=str(node.get("ref", "")), text=str(node.get("text", "")),
            budget=float(budgets.get(node_id, 0.0)),
            seed_score=float(seed["score"]) if seed and "score" in seed else None,
            pulled_by=str(source.get("text", "another memory")) if pull else "",
            relation=str(pull.get("name", "")).split(":")[0].split("/")[0] if pull else "",
            weight=float(pull["weight"]) if pull and "weight" in pull else None))
    return found
