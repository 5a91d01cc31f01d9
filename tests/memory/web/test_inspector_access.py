"""Who may see whose memory in the inspector: every inspector route in the URL conf × every kind of
visitor. Others get a 404 and never data; an inspector route added without an entry here fails."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import get_resolver, reverse

from memory.models import LifecycleEvent, RetrievalTrace
from memory.services.recall import recall_for_query
from memory.services.turns import turn_run

pytestmark = pytest.mark.usefixtures("memory_env")


def inspector_routes() -> list[str]:
    return sorted(name for name in get_resolver().reverse_dict if isinstance(name, str)
                  and name.startswith("inspector_") and name not in ("inspector_home", "inspector_switch"))


@pytest.fixture
def owner_memory(make_user):
    """A user with a page in every tier that the routes can name, and a trace."""
    from memory.models import Segment
    from persona.models import KnowledgeFact

    user = make_user("owner", first_name="Secret")
    for n in range(9):
        turn_run(user=user, message=f"My secret hobby number {n} is juggling flaming torches.")
    recall_for_query(user=user, query="juggling")
    segment = Segment.objects.filter(user=user).first()
    fact = KnowledgeFact.objects.filter(user=user).first()
    return user, {
        "inspector_overview": [], "inspector_stm": [], "inspector_mtm": [], "inspector_lpm": [],
        "inspector_segment": [str(segment.id)], "inspector_trait": ["openness"],
        "inspector_provenance": ["segment", str(segment.id)] if fact is None else ["fact", str(fact.id)],
        "inspector_recalls": [], "inspector_trace": [str(RetrievalTrace.objects.filter(user=user).first().id)],
        "inspector_events": [], "inspector_replay": [], "inspector_supersessions": [],
    }


def visitors(make_user):
    # Migration 0008 makes this group; a transactional test's flush may have removed it since.
    operators, _ = Group.objects.get_or_create(name="Operators")
    operators.permissions.add(*Permission.objects.filter(content_type__app_label="memory",
                                                         codename__in=["inspect_any_user", "edit_any_user"]))
    operator = make_user("operator", is_staff=True)
    operator.groups.add(operators)
    return {
        "anonymous": (None, "login"),
        "another user": (make_user("stranger"), 404),
        "staff without the permission": (make_user("staffer", is_staff=True), 404),
        "operator": (operator, 200),
        "superuser": (make_user("root", is_staff=True, is_superuser=True), 200),
    }


def test_every_inspector_route_is_covered_and_guarded(client, make_user, owner_memory):
    owner, args = owner_memory
    assert sorted(args) == inspector_routes()  # a new route must be added here
    cases = {"owner": (owner, 200), **visitors(make_user)}
    for route, extra in args.items():
        url = reverse(route, args=[owner.username, *extra])
        for label, (visitor, expected) in cases.items():
            client.logout()
            if visitor is not None:
                client.force_login(visitor)
            response = client.get(url)
            if expected == "login":
                assert response.status_code == 302 and "/accounts/login/" in response["Location"], (route, label)
                continue
            assert response.status_code == expected, (route, label, response.status_code)
            if expected == 404:
                assert b"juggling" not in response.content and b"flaming" not in response.content


def test_a_missing_user_is_a_404_like_a_forbidden_one(client, make_user):
    client.force_login(make_user("curious"))
    assert client.get("/inspector/nobody-here/").status_code == 404


def test_the_switcher_lists_users_only_for_operators(client, make_user, owner_memory):
    owner, _ = owner_memory
    people = visitors(make_user)
    client.force_login(owner)
    page = client.get(reverse("inspector_overview", args=[owner.username])).content
    assert b'id="switch-user"' not in page
    assert client.get(reverse("inspector_switch") + "?user=stranger&section=stm").status_code == 404
    client.force_login(people["operator"][0])
    page = client.get(reverse("inspector_overview", args=[owner.username])).content
    assert b'id="switch-user"' in page and b'<option value="stranger"' in page
    switched = client.get(reverse("inspector_switch") + "?user=stranger&section=stm")
    assert switched.status_code == 302 and switched["Location"] == "/inspector/stranger/stm/"


def test_inspector_home_goes_to_ones_own_memory(client, make_user):
    user = make_user("ana")
    client.force_login(user)
    response = client.get("/inspector/")
    assert response.status_code == 302 and response["Location"] == "/inspector/ana/"


def test_looking_changes_nothing(client, owner_memory):
    """Reading the inspector, the search included, records no visit, no event and no trace."""
    owner, _ = owner_memory
    client.force_login(owner)
    before = (LifecycleEvent.objects.count(), RetrievalTrace.objects.count())
    assert client.get(f"/inspector/{owner.username}/recalls/?q=juggling+torches").status_code == 200
    assert client.get(f"/inspector/{owner.username}/mtm/").status_code == 200
    assert (LifecycleEvent.objects.count(), RetrievalTrace.objects.count()) == before


def test_a_segment_page_draws_that_segment_s_heat_as_the_mid_term_page_does(client, owner_memory):
    import json
    import re

    from memory.models import Segment

    owner, _ = owner_memory
    client.force_login(owner)
    segment = Segment.objects.filter(user=owner).first()
    html = client.get(f"/inspector/{owner.username}/mtm/{segment.id}/").content.decode()
    figure = json.loads(re.search(r'<script id="heat-figure" type="application/json">(.*?)</script>', html,
                                  re.S).group(1))
    names = {trace.get("name") for trace in figure["data"]}
    shown = " ".join(n for n in names if n)
    assert f"· {str(segment.id)[:6]}" in shown  # its own line, by its name and the head of its id
    assert not any(f"· {str(other.id)[:6]}" in shown  # and no other segment's
                   for other in Segment.objects.filter(user=owner).exclude(pk=segment.pk))
    assert any("recency" in str(axis.get("title")) for key, axis in figure["layout"].items() if "yaxis" in key)
