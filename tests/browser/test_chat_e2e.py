"""End to end in Chromium: sign up, fill in the profile, chat nine turns over the websocket (two
sonas, a second tab watching), reload, and find every turn and the STM → MTM move."""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import RATE_BURST, sign_up

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPLY_TIMEOUT_MS = 120_000
MESSAGES = [
    "Hi! I live in Lisbon and I work as a nurse on night shifts.",
    "My sister Lea is getting married in June and I am planning her party.",
    "I started running last month, three times a week along the river.",
    "I have a cat called Miso who hates the vacuum cleaner.",
    "Can you suggest a simple dinner? I love grilled fish and lemon.",
    "For the party I want a playlist with old soul music.",
    "My knees hurt a bit after long runs; should I rest more?",
    "Miso the cat knocked my coffee over this morning.",
    "What do you remember about my sister's wedding?",
]

# Records every state a turn passes through, so a short "thinking" phase is not missed.
WATCH_STATES = """
window.__turnStates = new Set();
new MutationObserver((records) => {
  for (const r of records) {
    const nodes = r.type === "attributes" ? [r.target] : [...r.addedNodes];
    for (const n of nodes) if (n.dataset && n.dataset.state) window.__turnStates.add(n.dataset.state);
  }
}).observe(document.getElementById("transcript"), {subtree: true, childList: true, attributes: true,
                                                    attributeFilter: ["data-state"]});
"""


def send(page, text: str, done_before: int) -> None:
    """Send a message and wait for its reply to finish, or for the page to show an error."""
    page.fill("#message", text)
    page.press("#message", "Enter")
    page.wait_for_function(
        """(n) => document.querySelectorAll('.turn[data-state="done"]').length > n
                  || !document.getElementById("chat-alert").hidden""", arg=done_before,
        timeout=REPLY_TIMEOUT_MS)
    alert = page.locator("#chat-alert")
    assert not alert.is_visible(), f"the page showed an error: {alert.inner_text()}"


def test_chat_remembers_across_reload_and_moves_old_turns_to_mtm(memoryos_server, browser, artifacts):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(f"{memoryos_server.url}/accounts/signup/")
    page.fill("#id_username", "robin")
    page.fill("#id_password1", "a-long-secret-1")
    page.fill("#id_password2", "a-long-secret-1")
    page.click("button[type=submit]")
    page.wait_for_url(f"{memoryos_server.url}/")

    # First visit: the profile card, saved over htmx.
    expect(page.locator("#profile-card")).to_be_visible()
    page.screenshot(path=artifacts / "chat-first-visit.png")
    page.fill("#profile-card #id_name", "Robin")
    page.fill("#profile-card #id_birth_year", "1988")
    page.click("#profile-card button[type=submit]")
    expect(page.locator("#profile-card")).to_contain_text("Thanks, Robin")
    expect(page.locator('#connection[data-state="open"]')).to_be_visible(timeout=30_000)
    page.evaluate(WATCH_STATES)

    for i, text in enumerate(MESSAGES[:5]):
        send(page, text, i)
    assert {"thinking", "streaming", "done"} <= set(page.evaluate("[...window.__turnStates]"))

    # A second sona, created and selected over htmx; memory is shared with the first.
    page.click(".new-sona summary")
    page.fill("#sona-bar #sona_name", "coach")
    page.fill("#sona-bar #sona_profile", "An encouraging running and wellbeing coach.")
    page.click("#sona-bar button[type=submit]")
    expect(page.locator("#sona-select option:checked")).to_have_text("coach")

    # A second tab of the same person sees the next turns arrive live.
    other_tab = context.new_page()
    other_tab.goto(f"{memoryos_server.url}/")
    expect(other_tab.locator('#connection[data-state="open"]')).to_be_visible(timeout=30_000)
    for i, text in enumerate(MESSAGES[5:], start=5):
        send(page, text, i)
    expect(other_tab.locator('.turn[data-state="done"]')).to_have_count(9, timeout=REPLY_TIMEOUT_MS)
    expect(page.locator(".turn").last.locator(".who")).to_have_text("coach")
    other_tab.close()

    page.reload()
    turns = page.locator(".turn")
    expect(turns).to_have_count(9)
    assert page.locator(".turn .query").all_inner_texts() == MESSAGES
    assert page.locator('.turn[data-state="done"]').count() == 9
    assert page.locator(".turn .who").all_inner_texts() == ["assistant"] * 5 + ["coach"] * 4
    page.screenshot(path=artifacts / "chat-after-reload.png")

    # The panel beside the last reply, read back from its stored retrieval trace.
    last = turns.last
    last.locator("details.recall summary").click()
    expect(last.locator(".recall-section").first).to_be_visible(timeout=30_000)
    expect(last.locator(".recall-body")).to_contain_text("Recent turns (short-term)")
    expect(last.locator(".recall-body .why").first).to_be_visible()  # why, in words, first
    last.locator("details.numbers summary").first.click()  # the numbers, for operators
    expect(last.locator(".scores").first).to_be_visible()
    last.locator(".recall-body").scroll_into_view_if_needed()
    page.screenshot(path=artifacts / "chat-recall-panel.png")

    stats = page.request.get(f"{memoryos_server.url}/api/memory/stats").json()
    assert stats["stm_pages"] == 7 and stats["mtm_pages"] >= 2 and stats["total_pages"] == 9
    command = json.loads(memoryos_server.manage("memory_stats", "--user", "robin", "--json"))
    assert command["stm_pages"] == 7 and command["mtm_pages"] >= 2
    expect(page.locator('[data-stat="stm_pages"]')).to_have_text("7")
    context.close()


def test_errors_are_shown_to_the_person(memoryos_server, browser, artifacts):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1000, "height": 700})
    page = context.new_page()
    sign_up(page, memoryos_server.url, "sam", "a-long-secret-2")  # the profile skipped
    expect(page.locator("#profile-card")).to_contain_text("No problem")
    page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    alert = page.locator("#chat-alert")
    # Too long: the page says so before sending anything.
    page.fill("#message", "x" * 4100)
    page.press("#message", "Enter")
    alert.wait_for(state="visible")
    assert "the limit is 4000" in alert.inner_text()
    # A flood: the server's rate limit answers with an error frame, shown to the person.
    page.evaluate("""(count) => {  // typed and sent faster than frames come back: one task
        const input = document.getElementById("message");
        for (let i = 0; i < count; i++) {
            input.value = `Quick message number ${i}`;
            document.getElementById("composer").requestSubmit();
        }
    }""", RATE_BURST + 3)
    expect(alert).to_contain_text("too fast", timeout=30_000)
    page.screenshot(path=artifacts / "chat-rate-limited.png")
    expect(page.locator('.turn:not([data-state="done"])')).to_have_count(0, timeout=REPLY_TIMEOUT_MS)
    assert RATE_BURST <= page.locator(".turn").count() < RATE_BURST + 3
    # Every refused message comes back to the box, not only the last (issue 50, finding 8).
    taken = page.locator(".turn .query").all_inner_texts()
    refused = [f"Quick message number {i}" for i in range(RATE_BURST + 3) if f"Quick message number {i}" not in taken]
    assert refused and sorted(page.input_value("#message").split("\n\n")) == sorted(refused)
    page.fill("#message", "")
    # A frame the page itself never sends gets an error frame, not a closed socket.
    error = page.evaluate("""() => new Promise((resolve) => {
        const ws = new WebSocket(`ws://${location.host}/ws/chat/`);
        ws.onopen = () => ws.send("not json");
        ws.onmessage = (event) => { const f = JSON.parse(event.data); if (f.type === "error") resolve(f); };
    })""")
    assert error["code"] in ("bad_json", "rate_limited")
    context.close()


def test_a_file_attached_in_the_chat_is_uploaded_sent_with_the_message_and_downloadable(memoryos_server, browser,
                                                                                          artifacts, tmp_path):
    from playwright.sync_api import expect

    notes = tmp_path / "trip notes.txt"
    notes.write_text("The ferry to Hvar leaves Split at 07:45; the key box code is 5521.")
    binary = tmp_path / "tool.exe"
    binary.write_bytes(b"MZ\x90\x00\x03\x00\xff\xfe")
    context = browser.new_context(viewport={"width": 1000, "height": 760})
    page = context.new_page()
    sign_up(page, memoryos_server.url, "kim", "a-long-secret-3")
    page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)

    page.set_input_files("#attach", str(binary))  # refused by the server: said, and not sent
    expect(page.locator("#chat-alert")).to_contain_text("tool.exe: Only text (UTF-8), PDF and images")
    expect(page.locator('#pending-files li[data-state="failed"]')).to_have_count(1)
    page.locator('#pending-files li[data-state="failed"] button').click()
    page.set_input_files("#attach", str(notes))
    expect(page.locator('#pending-files li[data-state="ready"]')).to_have_text("trip notes.txt×")
    page.screenshot(path=artifacts / "chat-file-attached.png")
    send(page, "Here are my travel notes.", 0)
    expect(page.locator("#pending-files")).to_be_hidden()
    link = page.locator(".turn .attached a")
    expect(link).to_have_text("trip notes.txt")
    assert page.request.get(memoryos_server.url + link.get_attribute("href")).text() == notes.read_text()

    page.reload()  # the stored turn shows its file too
    expect(page.locator(".turn .attached a")).to_have_text("trip notes.txt")
    files = page.request.get(f"{memoryos_server.url}/api/memory/files").json()
    assert [f["name"] for f in files["items"]] == ["trip notes.txt"] and files["items"][0]["page_id"]
    context.close()


# Finish orders two server processes can produce for two messages: seqs say how they were stored.
ORDERS = {
    "stored in arrival order, finished in reverse": [("b", 2), ("a", 1)],
    "stored in reverse, finished in arrival order": [("a", 2), ("b", 1)],
    "stored in reverse, finished in reverse": [("b", 1), ("a", 2)],
}


@pytest.mark.parametrize("finishes", ORDERS.values(), ids=ORDERS.keys())
def test_turns_settle_in_stored_order_whatever_order_frames_arrive(memoryos_server, browser, finishes):
    """The socket is played by the test, so each interleaving of frames happens every time."""
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{memoryos_server.url}/accounts/signup/")
    username = f"order{len(finishes)}{finishes[0][0]}{finishes[0][1]}"
    page.fill("#id_username", username)
    page.fill("#id_password1", "a-long-secret-4")
    page.fill("#id_password2", "a-long-secret-4")
    page.click("button[type=submit]")
    page.wait_for_url(f"{memoryos_server.url}/")
    sockets = []
    page.route_web_socket("**/ws/chat/", lambda ws: sockets.append(ws))  # never reaches the server
    page.reload()
    expect(page.locator('#connection[data-state="open"]')).to_be_visible()
    socket = sockets[-1]
    texts = {"a": "Message a, shown first", "b": "Message b, shown second"}
    for turn_id, text in texts.items():
        socket.send(json.dumps({"type": "turn.user", "turn_id": turn_id, "text": text, "sona": "assistant"}))
    for turn_id, seq in finishes:
        socket.send(json.dumps({"type": "turn.done", "turn_id": turn_id, "page_id": f"page-{turn_id}", "seq": seq,
                                "reply": f"reply {turn_id}", "offline": True, "recall_url": "/"}))
    expect(page.locator('.turn[data-state="done"]')).to_have_count(2)
    by_seq = [texts[turn_id] for turn_id, _ in sorted(finishes, key=lambda finish: finish[1])]
    assert page.locator(".turn .query").all_inner_texts() == by_seq
    context.close()


def test_the_keyboard_reaches_the_message_box_first_and_a_last_panel_opens_in_view(memoryos_server, browser):
    """Issue 50, finding 7: the composer came after every "What I remembered" toggle in tab order, and
    the last one opened under the composer."""
    person = browser.new_context(viewport={"width": 1280, "height": 700}).new_page()
    sign_up(person, memoryos_server.url, "keyboard", "a-long-secret-1")
    person.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    for number in range(6):
        send(person, f"Note {number}: I water the ferns on {['Monday', 'Tuesday', 'Friday'][number % 3]}s.", number)
    person.goto(memoryos_server.url)  # the turns as the page renders them
    person.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    person.locator("a.skip-link").first.focus()  # the page's first stop, before the navigation
    person.keyboard.press("Tab")
    assert person.evaluate("document.activeElement.textContent") == "Skip to the message box"
    person.keyboard.press("Enter")
    assert person.evaluate("document.activeElement.id") == "message"
    last = person.locator("#transcript details.recall").last
    person.locator("#transcript").evaluate("(t) => { t.scrollTop = 0; }")
    last.locator("summary").click()
    person.wait_for_selector("#transcript details.recall[open] .recall-body :not(.muted)", timeout=15_000)
    person.wait_for_timeout(300)
    inside = person.evaluate("""() => {
        const t = document.querySelector('#transcript').getBoundingClientRect();
        const d = [...document.querySelectorAll('#transcript details.recall')].at(-1);
        const s = d.querySelector('summary').getBoundingClientRect();
        const b = d.querySelector('.recall-body').getBoundingClientRect();
        // the summary stays in view, and the panel's contents show (not below the composer)
        return s.top >= t.top - 1 && b.top < t.bottom - 80 && Math.min(b.bottom, t.bottom) - b.top >= 80;
    }""")
    assert inside
