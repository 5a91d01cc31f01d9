"""The chat's history and the counts of one user's memory, read after real turns."""

from __future__ import annotations

import pytest

from memory.selectors.chat import chat_history
from memory.selectors.stats import memory_stats, overview
from memory.services.turns import turn_run
from tests.conftest import stopped_mid_turn

pytestmark = pytest.mark.usefixtures("memory_env")


def test_the_history_is_the_latest_turns_oldest_first_with_the_total(make_user):
    user, other = make_user(), make_user()
    for n in range(1, 5):
        turn_run(user=user, message=f"Message number {n}.")
    turn_run(user=other, message="Someone else's turn.")
    pages, total = chat_history(user=user, limit=3)
    assert total == 4
    assert [page.query for page in pages] == ["Message number 2.", "Message number 3.", "Message number 4."]
    assert all(page.has_trace for page in pages)  # every turn recorded its recall


def test_the_counts_follow_the_tiers_and_leave_other_users_out(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 2}
    user, other = make_user(), make_user()
    for text in ("I grow tomatoes on my balcony.", "The tomatoes need water daily.", "I bought a bike.",
                 "The bike is red."):
        turn_run(user=user, message=text)
    turn_run(user=other, message="Not counted for the first user.")
    stopped_mid_turn(user, "A turn that never got its reply.", minutes_ago=1)

    stats = memory_stats(user=user)
    assert stats["user"] == user.username
    assert stats["total_pages"] == 5 and stats["pending_pages"] == 1
    assert stats["stm_pages"] == 2  # the capacity: older pages moved on to mid-term memory
    assert stats["mtm_pages"] == 2 and stats["archived_pages"] == 0
    assert stats["mtm_segments"] >= 1 and stats["traces"] == 4
    assert stats["events"] > 0

    shown = overview(user=user)
    assert shown.pages == 5 and shown.pending == 1
    assert shown.counts["STM pages"] == (2, 2)
    assert shown.counts["MTM segments"][0] == stats["mtm_segments"]
    assert shown.first_at is not None and shown.first_at <= shown.last_at
    assert len(shown.recent_events) <= 12 and shown.recent_events[0].id > shown.recent_events[-1].id
    assert memory_stats(user=other)["total_pages"] == 1


def test_a_user_without_memory_counts_zero(make_user):
    stats = memory_stats(user=make_user())
    assert {key: value for key, value in stats.items() if key != "user"} == dict.fromkeys(
        (key for key in stats if key != "user"), 0)
    shown = overview(user=make_user())
    assert shown.state is None and shown.first_at is None and shown.recent_events == []


def test_files_are_listed_newest_first_by_page_and_for_their_owner_only(make_user):
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import AttachedFile
    from memory.selectors.files import attached_files, page_attachments

    user, other = make_user(), make_user()
    first = turn_run(user=user, message="Here are my notes.").page
    second = turn_run(user=user, message="And a photo.").page
    now = timezone.now()

    def attach(owner, page, name: str, minutes_ago: int) -> AttachedFile:
        return AttachedFile.objects.create(user=owner, page=page, content_cid=f"cid-{name}", name=name,
                                           media_type="text/plain", size=3,
                                           created_at=now - timedelta(minutes=minutes_ago))

    attach(user, first, "b-notes.txt", 5)
    attach(user, first, "a-notes.txt", 5)
    attach(user, second, "photo.txt", 1)
    attach(user, None, "waiting.txt", 0)  # uploaded, no turn yet
    attach(other, None, "theirs.txt", 0)
    assert [row.name for row in attached_files(user=user)] == ["waiting.txt", "photo.txt", "a-notes.txt",
                                                               "b-notes.txt"]
    assert [row.name for row in attached_files(user=user, page_id=first.id)] == ["a-notes.txt", "b-notes.txt"]
    by_page = page_attachments(user=user, page_ids=[first.id, second.id])
    assert {page: [row.name for row in rows] for page, rows in by_page.items()} == {
        str(first.id): ["a-notes.txt", "b-notes.txt"], str(second.id): ["photo.txt"]}
    assert page_attachments(user=other, page_ids=[first.id]) == {}
