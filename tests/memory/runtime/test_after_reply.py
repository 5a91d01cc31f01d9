"""The work after a reply yields to replies: the in-process lane, and Celery workers on Redis."""

from __future__ import annotations

import gc
import os
import threading
import time
import uuid

import pytest
from django.db import connection

from memory.models import DialoguePage, PageStatus, Segment, Tier, UserMemoryState
from memory.runtime import after_reply, due_work
from memory.runtime.lane import RepliesUnderWay, lane, replies_under_way
from memory.services import maintenance, turns
from memory.services.maintenance import maintenance_run
from memory.services.turns import turn_finish, turn_prepare, turn_reply, turn_run
from tests.conftest import redis_available
from tests.waiting import eventually

MESSAGES = ("I adopted a puppy named Max last week.", "Max the puppy chewed my shoes again.",
            "My quarterly tax filing is due on Friday.", "I bought a violin for my lessons.")


def tune(settings, **params):
    settings.MEMORYOS = {**settings.MEMORYOS, **params}


def memory_shape(user) -> dict:
    """What maintenance decides, without ids: each page's tier and chain, the segments' pages."""
    pages = list(DialoguePage.objects.filter(user=user).order_by("seq"))
    segment_number: dict = {}
    for page in pages:
        if page.segment_id is not None:
            segment_number.setdefault(page.segment_id, len(segment_number))
    chain_start = {page.id: page.seq for page in pages}
    return {
        "pages": [(p.seq, p.tier, p.status, p.chain_done, segment_number.get(p.segment_id),
                   chain_start.get(p.chain_id)) for p in pages],
        "segments": sorted(sorted(s.keywords) for s in Segment.objects.filter(user=user)),
        "due": UserMemoryState.objects.get(user=user).maintenance_due,
    }


def store_turns(user, messages=MESSAGES) -> None:
    for message in messages:
        turn_run(user=user, message=message)


# --- the lane: one process, no Redis ------------------------------------------------------------

@pytest.fixture
def in_process_lane(memory_env, monkeypatch):
    """MAINTENANCE_MODE=thread; returns the order in which replies were stored and maintenance ran."""
    tune(memory_env, MAINTENANCE_MODE="thread", STM_CAPACITY=1, MAINTENANCE_MAX_DEFER_S=60.0)
    order: list[tuple[str, int]] = []
    store, run = turns.page_reply_store, after_reply.maintenance_run

    def reply_stored(*, page, **kwargs):
        order.append(("reply", page.user_id))
        return store(page=page, **kwargs)

    def maintained(*, user_id, **kwargs):
        order.append(("maintenance", user_id))
        return run(user_id=user_id, **kwargs)

    monkeypatch.setattr(turns, "page_reply_store", reply_stored)
    monkeypatch.setattr(after_reply, "maintenance_run", maintained)
    yield order
    assert lane.drain(timeout=60)


def test_queued_maintenance_waits_for_the_reply_under_way(in_process_lane, make_user):
    ana, ben = make_user("ana"), make_user("ben")
    bens_turn = turn_prepare(user=ben, message="I adopted a cat named Miso.")  # Ben's reply is under way
    store_turns(ana, MESSAGES[:2])  # Ana's turns end; their maintenance is queued behind Ben's reply

    assert not lane.drain(timeout=0.5)  # queued, not run: a reply is under way
    assert in_process_lane == [("reply", ana.pk), ("reply", ana.pk)]
    assert UserMemoryState.objects.get(user=ana).maintenance_due

    turn_finish(turn=bens_turn, generated=turn_reply(turn=bens_turn))
    assert lane.drain(timeout=60)

    # One run for Ana (her second turn's job joined the queued first), after every reply.
    assert in_process_lane == [("reply", ana.pk), ("reply", ana.pk), ("reply", ben.pk),
                               ("maintenance", ana.pk), ("maintenance", ben.pk)]
    assert [p.tier for p in DialoguePage.objects.filter(user=ana).order_by("seq")] == [Tier.MTM, Tier.STM]
    assert not UserMemoryState.objects.filter(user__in=[ana, ben], maintenance_due=True).exists()


def test_the_lane_ends_with_what_inline_maintenance_gives(in_process_lane, memory_env, make_user):
    laned, inline = make_user("laned"), make_user("inline")
    store_turns(laned)
    assert lane.drain(timeout=60)
    tune(memory_env, MAINTENANCE_MODE="sync")
    store_turns(inline)

    assert memory_shape(laned) == memory_shape(inline)
    assert memory_shape(laned)["pages"][0][1] == Tier.MTM


def test_a_job_waits_no_longer_than_the_longest_deferral(in_process_lane, memory_env, make_user):
    tune(memory_env, MAINTENANCE_MAX_DEFER_S=0.2)
    ana, ben = make_user("ana"), make_user("ben")
    bens_turn = turn_prepare(user=ben, message="I adopted a cat named Miso.")
    store_turns(ana, MESSAGES[:2])

    assert lane.drain(timeout=30)  # a server that never goes quiet still catches up
    assert ("maintenance", ana.pk) in in_process_lane
    assert replies_under_way.count == 1
    turn_finish(turn=bens_turn, generated=turn_reply(turn=bens_turn))
    assert replies_under_way.count == 0


def test_a_turn_dropped_before_its_reply_stops_counting(in_process_lane, make_user):
    user = make_user()
    before = replies_under_way.count
    turn = turn_prepare(user=user, message="I adopted a cat named Miso.")
    assert replies_under_way.count == before + 1
    del turn
    gc.collect()
    assert replies_under_way.count == before


def test_a_refused_message_does_not_count_as_a_reply(in_process_lane, make_user):
    from memory.services.common import MemoryInputError

    with pytest.raises(MemoryInputError):
        turn_prepare(user=make_user(), message="   ")
    assert replies_under_way.count == 0


def test_a_reply_begun_during_the_quiet_spell_keeps_the_lane_waiting():
    replies, events = RepliesUnderWay(), []
    end_first = replies.enter()
    second = []

    def later(delay, what, action):
        timer = threading.Timer(delay, lambda: (action(), events.append(what)))
        timer.start()
        return timer

    timers = [later(0.05, "first ended", end_first),
              later(0.15, "second began", lambda: second.append(replies.enter())),  # inside the quiet spell
              later(0.4, "second ended", lambda: second[0]())]
    assert replies.wait_until_none(deadline=time.monotonic() + 30, quiet_s=0.2)
    events.append("quiet")
    for timer in timers:
        timer.join()

    assert events == ["first ended", "second began", "second ended", "quiet"]
    assert replies.count == 0


def test_waiting_for_quiet_ends_at_the_deadline_while_a_reply_is_under_way():
    replies = RepliesUnderWay()
    end = replies.enter()
    assert not replies.wait_until_none(deadline=time.monotonic() + 0.1, quiet_s=0.05)
    end()
    end()  # a second end does not count twice
    assert replies.count == 0 and replies.wait_until_none(deadline=time.monotonic(), quiet_s=0)


def test_maintenance_pauses_only_between_steps_outside_any_transaction(memory_env, make_user):
    tune(memory_env, STM_CAPACITY=1, MAINTENANCE_MODE="off")
    user = make_user()
    store_turns(user)
    seen: list[tuple[bool, int]] = []

    def pause():
        seen.append((connection.in_atomic_block, DialoguePage.objects.filter(user=user, tier=Tier.MTM).count()))

    maintenance_run(user_id=user.pk, pause=pause)

    assert len(seen) >= 4
    assert not any(in_transaction for in_transaction, _ in seen)
    assert seen[0][1] == 0 and seen[-1][1] == 3  # before the pages moved, and after


def test_a_reply_stored_during_a_run_keeps_the_user_due(memory_env, make_user):
    """The run's own job may die with its worker: the flag must outlive it."""
    tune(memory_env, STM_CAPACITY=1, MAINTENANCE_MODE="off")
    user = make_user()
    store_turns(user, MESSAGES[:2])
    stored = []

    def pause():  # once the pages have moved: this run has linked its chains already
        if not stored and DialoguePage.objects.filter(user=user, tier=Tier.MTM).exists():
            stored.append(turn_run(user=user, message=MESSAGES[2]))

    maintenance_run(user_id=user.pk, pause=pause)
    assert UserMemoryState.objects.get(user=user).maintenance_due
    maintenance_run(user_id=user.pk)
    assert not UserMemoryState.objects.get(user=user).maintenance_due


@pytest.fixture
def registered_work():
    """After-reply work registered by name for one test; yields the calls it got."""
    from memory.services.policy_work import register_after_reply, unregister_after_reply

    calls: list[dict] = []

    def work(**kwargs):
        calls.append(kwargs)
        if kwargs["reply"] == "fail":
            raise RuntimeError("the work failed")

    register_after_reply("test_follow_up", work)
    yield calls
    unregister_after_reply("test_follow_up")


@pytest.mark.parametrize("mode", ["thread", "off"])
def test_after_reply_work_runs_by_name_on_the_lane_and_a_failure_is_not_retried(memory_env, registered_work, mode):
    tune(memory_env, MAINTENANCE_MODE=mode, MAINTENANCE_RETRY_S=0.01, MAINTENANCE_QUIET_S=0.0)
    after_reply.after_reply_schedule(name="test_follow_up", user_id=7, trace_id="t1", reply="fine")
    after_reply.after_reply_schedule(name="test_follow_up", user_id=7, trace_id="t2", reply="fail")
    assert lane.drain(timeout=30)
    time.sleep(0.1)  # a retry, if one were scheduled, would be queued by now
    assert lane.drain(timeout=30)
    assert [call["trace_id"] for call in registered_work] == ["t1", "t2"]


def test_after_reply_work_runs_inline_when_maintenance_does(memory_env, registered_work):
    tune(memory_env, MAINTENANCE_MODE="sync")
    after_reply.after_reply_schedule(name="test_follow_up", user_id=7, trace_id="t1", reply="fine")
    assert registered_work == [{"user_id": 7, "trace_id": "t1", "reply": "fine"}]


def test_the_queued_task_names_stay():
    """Messages already queued name their task: renaming one would strand them."""
    from memoryos_site.celery import app

    assert {"memory.maintenance", "memory.after_reply", "memory.memoria_rating"} <= set(app.tasks)


# --- Celery: worker processes apart from the web servers, on the local Redis ---------------------

@pytest.fixture
def celery_queue(memory_env):
    """MAINTENANCE_MODE=celery on a queue of this test's own; yields a function that starts a real
    worker (celery.contrib.testing, in a thread of this process, so that it shares the test's
    database and vector shard)."""
    if not redis_available():
        pytest.skip("needs the Redis server on 127.0.0.1:6379")
    from celery.contrib.testing.worker import start_worker

    from memoryos_site.celery import app

    queue = f"memoryos-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    memory_env.CELERY_TASK_DEFAULT_QUEUE = queue
    tune(memory_env, MAINTENANCE_MODE="celery", STM_CAPACITY=1, MAINTENANCE_RETRY_S=0.05)
    yield lambda: start_worker(app, pool="solo", perform_ping_check=False, queues=[queue], shutdown_timeout=60)
    with app.connection_for_write() as conn:
        conn.default_channel.queue_delete(queue)


def _settled(*users) -> bool:
    return not UserMemoryState.objects.filter(user__in=users, maintenance_due=True).exists()


def test_a_celery_worker_does_the_due_maintenance_with_the_inline_end_state(celery_queue, memory_env, make_user):
    queued, inline = make_user("queued"), make_user("inline")
    with celery_queue():
        store_turns(queued)
        assert eventually(lambda: _settled(queued), timeout=60.0)
    tune(memory_env, MAINTENANCE_MODE="sync")
    store_turns(inline)

    assert memory_shape(queued) == memory_shape(inline)
    assert memory_shape(queued)["pages"][0][1] == Tier.MTM


def test_work_queued_while_no_worker_runs_is_done_when_one_starts(celery_queue, make_user):
    user = make_user()
    store_turns(user, MESSAGES[:3])  # queued in Redis; nobody takes it yet
    assert UserMemoryState.objects.get(user=user).maintenance_due
    assert not DialoguePage.objects.filter(user=user, tier=Tier.MTM).exists()

    with celery_queue():
        assert eventually(lambda: _settled(user), timeout=60.0)
    assert DialoguePage.objects.filter(user=user, tier=Tier.MTM).count() == 2


def test_an_interrupted_task_is_picked_up_again(celery_queue, monkeypatch, make_user):
    user = make_user()
    real_move, calls = maintenance.page_move_to_mtm, []

    def dies_once(**kwargs):
        calls.append(kwargs["page_id"])
        if len(calls) == 1:
            raise RuntimeError("the worker lost the database mid-run")
        return real_move(**kwargs)

    monkeypatch.setattr(maintenance, "page_move_to_mtm", dies_once)
    with celery_queue():
        store_turns(user, MESSAGES[:2])
        assert eventually(lambda: _settled(user), timeout=60.0)

    assert calls[0] == calls[1]  # the same page, moved by the retried task
    assert [p.tier for p in DialoguePage.objects.filter(user=user).order_by("seq")] == [Tier.MTM, Tier.STM]
    assert all(p.status == PageStatus.COMPLETE for p in DialoguePage.objects.filter(user=user))


def test_a_task_lost_with_its_worker_is_queued_again_by_due_work(celery_queue, make_user):
    from memoryos_site.celery import app

    user = make_user()
    store_turns(user, MESSAGES[:2])
    with app.connection_for_write() as conn:  # the queued task is lost (say, Redis lost its data)
        assert conn.default_channel.queue_purge(after_reply_queue()) >= 1

    assert due_work.due_work_dispatch() == 1  # what every web server does as it starts and then and again
    with celery_queue():
        assert eventually(lambda: _settled(user), timeout=60.0)
    assert DialoguePage.objects.filter(user=user, tier=Tier.MTM).count() == 1


def after_reply_queue() -> str:
    from django.conf import settings

    return settings.CELERY_TASK_DEFAULT_QUEUE


def test_a_users_task_touches_only_that_users_memory(celery_queue, memory_env, make_user):
    ana, ben = make_user("ana"), make_user("ben")
    tune(memory_env, MAINTENANCE_MODE="off")
    store_turns(ben, MESSAGES[:3])  # Ben's work is due, and nobody queues it
    bens_memory = memory_shape(ben)
    tune(memory_env, MAINTENANCE_MODE="celery")
    with celery_queue():
        store_turns(ana, MESSAGES[:3])
        assert eventually(lambda: _settled(ana), timeout=60.0)

    assert memory_shape(ben) == bens_memory
    assert memory_shape(ben)["due"]
    assert DialoguePage.objects.filter(user=ana, tier=Tier.MTM).count() == 2
