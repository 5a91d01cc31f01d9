"""The short-term and mid-term tiers as the inspector reads them: STM's slots, segments with their
heat, one segment's detail, and segments' names."""

from __future__ import annotations

import uuid

import pytest

from memory.models import Segment, Tier
from memory.selectors.segment_names import segment_label_of, segment_names
from memory.selectors.tiers import segment_detail, segment_labels, segments_sorted, stm_pages, stm_slots
from memory.services.pages import page_start
from memory.services.turns import page_complete

pytestmark = pytest.mark.usefixtures("memory_env")


def say(user, query: str, response: str = "Noted."):
    return page_complete(page=page_start(user=user, query=query), response=response, reply_model="test")


def test_stm_is_read_as_its_capacitys_slots_oldest_first(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 4}
    user = make_user()
    first, second = say(user, "First message."), say(user, "Second message.")
    slots = stm_slots(user=user)
    assert [slot.position for slot in slots] == [1, 2, 3, 4]
    assert [slot.page for slot in slots] == [first, second, None, None]
    assert slots[1].previous in (None, first)  # the chain's link, when the two belong together
    assert stm_pages(user=user) == [first, second]
    assert stm_slots(user=make_user())[0].page is None


def test_segments_are_listed_with_their_heat_sorted_and_filtered(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    for text in ("I repair old bicycles in my garage.", "My garage bicycles need new tyres.",
                 "Quantum physics lectures fascinate me.", "Closing line."):
        say(user, text)
    rows = segments_sorted(user=user)
    assert rows and all(row.segment.user_id == user.pk for row in rows)
    assert [row.heat for row in rows] == sorted((row.heat for row in rows), reverse=True)
    assert all(row.heat == pytest.approx(row.visits + row.interaction + row.recency) for row in rows)
    assert all(0.0 < row.recency <= 1.0 for row in rows)  # γ·exp(−Δt/μ) with γ = 1, just accessed
    by_pages = segments_sorted(user=user, sort="pages", descending=False)
    assert [row.segment.page_count for row in by_pages] == sorted(row.segment.page_count for row in by_pages)
    ids = [row.segment.id for row in rows]
    assert [row.segment.id for row in segments_sorted(user=user, sort="no-such-sort")] == ids  # heat's order
    assert segments_sorted(user=user, query="zzzz-nothing") == []
    assert segments_sorted(user=user, status=Segment.Status.EVICTED) == []
    assert segments_sorted(user=make_user()) == []


def test_a_segments_detail_has_its_pages_and_events_and_only_for_its_owner(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    say(user, "I repair old bicycles in my garage.")
    say(user, "Closing line.")
    segment = Segment.objects.get(user=user)
    detail = segment_detail(user=user, segment_id=segment.id)
    assert [page.query for page in detail.pages] == ["I repair old bicycles in my garage."]
    assert all(page.tier == Tier.MTM for page in detail.pages)
    assert any(event.subject == str(segment.id) for event in detail.events)
    assert detail.row.segment == segment and detail.row.label.endswith(str(segment.id)[:6])
    assert segment_detail(user=make_user(), segment_id=segment.id) is None
    assert segment_detail(user=user, segment_id=uuid.uuid4()) is None


def test_every_segment_has_a_name_and_a_label(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    say(user, "I repair old bicycles in my garage.")
    say(user, "Closing line.")
    segment = Segment.objects.get(user=user)
    names = segment_names(user=user)
    assert set(names) == {str(segment.id)}
    assert names[str(segment.id)].name  # named from its pages' words
    assert segment_labels(user=user) == {str(segment.id): segment_label_of(names, str(segment.id))}
    assert segment_label_of(names, "0123456789") == "(no keywords) · 012345"
