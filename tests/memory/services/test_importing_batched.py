"""A whole file imported in batches (one transaction per batch, the graph re-addressed once in
it) ends in the state a turn-by-turn import ends in: tiers, segments and their heat, facts,
traits, CIDs, edges and events (ids compared through the CIDs of what they name)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory.adapters import configured
from memory.formats.locomo import parse_sample
from memory.models import DialoguePage, LifecycleEvent, MemoryAlias, MemoryEdge, MemoryNode, Segment, UserMemoryState
from memory.services.importing import conversation_import
from persona.models import AgentTrait, KnowledgeFact, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")

TOPICS = [
    ("hiking", "I hiked the ridge trail with my sister Lena on Saturday; my new boots held up on the summit.",
     "The ridge trail sounds great. Did Lena like the summit view?"),
    ("cooking", "I baked sourdough again and tried a mushroom risotto; I love cooking for my friends.",
     "Sourdough and risotto! Which one did your friends like more?"),
    ("guitar", "My guitar teacher gave me new chords for the concert; I practise every evening.",
     "Practising every evening will pay off at the concert."),
    ("taxes", "The tax office sent a letter about my mortgage deduction; the accountant meets me Monday.",
     "A mortgage deduction letter is worth checking with the accountant."),
    ("puppy", "Our puppy Biscuit chewed the leash again, so the vet suggested obedience classes.",
     "Obedience classes could help Biscuit with the leash."),
]


def tiny_locomo(sessions: int = 4, pairs: int = 7) -> dict[str, Any]:
    """A LoCoMo-format conversation that returns to its topics, so pages merge into segments."""
    conversation: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for s in range(1, sessions + 1):
        conversation[f"session_{s}_date_time"] = f"{s}:00 pm on {s + 3} May, 2023"
        turns = []
        for n in range(pairs):
            topic, query, response = TOPICS[(n // 2 + s) % len(TOPICS)]
            turns += [{"speaker": "Ana", "dia_id": f"D{s}:{2 * n + 1}", "text": f"{query} (part {s}.{n})"},
                      {"speaker": "Ben", "dia_id": f"D{s}:{2 * n + 2}", "text": f"{response} More {topic}?"}]
        conversation[f"session_{s}"] = turns
    return {"sample_id": "tiny-batched", "conversation": conversation, "qa": []}


def end_state(user) -> dict[str, Any]:
    """What a user's memory holds, with every row id replaced by its content id."""
    names: dict[str, str] = {}
    for model in (DialoguePage, Segment, KnowledgeFact, AgentTrait):
        names.update((str(pk), cid) for pk, cid in model.objects.filter(user=user).values_list("pk", "cid"))

    def named(value):
        if isinstance(value, dict):
            return {k: named(v) for k, v in value.items()}
        if isinstance(value, list):
            return [named(v) for v in value]
        return names.get(str(value), value) if isinstance(value, str | uuid.UUID) else value

    pages = DialoguePage.objects.filter(user=user).order_by("seq").values(
        "seq", "cid", "tier", "segment__cid", "chain_id", "previous__cid", "meta_chain", "keywords", "status",
        "embedding", "turns_indexed", "chain_done")
    segments = Segment.objects.filter(user=user).order_by("cid").values(
        "cid", "status", "summary", "keywords", "embedding", "page_count", "n_visit", "l_interaction",
        "last_access", "promoted_count", "repressed", "pinned")
    return {
        "pages": [named(dict(p)) for p in pages],
        "segments": list(segments),
        "facts": sorted((f.cid, f.text, f.timestamp, named(str(f.segment_id)), named(f.source_page_ids))
                        for f in KnowledgeFact.objects.filter(user=user)),
        "agent_traits": sorted((t.cid, t.text, t.timestamp) for t in AgentTrait.objects.filter(user=user)),
        "traits": sorted((t.key, t.score, str(named(t.evidence))) for t in UserTrait.objects.filter(user=user)),
        "nodes": sorted((n.kind, n.cid, bytes(n.block)) for n in MemoryNode.objects.filter(user=user)),
        "edges": sorted((e.source.cid, e.relation, e.weight, e.target.cid)
                        for e in MemoryEdge.objects.filter(user=user).select_related("source", "target")),
        "events": sorted((e.kind, e.occurred_at, named(e.subject_id), str(named(e.payload)))
                         for e in LifecycleEvent.objects.filter(user=user)),
        "next_seq": UserMemoryState.objects.get(user=user).next_seq,
        "points": configured.vector_index().count(user_id=str(user.pk)),
    }


def test_a_batched_import_ends_in_the_state_of_a_turn_by_turn_import(make_user, settings):
    # Small tiers, so a short file moves pages, forms and evicts segments and promotes hot ones.
    settings.MEMORYOS = {**settings.MEMORYOS, "STM_CAPACITY": 3, "MTM_CAPACITY": 2, "HEAT_THRESHOLD": 2.0}
    conversation = parse_sample(tiny_locomo(), 0)
    by_turn, batched = make_user(), make_user()

    conversation_import(user=by_turn, conversation=conversation, batched=False)
    report = conversation_import(user=batched, conversation=conversation, batched=True)

    expected, got = end_state(by_turn), end_state(batched)
    assert report.added == report.pages == len(expected["pages"]) == 28
    # the file went through every tier and step
    assert {p["tier"] for p in got["pages"]} == {"stm", "mtm", "archived"}
    kinds = {event[0] for event in got["events"]}
    assert {"moved_to_mtm", "segment_created", "segment_merged", "segment_evicted", "segment_promoted",
            "fact_added"} <= kinds
    assert got["facts"] and got["edges"] and got["nodes"]
    for part in expected:
        assert got[part] == expected[part], part
    # only the CIDs nodes passed through between two pages of a batch are not kept as aliases
    assert MemoryAlias.objects.filter(user=batched).count() < MemoryAlias.objects.filter(user=by_turn).count()


def test_a_batched_import_run_again_adds_nothing(make_user):
    conversation = parse_sample(tiny_locomo(sessions=2, pairs=4), 0)
    user = make_user()
    conversation_import(user=user, conversation=conversation, batched=True)
    before = end_state(user)
    report = conversation_import(user=user, conversation=conversation, batched=True)
    assert report.added == 0 and report.already == report.pages
    assert end_state(user) == before
