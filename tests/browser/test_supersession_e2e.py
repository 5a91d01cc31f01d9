"""Facts that change, end to end in Chromium: a person says they live in Leeds, later in York; the
detector, unsure (no change word), opens a review; an operator sees both facts in the inspector's
queue and accepts; the person's next question is answered with York. Another person sees nothing of
it: their queue is empty and the first person's is a 404."""

from __future__ import annotations

import pytest

from tests.browser.conftest import migrate, running_server, server_env, sign_up
from tests.browser.test_chat_e2e import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OPERATOR = """
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
operator = get_user_model().objects.create_user("operator", password="an-operator-secret-1", is_staff=True)
operator.user_permissions.add(*Permission.objects.filter(codename__in=["inspect_any_user", "edit_any_user"]))
"""


@pytest.fixture(scope="module")
def eager_server(tmp_path_factory):
    """Promotion after two pages in one segment, so that a short chat reaches long-term memory."""
    from tests.browser.conftest import require_browser

    require_browser()
    var_dir = tmp_path_factory.mktemp("supersession-var")
    env = server_env(var_dir, MEMORYOS_STM_CAPACITY="1", MEMORYOS_FSCORE_THRESHOLD="0.0",
                     MEMORYOS_HEAT_THRESHOLD="2.0")
    migrate(env)
    with running_server(env, var_dir / "daphne.log") as server:
        server.manage("shell", "-c", OPERATOR)
        yield server


def sign_in(page, url: str, username: str, password: str) -> None:
    page.goto(f"{url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/")


def test_a_change_goes_through_the_review_queue_into_the_next_reply(eager_server, browser, artifacts):
    url = eager_server.url
    person = browser.new_context().new_page()
    sign_up(person, url, "mover", "a-long-secret-1")
    person.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    said = ["I live in Leeds.", "My cats love the garden there.", "I live in York.",
            "The weather was grey all week.", "I am reading a long novel."]
    for done, text in enumerate(said):
        send(person, text, done)

    operator = browser.new_context().new_page()
    sign_in(operator, url, "operator", "an-operator-secret-1")
    operator.goto(f"{url}/inspector/mover/changes/")
    review = operator.locator(".review[data-status=open]")
    assert review.count() == 1, operator.content()
    assert "User lives in Leeds" in review.inner_text() and "User lives in York" in review.inner_text()
    assert "I live in Leeds." in review.inner_text()  # the source turn
    operator.screenshot(path=str(artifacts / "inspector-changes.png"), full_page=True)
    review.locator("button.accept").click()
    operator.wait_for_url(f"{url}/inspector/mover/changes/?status=open")
    assert operator.locator(".review").count() == 0
    operator.goto(f"{url}/inspector/mover/changes/?status=accepted")
    assert "decided by operator" in operator.locator(".review").inner_text()

    send(person, "Where do I live?", len(said))
    reply = person.locator('.turn[data-state="done"]').last.inner_text()
    assert "York" in reply and "I live in Leeds" not in reply, reply

    stranger = browser.new_context().new_page()
    sign_up(stranger, url, "eve", "another-secret-1")
    stranger.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    assert stranger.goto(f"{url}/inspector/mover/changes/").status == 404
    stranger.goto(f"{url}/inspector/eve/changes/")
    assert stranger.locator(".review").count() == 0
    api = stranger.request.get(f"{url}/api/memory/supersessions?status=any")
    assert api.ok and api.json()["items"] == []
    stranger.goto(f"{url}/")
    stranger.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    send(stranger, "Where do I live?", 0)
    answer = stranger.locator('.turn[data-state="done"]').last.inner_text()
    assert "York" not in answer and "Leeds" not in answer
