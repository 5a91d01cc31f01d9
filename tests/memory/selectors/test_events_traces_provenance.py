"""The log's reads (events filtered, figures computed once per version of the log), a user's recall
traces, and a memory's provenance along the graph."""

from __future__ import annotations

import pytest

from memory.models import DialoguePage, RetrievalTrace, Segment
from memory.selectors.log import event_log_forget_cache, events, log_derived
from memory.selectors.provenance import provenance
from memory.selectors.traces import trace_get, trace_timings, traces
from memory.services.turns import turn_run

pytestmark = pytest.mark.usefixtures("memory_env")


def test_events_come_newest_first_filtered_by_kind_and_words(make_user):
    user, other = make_user(), make_user()
    first = turn_run(user=user, message="I keep bees on the roof.").page
    turn_run(user=user, message="The bees made honey.")
    turn_run(user=other, message="Not in the first user's log.")
    listed = list(events(user=user))
    assert listed and all(event.user_id == user.pk for event in listed)
    assert [event.id for event in listed] == sorted((event.id for event in listed), reverse=True)
    added = list(events(user=user, kinds=["page_added"]))
    assert len(added) == 2 and {event.kind for event in added} == {"page_added"}
    assert [event.subject_id for event in events(user=user, kinds=["page_added"], query=str(first.id)[:8])] == [
        str(first.id)]
    assert list(events(user=user, query="no-such-thing")) == []


def test_a_figure_is_computed_once_per_version_of_the_log(make_user):
    event_log_forget_cache()
    user = make_user()
    turn_run(user=user, message="I keep bees on the roof.")
    calls: list[int] = []

    def count(log) -> int:
        calls.append(len(log))
        return len(log)

    first = log_derived(user, "test-count", count)
    assert log_derived(user, "test-count", count) == first and len(calls) == 1  # the same log: cached
    turn_run(user=user, message="The bees made honey.")
    assert log_derived(user, "test-count", count) > first and len(calls) == 2  # a new event: computed again


def test_traces_are_read_by_their_owner_only_with_their_parts_in_order(make_user):
    user, stranger = make_user(), make_user()
    turn_run(user=user, message="I keep bees on the roof.")
    turn_run(user=user, message="What do I keep on the roof?")
    listed = list(traces(user=user))
    assert [trace.query for trace in listed] == ["What do I keep on the roof?", "I keep bees on the roof."]
    whole = trace_get(user=user, trace_id=str(listed[0].id))
    assert whole is not None and whole.payload and whole.page.query == "What do I keep on the roof?"
    assert trace_get(user=stranger, trace_id=str(listed[0].id)) is None
    assert trace_get(user=user, trace_id="not-an-id") is None
    assert list(traces(user=stranger)) == []
    parts, timed = trace_timings(whole.payload), whole.payload["timings_ms"]
    order = [name for name in whole.payload["timings_order"] if name in timed]
    assert order and [name for name, _ in parts][:len(order)] == order and len(parts) == len(timed)
    assert trace_timings({"timings_ms": {"b": 2, "a": 1}, "timings_order": ["a"]}) == [("a", 1.0), ("b", 2.0)]
    assert RetrievalTrace.objects.filter(user=user).count() == 2


def test_a_pages_provenance_leads_to_its_segment_and_is_its_owners_only(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    turn_run(user=user, message="I keep bees on the roof.")
    turn_run(user=user, message="Closing line.")
    page = DialoguePage.objects.get(user=user, query="I keep bees on the roof.")
    segment = Segment.objects.get(user=user)
    found = provenance(user=user, kind="page", ident=str(page.id))
    assert found is not None and found.title == f"#{page.seq} I keep bees on the roof."
    linked = {(link.node.kind, link.node.object_id) for link in found.links}
    assert ("segment", str(segment.id)) in linked
    assert all(label for label in found.labels.values())
    assert provenance(user=make_user(), kind="page", ident=str(page.id)) is None
    assert provenance(user=user, kind="nonsense", ident=str(page.id)) is None
