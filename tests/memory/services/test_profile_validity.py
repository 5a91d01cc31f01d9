"""Profile fields carry validity: a changed value is kept with when it held, never overwritten."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.models import LifecycleEvent
from memory.services.common import MemoryInputError
from memory.services.long_term import profile_update
from persona.models import UserProfile

pytestmark = pytest.mark.usefixtures("memory_env")
MARCH = datetime(2025, 3, 14, 10, 0, tzinfo=UTC)
JUNE = datetime(2025, 6, 2, 18, 30, tzinfo=UTC)
AUGUST = datetime(2025, 8, 9, 8, 0, tzinfo=UTC)


def test_a_changed_name_keeps_the_old_value_with_its_period_and_an_event(make_user):
    user = make_user()
    profile_update(user=user, name="Sam", birth_year=1990, at=MARCH)
    profile = profile_update(user=user, name="Samantha", at=JUNE)

    assert (profile.name, profile.birth_year) == ("Samantha", 1990)
    assert profile.history == [{"field": "name", "value": "Sam", "valid_from": MARCH.isoformat(),
                                "valid_until": JUNE.isoformat()}]
    assert profile.since == {"name": JUNE.isoformat(), "birth_year": MARCH.isoformat()}
    stored = UserProfile.objects.get(user=user)
    assert (stored.history, stored.since) == (profile.history, profile.since)
    event = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.EDITED).latest("id")
    assert (event.occurred_at, event.payload["fields"], event.payload["values"]) == (JUNE, ["name"],
                                                                                      {"name": "Samantha"})
    assert event.payload["superseded"] == profile.history
    # recall and the prompt show the current value only
    assert profile.as_text() == "name: Samantha; born: 1990"


def test_clearing_and_extra_fields_keep_history_and_an_unchanged_value_adds_none(make_user):
    user = make_user()
    profile_update(user=user, gender="female", extra={"city": "Leeds"}, at=MARCH)
    profile_update(user=user, gender="female", extra={"city": "York"}, at=JUNE)  # gender unchanged
    profile = profile_update(user=user, gender="", birth_year=None, extra={"city": ""}, at=AUGUST)

    assert (profile.gender, profile.extra, profile.since) == ("", {}, {})
    assert profile.history == [
        {"field": "extra.city", "value": "Leeds", "valid_from": MARCH.isoformat(), "valid_until": JUNE.isoformat()},
        {"field": "gender", "value": "female", "valid_from": MARCH.isoformat(), "valid_until": AUGUST.isoformat()},
        {"field": "extra.city", "value": "York", "valid_from": JUNE.isoformat(), "valid_until": AUGUST.isoformat()},
    ]
    # the unset birth year was no change: no history entry, and the last event names only what changed
    event = LifecycleEvent.objects.filter(user=user, kind=LifecycleEvent.Kind.EDITED).latest("id")
    assert event.payload["fields"] == ["gender", "extra.city"]
    # nothing given, nothing changed, no event
    count = LifecycleEvent.objects.filter(user=user).count()
    profile_update(user=user, gender="")
    assert LifecycleEvent.objects.filter(user=user).count() == count


def test_bad_extra_fields_are_refused_and_nothing_changes(make_user):
    user = make_user()
    profile_update(user=user, name="Ana", at=MARCH)
    for bad in ({"": "x"}, {"city": 3}):
        with pytest.raises(MemoryInputError):
            profile_update(user=user, name="Other", extra=bad)
    profile = UserProfile.objects.get(user=user)
    assert (profile.name, profile.history) == ("Ana", [])


def test_another_users_profile_and_history_are_untouched(make_user):
    ana, ben = make_user(), make_user()
    profile_update(user=ben, name="Ben", at=MARCH)
    profile_update(user=ana, name="Ana", at=MARCH)
    profile_update(user=ana, name="Anna", at=JUNE)

    ben_profile = UserProfile.objects.get(user=ben)
    assert (ben_profile.name, ben_profile.history, ben_profile.since) == ("Ben", [], {"name": MARCH.isoformat()})
    assert not LifecycleEvent.objects.filter(user=ben, payload__values__name="Anna").exists()
    assert [h["value"] for h in UserProfile.objects.get(user=ana).history] == ["Ana"]
