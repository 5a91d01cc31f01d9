"""The demo conversation MemoryOS ships: its shape, and what replaying it yields in every tier."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

import memory.formats
from memory.formats.locomo import Conversation, load_conversations
from memory.models import DialoguePage, PageStatus, Segment
from memory.selectors.stats import memory_stats
from memory.services.importing import conversation_import
from persona.models import AgentTrait, KnowledgeFact, UserTrait

DEMO = Path(memory.formats.__file__).resolve().parent / "demo" / "demo_conversation.json"
STM_CAPACITY = 7


def demo() -> Conversation:
    (conversation,) = load_conversations(DEMO)
    return conversation


def turn_texts(conversation: Conversation) -> dict[str, tuple[str, str]]:
    return {t.dia_id: (t.speaker, t.text) for _, _, turns in conversation.sessions for t in turns}


def test_the_demo_is_one_alternating_conversation_over_weeks():
    conversation = demo()
    assert (conversation.sample_id, conversation.speaker_a, conversation.speaker_b) == ("demo", "Maya", "Sol")
    assert 10 <= len(conversation.sessions) <= 16 and 150 <= conversation.turn_count <= 300
    for _, _, turns in conversation.sessions:
        assert turns[0].speaker == "Maya"  # the user opens: each page is her message and Sol's reply
        assert all(a.speaker != b.speaker for a, b in zip(turns, turns[1:], strict=False))
    dates = [date for _, date, _ in conversation.sessions]
    gaps = {(later - earlier).days for earlier, later in zip(dates, dates[1:], strict=False)}
    assert min(gaps) >= 1 and len(gaps) > 2  # days apart, irregularly
    assert dates[-1] - dates[0] > timedelta(weeks=6)


def test_every_question_has_evidence_in_the_conversation():
    conversation = demo()
    said = turn_texts(conversation)
    assert 10 <= len(conversation.qa) <= 20
    for qa in conversation.qa:
        assert qa["answer"] and qa["evidence"], qa["question"]
        assert set(qa["evidence"]) <= said.keys(), qa["question"]
    categories = Counter(qa["category"] for qa in conversation.qa)
    assert categories[4] >= 4 and categories[2] >= 2 and categories[1] >= 1  # single-hop, temporal, multi-hop


@pytest.mark.parametrize(("dia_id", "offset_days", "answer_date"), [
    ("D3:1", -3, "8 March 2025"),     # "Last Saturday", said on Tuesday 11 March
    ("D6:1", -2, "25 March 2025"),    # "on Tuesday", said on Thursday 27 March
    ("D9:1", -1, "20 April 2025"),    # "Yesterday", said on Easter Monday
    ("D15:1", -1, "31 May 2025"),     # "Yesterday morning", said on Sunday 1 June
])
def test_relative_dates_point_at_the_days_the_temporal_answers_give(dia_id, offset_days, answer_date):
    conversation = demo()
    session = int(dia_id[1:].split(":")[0])
    said_on = next(date for number, date, _ in conversation.sessions if number == session)
    meant = said_on + timedelta(days=offset_days)
    assert f"{meant.day} {meant:%B %Y}" == answer_date
    (qa,) = [qa for qa in conversation.qa if qa["category"] == 2 and dia_id in qa["evidence"]]
    assert answer_date in qa["answer"]


def fact_turn(fact: KnowledgeFact, said: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """The turn a fact was stated in: the page's user turn (its first source id)."""
    return said[fact.source_ids[0]]


@pytest.mark.slow
@pytest.mark.real_adapters  # how many segments grow hot enough to promote is MiniLM's topic grouping
def test_replaying_the_demo_fills_every_tier(make_user, memory_env):
    conversation = demo()
    said = turn_texts(conversation)
    user = make_user("demo")
    report = conversation_import(user=user, conversation=conversation)
    stats = memory_stats(user=user)

    assert report.turns == conversation.turn_count and stats["total_pages"] == report.pages
    assert stats["stm_pages"] == STM_CAPACITY and stats["mtm_pages"] == report.pages - STM_CAPACITY
    assert not DialoguePage.objects.filter(user=user).exclude(status=PageStatus.COMPLETE).exists()
    assert stats["mtm_segments"] >= 10 and stats["promoted_segments"] >= 3
    assert stats["kb_facts"] >= 10 and stats["user_traits"] >= 8 and stats["agent_traits"] >= 3

    # The recurring threads come back across sessions and are what gets promoted.
    promoted = Segment.objects.filter(user=user, promoted_count__gt=0)
    sessions_of = {s.id: {p.source_ids[0].split(":")[0] for p in s.pages.all()} for s in promoted}
    keywords = {word for s in promoted for word in s.keywords}
    assert {"kittiwake", "porto"} <= keywords
    assert max(len(sessions) for sessions in sessions_of.values()) >= 4
    assert Segment.objects.filter(user=user, promoted_count=0, page_count__lte=2).exists()  # small talk

    facts = {f.text: f for f in KnowledgeFact.objects.filter(user=user)}
    assert "User works as a hospital pharmacist" in facts
    assert "User is allergic to shellfish" in facts
    assert "I work as a hospital pharmacist" in fact_turn(facts["User works as a hospital pharmacist"], said)[1]
    assert "I'm allergic to shellfish" in fact_turn(facts["User is allergic to shellfish"], said)[1]
    assert all(fact_turn(f, said)[0] == "Maya" for f in facts.values())  # facts are the user's own words

    traits = {t.key: t.score for t in UserTrait.objects.filter(user=user, score__gt=0)}
    assert traits["fitness_interest"] == max(traits.values())  # ten weeks of training talk
    assert traits["family_concern"] > 0.5
    agent = [t.text for t in AgentTrait.objects.filter(user=user)]
    assert any(text.startswith("Assistant will remind the user") for text in agent)
    assert any(text.startswith("Assistant suggested") for text in agent)
