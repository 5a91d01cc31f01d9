"""The inspector's review queue: what the owner and an operator see and may do; others get a 404."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from memory.services.supersession import supersession_detect
from persona.models import KnowledgeFact, Supersession
from tests.memory.services.test_supersession import JUNE, MARCH, stated

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def review(make_user):
    ana = make_user("ana")
    stated(ana, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(ana, "I live in York.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=ana.pk, fact_ids=[str(york.pk)])
    return ana, row


def test_the_owner_sees_both_facts_their_turns_and_the_reason(client, review):
    ana, row = review
    client.force_login(ana)
    page = client.get("/inspector/ana/changes/").content.decode()
    assert f'data-review="{row.pk}"' in page and "User lives in Leeds" in page and "User lives in York" in page
    assert "“I live in Leeds.”" in page and "14 Mar 2025" in page and "became" in page
    assert "Accept (supersede)" in page


def test_accepting_with_an_edit_and_rejecting_from_the_page(client, review):
    ana, row = review
    client.force_login(ana)
    url = f"/inspector/ana/changes/{row.pk}/"
    client.post(url + "accept/", {"text": "User lives in York now", "original": "User lives in York", "reason": "ok"})
    row.refresh_from_db()
    assert row.status == "accepted" and row.new_fact.text == "User lives in York now"
    assert KnowledgeFact.objects.get(pk=row.old_fact_id).valid_until == JUNE
    client.post(url + "reject/", {"reason": "oops"})
    row.refresh_from_db()
    assert row.status == "rejected" and KnowledgeFact.objects.get(pk=row.old_fact_id).valid_until is None


def test_another_user_gets_a_404_and_changes_nothing(client, make_user, review):
    ana, row = review
    client.force_login(make_user("eve"))
    assert client.get("/inspector/ana/changes/").status_code == 404
    assert client.post(f"/inspector/ana/changes/{row.pk}/accept/", {}).status_code == 404
    row.refresh_from_db()
    assert row.status == "open"


def test_an_operator_who_may_only_inspect_sees_no_buttons_and_cannot_decide(client, make_user, review):
    ana, row = review
    operator = make_user("op", is_staff=True)
    operator.user_permissions.add(Permission.objects.get(codename="inspect_any_user"))
    client.force_login(operator)
    page = client.get("/inspector/ana/changes/").content.decode()
    assert "User lives in York" in page and "Accept (supersede)" not in page
    assert client.post(f"/inspector/ana/changes/{row.pk}/reject/", {}).status_code == 404
    assert Supersession.objects.get(pk=row.pk).status == "open"
