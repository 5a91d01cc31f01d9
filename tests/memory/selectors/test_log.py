"""The replay rebuilt from the lifecycle log equals what the database holds: at the end and at
chosen events of a conversation in the LoCoMo format, with evictions, promotions, FIFO drops and visits."""

from __future__ import annotations

import dataclasses

import pytest

from memory.formats.locomo import load_conversations
from memory.models import DialoguePage, LifecycleEvent, Segment, Tier
from memory.selectors.log import event_log, event_log_forget_cache, replay_of
from memory.services.importing import conversation_import
from memory.services.recall import recall_for_query
from persona.models import AgentTrait, KnowledgeFact, UserTrait
from tests.data import DEMO

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("memory_env")]


def database_state(user) -> dict:
    pages = DialoguePage.objects.filter(user=user)
    active = Segment.objects.filter(user=user, status=Segment.Status.ACTIVE)
    return {
        "stm": [str(i) for i in pages.filter(tier=Tier.STM).order_by("seq").values_list("id", flat=True)],
        "mtm": {str(s.id): ({str(p) for p in pages.filter(segment=s, tier=Tier.MTM).values_list("id", flat=True)},
                            s.n_visit, s.l_interaction, s.last_access, s.promoted_count) for s in active},
        "evicted": {str(i) for i in Segment.objects.filter(user=user, status=Segment.Status.EVICTED)
                    .values_list("id", flat=True)},
        "archived": {str(i) for i in pages.filter(tier=Tier.ARCHIVED).values_list("id", flat=True)},
        "facts": {str(f.id): f.text for f in KnowledgeFact.objects.filter(user=user)},
        "agent_traits": {str(a.id): a.text for a in AgentTrait.objects.filter(user=user)},
        "traits": {t.key: pytest.approx(t.score, abs=1e-4) for t in UserTrait.objects.filter(user=user)},
    }


def replayed_state(state) -> dict:
    return {
        "stm": list(state.stm),
        "mtm": {sid: (set(s.pages), s.n_visit, s.l_interaction, s.last_access, s.promotions)
                for sid, s in state.mtm.items()},
        "evicted": set(state.evicted), "archived": set(state.archived), "facts": dict(state.facts),
        "agent_traits": dict(state.agent_traits), "traits": dict(state.traits),
    }


def test_the_replay_of_a_locomo_conversation_equals_the_database(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 4, "MTM_CAPACITY": 4, "HEAT_THRESHOLD": 2.5,
                           "KB_CAPACITY": 3, "AGENT_TRAIT_CAPACITY": 2}
    event_log_forget_cache()
    conversation = load_conversations(DEMO)[0]
    user = make_user()
    checkpoints = []
    for start in range(0, 6, 2):  # three chunks of two sessions, a recall (visits) after each
        chunk = dataclasses.replace(conversation, sessions=conversation.sessions[start:start + 2])
        conversation_import(user=user, conversation=chunk)
        recall_for_query(user=user, query="What did Maya say about her Portuguese class?")
        checkpoints.append((LifecycleEvent.objects.filter(user=user).count(), database_state(user)))
    replay = replay_of(user=user)
    assert len(replay) == LifecycleEvent.objects.filter(user=user).count()
    for count, expected in checkpoints:
        assert replayed_state(replay.state_after(count)) == expected, f"after {count} events"
    end = checkpoints[-1][1]
    # The run exercised what the replay must get right.
    kinds = {e.kind for e in event_log(user=user)}
    assert {"segment_evicted", "segment_promoted", "fact_dropped", "segments_visited", "segment_merged"} <= kinds
    assert end["evicted"] and end["archived"] and len(end["facts"]) >= 3 and end["stm"]


def test_imported_events_carry_the_conversations_time(make_user):
    conversation = load_conversations(DEMO)[0]
    chunk = dataclasses.replace(conversation, sessions=conversation.sessions[:1])
    user = make_user()
    conversation_import(user=user, conversation=chunk)
    added = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.PAGE_ADDED).order_by("id")
    pages = DialoguePage.objects.filter(user=user).order_by("seq")
    assert [e.occurred_at for e in added] == [p.timestamp for p in pages]
    assert all(e.occurred_at.year == 2025 and e.created_at.year >= 2026 for e in added)
    moved = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.MOVED_TO_MTM).first()
    assert moved is not None and moved.occurred_at.year == 2025  # maintenance ran at the conversation's time
