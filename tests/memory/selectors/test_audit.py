"""The audit trail: each operator action of the log with the text of the memory it acted on."""

from __future__ import annotations

import pytest

from memory.engine.traits import TRAITS_BY_KEY
from memory.models import LifecycleEvent
from memory.selectors.audit import OPERATOR_KINDS, events_with_subjects
from memory.services.editing import memory_pin, memory_repress
from memory.services.pages import page_start
from memory.services.turns import page_complete
from persona.models import KnowledgeFact

pytestmark = pytest.mark.usefixtures("memory_env")


def test_operator_actions_name_the_memory_they_acted_on(make_user):
    user = make_user()
    page = page_complete(page=page_start(user=user, query="I keep bees on the roof."), response="Noted.",
                         reply_model="test")
    fact = KnowledgeFact.objects.create(user=user, text="User keeps a beehive", normalised="user keeps a beehive")
    memory_pin(user=user, kind="page", ident=str(page.pk), actor=user, reason="keep it")
    memory_repress(user=user, kind="fact", ident=str(fact.pk), actor=user)
    memory_pin(user=user, kind="trait", ident="sports_interest", actor=user)

    events = list(LifecycleEvent.objects.filter(user=user).order_by("id"))
    listed = events_with_subjects(user=user, events=events)
    assert [(event.kind, text) for event, text in listed if event.kind in OPERATOR_KINDS] == [
        ("pinned", "I keep bees on the roof."), ("repressed", "User keeps a beehive"),
        ("pinned", f"trait {TRAITS_BY_KEY['sports_interest'].name}")]
    others = [text for event, text in listed if event.kind not in OPERATOR_KINDS]
    assert others and set(others) == {""}  # events no operator made carry no subject
    # read for another user, the same events name none of the first user's memories
    stranger = events_with_subjects(user=make_user(), events=events)
    assert [text for event, text in stranger if event.kind in OPERATOR_KINDS][:2] == ["", ""]


def test_the_delete_dialog_names_the_pinned_memories_in_the_radius_and_no_one_elses(make_user, memory_env):
    from memory.selectors.blast_radius import pinned_in_radius
    from memory.services.deletion import memory_delete

    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user()
    first = page_complete(page=page_start(user=user, query="I keep bees on the roof."), response="Noted.",
                          reply_model="test")
    page_complete(page=page_start(user=user, query="Closing line."), response="Noted.", reply_model="test")
    first.refresh_from_db()
    memory_pin(user=user, kind="page", ident=str(first.pk), actor=user)
    radius = memory_delete(user=user, kind="segment", ident=str(first.segment_id), actor=user, dry_run=True)
    assert str(first.pk) in {entry["id"] for entry in radius.pages}
    assert pinned_in_radius(user=user, radius=radius) == {str(first.pk)}
    assert pinned_in_radius(user=make_user(), radius=radius) == set()
