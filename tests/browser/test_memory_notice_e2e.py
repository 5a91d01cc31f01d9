"""The "remembered" notice, end to end in Chromium: a fact told shows "Remembered" under its reply,
a move shows "Updated" with what it replaced, and Undo reverts it (the old home is current again
and answers the next question). Another person sees no notice and cannot undo the first one's."""

from __future__ import annotations

import pytest

from tests.browser.conftest import sign_up
from tests.browser.test_chat_e2e import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NOTICE_TIMEOUT_MS = 30_000


def test_the_notice_names_what_changed_and_undo_reverts_it(memoryos_server, browser, artifacts):
    from playwright.sync_api import expect

    url = memoryos_server.url
    person = browser.new_context().new_page()
    sign_up(person, url, "noticer", "a-long-secret-1")
    person.wait_for_selector('#connection[data-state="open"]', timeout=30_000)

    send(person, "I live in Lyon.", 0)
    remembered = person.locator('.turn').nth(0).locator('.memory-notice li[data-action="remembered"]')
    expect(remembered).to_contain_text("You live in Lyon", timeout=NOTICE_TIMEOUT_MS)
    facts = person.locator("#memory-stats .tier.lpm strong").first  # the sidebar counts what the notice added
    expect(facts).to_have_text("1", timeout=10_000)

    send(person, "Big news: I moved from Lyon to Porto!", 1)
    changed = person.locator('.turn').nth(1).locator('.memory-notice li[data-action="changed"]')
    expect(changed).to_contain_text("You live in Porto", timeout=NOTICE_TIMEOUT_MS)
    expect(changed).to_contain_text("was: You live in Lyon")
    expect(facts).to_have_text("2", timeout=10_000)
    person.screenshot(path=str(artifacts / "memory-notice.png"), full_page=True)
    undo_url = changed.locator("xpath=..").get_attribute("data-fact-id")

    changed.locator("button.memory-undo").click()
    undone = person.locator('.turn').nth(1).locator('.memory-notice li[data-action="undone"]')
    expect(undone).to_contain_text("You live in Lyon again", timeout=10_000)
    expect(facts).to_have_text("1", timeout=10_000)  # Porto's fact gone again (issue 50, finding 4)

    send(person, "Where do I live?", 2)
    reply = person.locator(".turn").nth(2).locator(".reply").inner_text()
    assert "Lyon" in reply and "Porto" not in reply, reply

    other = browser.new_context().new_page()
    sign_up(other, url, "bystander", "a-long-secret-2")
    other.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    send(other, "I like tea.", 0)
    expect(other.locator('.memory-notice li')).to_have_count(1, timeout=NOTICE_TIMEOUT_MS)  # their own only
    assert "Lyon" not in other.locator("#transcript").inner_text()
    status = other.evaluate(
        """async (id) => {
             const token = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="))?.split("=")[1];
             const response = await fetch(`/chat/memory/undo/${id}/`, {method: "POST",
                                                                      headers: {"X-CSRFToken": token}});
             return response.status;
           }""", undo_url)
    assert status == 404
