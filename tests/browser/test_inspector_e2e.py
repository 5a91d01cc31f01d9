"""The memory inspector in Chromium, on the demo user as `make run` makes it: every page opens, every
plotly figure is drawn with data, no console errors; the replay's slider and buttons move through the
log and the tier counts change. Screenshots go to test-artifacts/ (the README shows them)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import sign_up
from tests.browser.test_chat_e2e import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIGURES_DRAWN = """() => [...document.querySelectorAll('[data-figure]')].map((el) => ({
  id: el.dataset.figure,
  ready: el.classList.contains('figure-ready'),
  traces: (el.data || []).length,
  // plotly.js keeps numpy arrays as {dtype, bdata} in el.data and decodes them into _fullData
  points: (el._fullData || []).reduce((n, t) => n + ((t.x && t.x.length) || (t.r && t.r.length) || 0), 0),
}))"""


def sign_in(page, server) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", "demo")
    page.fill("input[name=password]", "demo-memory")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


def open_page(page, url: str, errors: list[str]) -> list[dict]:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    if page.locator("[data-figure]").count():
        page.wait_for_function("() => [...document.querySelectorAll('[data-figure]')]"
                               ".every((el) => el.classList.contains('figure-ready'))", timeout=30_000)
    assert not errors, f"{url}: console errors {errors}"
    return page.evaluate(FIGURES_DRAWN)


def test_every_inspector_page_draws_its_figures_without_errors(demo_server, browser, artifacts):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    sign_in(page, demo_server)
    page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)  # a send before it is refused
    send(page, "What do you remember about my training plan?", 0)  # a trace to inspect
    base = f"{demo_server.url}/inspector/demo"
    expected_figures = {"": ["tiers-figure", "decay-figure"], "mtm/": ["heat-figure", "membership-figure"],
                        "lpm/": ["traits-figure"], "stm/": [], "recalls/?q=sailing": [], "events/": [],
                        "replay/": []}
    for path, figures in expected_figures.items():
        drawn = open_page(page, f"{base}/{path}", errors)
        assert [f["id"] for f in drawn] == figures, path
        assert all(f["traces"] > 0 and f["points"] > 0 for f in drawn), (path, drawn)
        name = path.split("?")[0].strip("/") or "overview"
        page.screenshot(path=str(artifacts / f"inspector-{name}.png"), full_page=True)
        if path.startswith("recalls/"):
            assert page.locator(".recalled .item").count() > 0  # the search found something
    # The pages reached from others: a segment, a trait's evidence, a provenance graph, a trace.
    page.goto(f"{base}/mtm/")
    page.locator("#segment-table tbody a").first.click()
    drawn = open_page(page, page.url, errors)
    assert drawn and drawn[0]["id"] == "heat-figure" and drawn[0]["points"] > 0
    page.screenshot(path=str(artifacts / "inspector-segment.png"), full_page=True)
    page.locator("a", has_text="what it came from").click()
    drawn = open_page(page, page.url, errors)
    assert drawn[0]["id"] == "graph-figure" and drawn[0]["points"] > 1
    page.screenshot(path=str(artifacts / "inspector-provenance.png"), full_page=True)
    page.goto(f"{base}/lpm/")
    page.locator("ol.plain a").first.click()
    assert page.locator("h2").first.inner_text().strip()
    open_page(page, page.url, errors)
    page.goto(f"{base}/recalls/")
    page.locator("#trace-list tbody a").first.click()
    open_page(page, page.url, errors)
    assert "Where the time went" in page.content()
    context.close()


def test_the_replay_moves_through_the_log(demo_server, browser, artifacts):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    sign_in(page, demo_server)
    page.goto(f"{demo_server.url}/inspector/demo/replay/")

    def counts() -> dict[str, int]:
        return {el.get_attribute("data-count"): int(el.inner_text()) for el in
                page.locator("#replay-state [data-count]").all()}

    end = counts()
    assert end["mtm"] > 0 and end["facts"] > 0 and end["step"] > 100
    page.click("[data-replay=start]")
    page.wait_for_function("() => document.querySelector('#replay-state').dataset.step === '0'")
    assert counts() == {**{k: 0 for k in end}}
    for step in range(1, 4):
        page.click("[data-replay=forward]")
        page.wait_for_function(f"() => document.querySelector('#replay-state').dataset.step === '{step}'")
    assert counts()["stm"] >= 1  # the first pages entered short-term memory
    page.locator("#replay-step").fill(str(end["step"] // 2))  # the slider
    page.wait_for_function(f"() => document.querySelector('#replay-state').dataset.step === '{end['step'] // 2}'")
    middle = counts()
    assert middle != end and middle["mtm_pages"] > 0
    page.screenshot(path=str(artifacts / "inspector-replay-middle.png"), full_page=True)
    page.click("[data-replay=play]")  # plays on from the middle
    page.wait_for_function(f"() => +document.querySelector('#replay-state').dataset.step > {end['step'] // 2 + 2}",
                           timeout=20_000)
    page.click("[data-replay=play]")  # pause
    page.click("[data-replay=end]")
    page.wait_for_function(f"() => document.querySelector('#replay-state').dataset.step === '{end['step']}'")
    assert counts() == end
    assert not errors, errors
    context.close()


STATEMENT = "My rowing boat is named Rocinante."


def recalled_user_texts(page, server, question: str) -> list[str]:
    """Ask in the chat, open the reply's recall panel, and read what it recalled (the person's own
    words of each item; replies are left out, they may quote anything)."""
    page.goto(f"{server.url}/")
    page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)  # a message sent before says so
    done = page.locator('.turn[data-state="done"]').count()
    send(page, question, done)
    last = page.locator("article.turn").last
    last.locator("details.recall summary").click()
    last.locator(".recall-body .recall-section").first.wait_for(timeout=30_000)
    return last.locator(".recall-body .recall-text:not(.reply-text)").all_inner_texts()


def remembered(texts: list[str]) -> bool:
    return any("Rocinante" in text for text in texts)


def test_an_operator_steers_from_the_inspector_and_the_chat_follows(demo_server, browser, artifacts):
    """Repress, undo, pin and delete a memory from the inspector: each next reply's recall shows it."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    sign_up(page, demo_server.url, "opal", "a-long-secret-1", skip_profile=False)
    page.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    send(page, STATEMENT, 0)
    assert remembered(recalled_user_texts(page, demo_server, "What is my rowing boat called?"))

    def stm_slot():
        page.goto(f"{demo_server.url}/inspector/opal/stm/")
        said = page.locator("p.said", has_text=f"User: {STATEMENT}")  # not a reply that quotes it
        return page.locator("li.slot", has=said)

    def act(action: str) -> None:
        """Click an action and wait for its answer: the next goto must not cut the request off."""
        with page.expect_response(lambda response: response.request.method == "POST"
                                  and f"/{action.removeprefix('un')}/" in response.url):
            stm_slot().locator(f"button[data-action={action}]").click()

    act("repress")
    stm_slot().locator(".tag.bad", has_text="repressed").wait_for()
    page.screenshot(path=str(artifacts / "inspector-repressed.png"), full_page=True)
    assert not remembered(recalled_user_texts(page, demo_server, "Do you know my boat's name?"))
    act("unrepress")  # the undo
    stm_slot().locator("button[data-action=repress]").wait_for()
    assert remembered(recalled_user_texts(page, demo_server, "Remind me what my boat is called?"))
    act("pin")
    stm_slot().locator(".tag.ok", has_text="pinned").wait_for()
    assert stm_slot().locator(".tag.ok", has_text="pinned").count() == 1  # still there after a reload
    # A refused correction says why in place (htmx swaps the 400 answer in; by default it would not).
    stm_slot().locator("button[data-action=correct]").click()
    form = page.locator("form.correct-form")
    form.wait_for()
    form.locator("textarea[name=query]").fill("   ")
    form.locator("button.action", has_text="Save as version").click()
    form.locator(".error[role=alert]", has_text="The message is empty.").wait_for()
    assert page.url.endswith("/inspector/opal/stm/") and page.locator("nav").count()  # in place, not a bare page
    errors.clear()  # the browser logs the 400 itself; that is the answer expected here
    stm_slot().locator("button[data-action=delete]").click()
    dialog = page.locator("dialog.confirm")
    dialog.wait_for()
    assert "final" in dialog.inner_text() and "1 page deleted" in dialog.inner_text()
    page.screenshot(path=str(artifacts / "inspector-delete-dialog.png"), full_page=True)
    dialog.locator("button[data-action=confirm-delete]").click()
    page.wait_for_url(f"{demo_server.url}/inspector/opal/")
    assert not remembered(recalled_user_texts(page, demo_server, "What was my rowing boat called?"))
    assert stm_slot().count() == 0
    assert not errors, errors
    context.close()
