"""A newcomer's first ten minutes in Chromium: sign up, tell five facts, ask three questions and get
each fact back; the profile card's thanks goes away; the API docs render with nothing from outside
the app; the chat shows when a turn waits for the server's models."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from tests.browser.test_chat_e2e import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FACTS = [
    "I have a golden retriever called Biscuit.",
    "My sister Lena lives in Berlin.",
    "I play the cello in a community orchestra.",
    "I'm allergic to peanuts.",
    "I work as a marine biologist in Lisbon.",
]
QUESTIONS = [("What is my dog's name?", "Biscuit"), ("Where does my sister live?", "Berlin"),
             ("What instrument do I play?", "cello")]


def sign_up(page, server, username: str) -> None:
    page.goto(f"{server.url}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", "a-long-secret-7")
    page.fill("#id_password2", "a-long-secret-7")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def test_a_newcomer_tells_five_facts_and_gets_each_back(memoryos_server, browser, artifacts):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    sign_up(page, memoryos_server, "newcomer")
    page.fill("#profile-card #id_name", "Sam")
    page.click("#profile-card button[type=submit]")
    expect(page.locator("#profile-card")).to_contain_text("Thanks, Sam")
    expect(page.locator("#profile-card")).to_have_count(0, timeout=15_000)  # not pinned above the chat
    expect(page.locator('#connection[data-state="open"]')).to_be_visible(timeout=120_000)

    for i, fact in enumerate(FACTS):
        send(page, fact, i)
        reply = page.locator(".turn .reply").nth(i).inner_text()
        assert reply.startswith("Got it, Sam. I'll remember that "), reply
    for i, (question, fact) in enumerate(QUESTIONS, start=len(FACTS)):
        send(page, question, i)
        reply = page.locator(".turn .reply").nth(i).inner_text()
        assert fact in reply and "don't recall" not in reply, (question, reply)

    last = page.locator(".turn").last
    last.locator("details.recall summary").click()
    body = last.locator(".recall-body")
    expect(body.locator(".why").first).to_be_visible(timeout=30_000)
    expect(body).to_contain_text("One of your last 7 turns")
    expect(body.locator("mark", has_text="play").first).to_be_visible()  # the message's words, marked
    expect(body.locator(".recall-legend")).to_contain_text("What the scores mean")
    body.scroll_into_view_if_needed()
    page.screenshot(path=artifacts / "chat-newcomer-recall-panel.png")
    assert page.request.get(f"{memoryos_server.url}/favicon.ico").status == 200
    context.close()


def test_the_api_docs_render_with_nothing_from_outside_the_app(memoryos_server, browser, artifacts):
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    ours, outside = urlsplit(memoryos_server.url).netloc, []

    def only_the_app(route):
        if urlsplit(route.request.url).netloc == ours:
            route.continue_()
        else:  # as on a machine with no internet
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_app)
    sign_up(page, memoryos_server, "docsreader")
    page.goto(f"{memoryos_server.url}/api/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("MemoryOS", timeout=30_000)
    expect(page.locator(".opblock-summary-path", has_text="/api/memory/turns")).to_be_visible()
    page.screenshot(path=artifacts / "api-docs.png")
    assert outside == []
    context.close()


def test_the_chat_shows_when_a_turn_waits_for_the_models(memoryos_server, browser):
    """The socket is played by the test: the server's frames while its warm-up runs."""
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    sign_up(page, memoryos_server, "early")
    sockets = []
    page.route_web_socket("**/ws/chat/", lambda ws: sockets.append(ws))  # never reaches the server
    page.reload()
    socket = sockets[-1]
    socket.send(json.dumps({"type": "ready", "max_message_chars": 4000, "models": "loading"}))
    expect(page.locator("#connection")).to_contain_text("loading the memory models")
    socket.send(json.dumps({"type": "turn.user", "turn_id": "a", "text": "Hello there", "sona": "assistant"}))
    socket.send(json.dumps({"type": "turn.started", "turn_id": "a", "loading": True}))
    expect(page.locator(".turn .thinking-label")).to_contain_text("loading the memory models")
    socket.send(json.dumps({"type": "models.ready", "models": "ready"}))
    expect(page.locator('#connection[data-state="open"]')).to_contain_text("Connected")
    context.close()
