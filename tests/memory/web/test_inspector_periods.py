"""The inspector's long-term page lists a superseded fact with its period and what took its place,
as every list of facts does (issue 34)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from persona.models import KnowledgeFact

pytestmark = pytest.mark.usefixtures("memory_env")


def test_a_superseded_fact_shows_its_period_and_its_successor(make_user):
    user = make_user("ana")
    old = KnowledgeFact.objects.create(user=user, text="User lives in Lyon", normalised="lives lyon",
                                       timestamp=datetime(2026, 1, 10, tzinfo=UTC))
    new = KnowledgeFact.objects.create(user=user, text="User lives in Porto", normalised="lives porto",
                                       timestamp=datetime(2026, 3, 2, tzinfo=UTC))
    # as a supersession leaves the older fact (memory/services/supersession.py _supersede)
    KnowledgeFact.objects.filter(pk=old.pk).update(valid_until=new.timestamp, superseded_by=new.pk)
    old.refresh_from_db()
    client = Client()
    client.force_login(user)
    page = client.get(f"/inspector/{user.username}/lpm/").content.decode()
    assert f'<span class="period">(until {old.valid_until:%B %Y}; since then: User lives in Porto)</span>' in page
    assert page.count('class="period"') == 1  # the current fact has no period
