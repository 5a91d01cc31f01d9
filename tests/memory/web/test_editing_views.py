"""The inspector's actions over htmx: pin and its undo, repress, correct (stale versions refused), the
delete dialog with its blast radius and the delete itself; only the owner and operators may act."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from memory.models import DialoguePage, LifecycleEvent
from memory.services.pages import page_start
from memory.services.turns import page_complete

pytestmark = pytest.mark.usefixtures("memory_env")
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def owner_page(make_user):
    user = make_user("owner")
    page = page_start(user=user, query="I keep a spare key under the red flowerpot.")
    return user, page_complete(page=page, response="Noted.", reply_model="test")


def url(user, page, action: str = "") -> str:
    return f"/inspector/{user.username}/memory/page/{page.id}/{action + '/' if action else ''}"


def test_pin_and_its_undo(client, owner_page):
    user, page = owner_page
    client.force_login(user)
    pinned = client.post(url(user, page, "pin"), {"value": "1", "reason": "keep"}, **HTMX)
    assert pinned.status_code == 200 and b"Unpin" in pinned.content and b"Pinned." in pinned.content
    assert DialoguePage.objects.get(id=page.id).pinned
    undone = client.post(url(user, page, "pin"), {"value": "0"}, **HTMX)
    assert b'data-action="pin"' in undone.content and not DialoguePage.objects.get(id=page.id).pinned
    assert list(LifecycleEvent.objects.filter(user=user, kind__in=["pinned", "unpinned"]).order_by("id")
                .values_list("kind", flat=True)) == ["pinned", "unpinned"]


def test_repress_marks_the_memory(client, owner_page):
    user, page = owner_page
    client.force_login(user)
    response = client.post(url(user, page, "repress"), {"value": "1"}, **HTMX)
    assert b"repressed: never recalled" in response.content and DialoguePage.objects.get(id=page.id).repressed
    stm = client.get(f"/inspector/{user.username}/stm/").content
    assert b"repressed: never recalled" in stm and b"is-repressed" in stm


def test_correct_form_saves_a_version_and_refuses_a_stale_one(client, owner_page):
    user, page = owner_page
    client.force_login(user)
    form = client.get(url(user, page, "correct"), **HTMX)
    assert b'name="version" value="1"' in form.content and b"red flowerpot" in form.content
    saved = client.post(url(user, page, "correct"), {"version": "1", "query": "I keep a spare key under the mat.",
                                                     "response": "Noted."}, **HTMX)
    # The page reloads (the old text shows in places the action bar does not reach), with the notice.
    assert saved.status_code == 200 and saved["HX-Refresh"] == "true"
    stm = client.get(f"/inspector/{user.username}/stm/").content.decode()
    assert "Corrected: version 2" in stm
    assert "<strong>User:</strong> I keep a spare key under the mat." in stm  # the meta chain is derived later
    stale = client.post(url(user, page, "correct"), {"version": "1", "query": "Another edit."}, **HTMX)
    assert stale.status_code == 200 and b"changed since you read it" in stale.content  # htmx swaps only 2xx
    assert DialoguePage.objects.get(id=page.id).query == "I keep a spare key under the mat."


def test_delete_asks_with_the_blast_radius_then_deletes_for_good(client, owner_page):
    user, page = owner_page
    client.force_login(user)
    dialog = client.get(url(user, page, "delete"), **HTMX)
    assert dialog.status_code == 200 and b"Deleting is final" in dialog.content
    assert b"1 page deleted" in dialog.content and DialoguePage.objects.filter(id=page.id).exists()
    done = client.post(url(user, page, "delete"), {"reason": "mine"}, **HTMX)
    assert done.status_code == 204 and done["HX-Redirect"] == f"/inspector/{user.username}/"
    assert not DialoguePage.objects.filter(id=page.id).exists()


def test_only_the_owner_and_operators_may_act(client, make_user, owner_page):
    user, page = owner_page
    stranger, inspector, editor = make_user("stranger"), make_user("looker", is_staff=True), make_user("ed")
    inspector.user_permissions.add(Permission.objects.get(codename="inspect_any_user"))
    editor.user_permissions.add(*Permission.objects.filter(codename__in=["inspect_any_user", "edit_any_user"]))
    for visitor, expected in ((stranger, 404), (inspector, 404), (editor, 200)):
        client.force_login(visitor)
        for action, data in (("pin", {"value": "1"}), ("repress", {"value": "0"})):
            assert client.post(url(user, page, action), data, **HTMX).status_code == expected, (visitor, action)
        assert client.get(url(user, page, "delete"), **HTMX).status_code == expected
    client.logout()
    assert client.post(url(user, page, "pin"), {"value": "1"}).status_code == 302  # to the login page
    assert LifecycleEvent.objects.get(user=user, kind="pinned").payload["actor"] == "ed"


def test_the_action_bar_links_each_action_to_its_route(client, owner_page):
    from django.urls import reverse

    from memory.templatetags.inspector import ACTIONS, action_urls

    user, page = owner_page
    urls = action_urls(user.get_username(), "page", str(page.id))
    assert urls == {action: reverse(f"memory_{action}", args=[user.get_username(), "page", str(page.id)])
                    for action in ACTIONS}
    client.force_login(user)
    html = client.get(f"/inspector/{user.get_username()}/stm/").content.decode()
    assert f'hx-post="{urls["pin"]}"' in html and f'hx-post="{urls["repress"]}"' in html
    assert f'hx-get="{urls["correct"]}"' in html and f'hx-get="{urls["delete"]}"' in html


@pytest.mark.parametrize("elsewhere", ["https://evil.example/", "//evil.example/x", "https:///evil.example",
                                       "javascript:alert(1)", "http://testserver.evil.example/"])
def test_an_action_goes_back_only_to_a_page_of_this_site(client, owner_page, elsewhere):
    user, page = owner_page
    client.force_login(user)
    pinned = client.post(url(user, page, "pin"), {"value": "1", "next": elsewhere}, HTTP_REFERER=elsewhere)
    assert pinned.status_code == 302 and pinned["Location"] == "/inspector/"
    assert DialoguePage.objects.get(id=page.id).pinned  # the action itself was done
    kept = client.post(url(user, page, "pin"), {"value": "0", "next": f"/inspector/{user.username}/stm/"})
    assert kept["Location"] == f"/inspector/{user.username}/stm/"
    deleted = client.post(url(user, page, "delete"), {"next": elsewhere}, **HTMX)
    assert deleted.status_code == 204 and deleted["HX-Redirect"] == f"/inspector/{user.username}/"
