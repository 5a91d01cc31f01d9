"""What people say, understood, end to end in Chromium: a fact told in everyday wording shows its
notice and the reply names it; it reaches the person's page in the second person; small talk gets no
promise; a correction in the chat ("No, …, not …") changes the next answer."""

from __future__ import annotations

import pytest

from tests.browser.conftest import sign_up
from tests.browser.test_chat_e2e import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NOTICE_TIMEOUT_MS = 30_000


def reply_of(page, index: int) -> str:
    return page.locator(".turn").nth(index).locator(".reply").inner_text()


def test_an_everyday_fact_is_kept_shown_and_corrected_in_the_chat(memoryos_server, browser, artifacts):
    from playwright.sync_api import expect

    url = memoryos_server.url
    person = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_up(person, url, "everyday", "a-long-secret-3")
    person.wait_for_selector('#connection[data-state="open"]', timeout=30_000)

    send(person, "Gluten is off the table for me, I'm coeliac.", 0)
    notice = person.locator(".turn").nth(0).locator('.memory-notice li[data-action="remembered"]')
    expect(notice.first).to_be_visible(timeout=NOTICE_TIMEOUT_MS)
    expect(person.locator(".turn").nth(0).locator(".memory-notice")).to_contain_text("You're coeliac")
    assert "I'll remember that" in reply_of(person, 0) and "you're coeliac" in reply_of(person, 0)

    send(person, "lol ok, thanks!", 1)
    assert "remember" not in reply_of(person, 1).lower()  # small talk: no promise

    send(person, "Our dog is called Max, he's a terrier.", 2)
    expect(person.locator(".turn").nth(2).locator(".memory-notice")).to_contain_text(
        "You have a dog named Max", timeout=NOTICE_TIMEOUT_MS)
    send(person, "No, my dog is called Rex, not Max.", 3)
    assert reply_of(person, 3).startswith("Corrected:") and "Rex" in reply_of(person, 3)
    send(person, "What's my dog called?", 4)
    answer = reply_of(person, 4)
    assert "Rex" in answer and "Max" not in answer, answer

    person.click("nav >> text=About me")
    person.wait_for_url(f"{url}/me/")
    known = person.locator("#known-facts").inner_text()
    assert "You're coeliac" in known and "You have a dog named Rex" in known and "User" not in known
    person.screenshot(path=str(artifacts / "understanding-about-me.png"), full_page=True)
