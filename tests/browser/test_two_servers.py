"""Two server processes behind one Redis channel layer: a person with a tab on each sees every turn,
stored once and in order, whichever process ran it."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.conftest import migrate, require_browser, running_server, server_env, sign_up
from tests.conftest import REDIS_URL, redis_available

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPLY_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory):
    require_browser()
    if not redis_available():
        pytest.skip("no Redis server at 127.0.0.1:6379")
    var_dir = tmp_path_factory.mktemp("two-servers")
    prefix = f"memoryos-e2e-{uuid.uuid4().hex[:12]}"
    # One database; each process its own embedded vector shard (one process may open a shard).
    envs = [server_env(var_dir, REDIS_URL=REDIS_URL, MEMORYOS_CHANNEL_PREFIX=prefix,
                       QDRANT_PATH=str(var_dir / f"qdrant-{n}")) for n in (1, 2)]
    migrate(envs[0])
    with running_server(envs[0], var_dir / "daphne-1.log") as first, \
            running_server(envs[1], var_dir / "daphne-2.log") as second:
        yield first, second


def test_two_processes_one_user_two_tabs(two_servers, browser, artifacts):
    from playwright.sync_api import expect

    first, second = two_servers
    left_context = browser.new_context(viewport={"width": 1100, "height": 800})
    left = left_context.new_page()
    sign_up(left, first.url, "dana", "a-long-secret-3")
    expect(left.locator("#profile-card")).to_contain_text("No problem")
    # The same session on the other process (same database, same cookie).
    right_context = browser.new_context(viewport={"width": 1100, "height": 800})
    right_context.add_cookies([{**cookie, "url": second.url} for cookie in
                               [{"name": c["name"], "value": c["value"]} for c in left_context.cookies()]])
    right = right_context.new_page()
    right.goto(f"{second.url}/")
    for tab in (left, right):
        expect(tab.locator('#connection[data-state="open"]')).to_be_visible(timeout=30_000)

    messages = {left: "Left tab on process one: I collect old maps.",
                right: "Right tab on process two: I play the cello."}
    for tab, text in messages.items():
        tab.fill("#message", text)
    for tab in messages:
        tab.press("#message", "Enter")
    for tab in (left, right):
        expect(tab.locator('.turn[data-state="done"]')).to_have_count(2, timeout=REPLY_TIMEOUT_MS)
    live_order = [tab.locator(".turn .query").all_inner_texts() for tab in (left, right)]
    assert live_order[0] == live_order[1] and sorted(live_order[0]) == sorted(messages.values())

    left.reload()
    stored = left.locator(".turn .query").all_inner_texts()
    assert stored == live_order[0]  # stored once each, in the order both tabs showed
    stats = left.request.get(f"{first.url}/api/memory/stats").json()
    assert stats["total_pages"] == 2 and stats["pending_pages"] == 0
    right.screenshot(path=artifacts / "chat-two-servers.png")
    left_context.close()
    right_context.close()
