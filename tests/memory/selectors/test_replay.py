"""The replay page's view: what an operator deleted leaves the replayed tiers from its step on, so the
last step counts what the Overview counts (the log records the delete, the engine's replay does not
apply it)."""

from __future__ import annotations

import pytest

from memory.models import DialoguePage, LifecycleEvent, Tier
from memory.selectors.log import event_log_forget_cache, replay_of
from memory.selectors.replay import replay_view
from memory.services.deletion import memory_delete
from memory.services.turns import turn_run

pytestmark = pytest.mark.usefixtures("memory_env")


def test_the_last_step_after_two_deletes_shows_what_short_term_memory_holds(make_user):
    event_log_forget_cache()
    user = make_user()
    for i in range(4):
        turn_run(user=user, message=f"My neighbour's dog number {i} barks at the postman.")
    doomed = list(DialoguePage.objects.filter(user=user, tier=Tier.STM).order_by("seq")[:2])
    before_deletes = LifecycleEvent.objects.filter(user=user).count()
    for page in doomed:
        memory_delete(user=user, kind="page", ident=str(page.id), reason="test")
    stored = [str(i) for i in DialoguePage.objects.filter(user=user, tier=Tier.STM).order_by("seq")
              .values_list("id", flat=True)]
    end = replay_view(user=user, step=len(replay_of(user=user)))
    assert end.state.stm == stored and len(stored) == 2
    earlier = replay_view(user=user, step=before_deletes)  # before the deletes, they were there
    assert {str(p.id) for p in doomed} <= set(earlier.state.stm)
