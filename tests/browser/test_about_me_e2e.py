"""The person's memory, end to end in Chromium: "forget that" in the chat; the "What I know about
you" page (correct and its undo, forget, export, erase everything confirmed); another person sees
nothing of it and cannot touch it (404)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import sign_up
from tests.browser.test_chat_e2e import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# A fact as long-term memory holds it, stated in the person's "I live in Lyon." turn.
LYON_FACT = """
from django.contrib.auth import get_user_model
from memory.models import DialoguePage, MemoryNode
from memory.services import graph
from persona.models import KnowledgeFact
user = get_user_model().objects.get(username="mira")
page = DialoguePage.objects.get(user=user, query="I live in Lyon.")
# read at its turn already (memory/services/facts.py), else as a promotion writes it
fact = KnowledgeFact.objects.filter(user=user, normalised="user lives in lyon").first() or KnowledgeFact.objects.create(
    user=user, text="User lives in Lyon", normalised="user lives in lyon", source_page_ids=[str(page.id)],
    timestamp=page.timestamp)
node = graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.FACT, row=fact)
graph.edge_put(user_id=user.pk, source=node, target=graph.node_of(user_id=user.pk, obj=page,
               kind=MemoryNode.Kind.PAGE), relation="stated_in")
print(fact.pk)
"""


def last_reply(page) -> str:
    return page.locator('.turn[data-state="done"]').last.inner_text()


def test_forget_in_the_chat_and_the_persons_page(memoryos_server, browser, artifacts):
    url = memoryos_server.url
    person = browser.new_context(accept_downloads=True).new_page()
    sign_up(person, url, "mira", "a-long-secret-1")
    person.wait_for_selector('#connection[data-state="open"]', timeout=30_000)
    # the last states no lasting fact (a passing mood): "Things you said about yourself" lists it
    said = ["I have a cat named Miso.", "I live in Lyon.", "I'm so tired today after the cello rehearsal."]
    for done, text in enumerate(said):
        send(person, text, done)

    send(person, "Forget that I have a cat.", len(said))
    assert "forgotten" in last_reply(person) and "Miso" not in last_reply(person)
    send(person, "What is my cat's name?", len(said) + 1)
    assert "Miso" not in last_reply(person)
    person.reload()
    assert "Miso" not in person.locator("#transcript").inner_text()  # the request is stored redacted

    fact_id = memoryos_server.manage("shell", "-c", LYON_FACT).strip().splitlines()[-1]
    person.click("nav >> text=About me")
    person.wait_for_url(f"{url}/me/")
    assert "Miso" not in person.content()
    lyon = person.locator(f'.known-item[data-kind="fact"][data-id="{fact_id}"]')
    assert "You live in Lyon" in lyon.inner_text() and "I live in Lyon." in lyon.inner_text()
    assert "I'm so tired today after the cello rehearsal." in person.locator("#known-said").inner_text()
    person.screenshot(path=str(artifacts / "about-me.png"), full_page=True)

    lyon.locator("summary", has_text="Correct").click()
    lyon.locator("input[name=value]").fill("User lives in Porto")
    lyon.locator("button", has_text="Save").click()
    assert "You live in Porto" in person.locator(f'.known-item[data-id="{fact_id}"]').inner_text()
    person.click("#undo-correction")
    assert "You live in Lyon" in person.locator(f'.known-item[data-id="{fact_id}"]').inner_text()

    person.locator(f'.known-item[data-id="{fact_id}"] a', has_text="Forget").click()
    person.wait_for_selector("#forget-plan")  # what goes, listed before anything does (issue 50)
    assert "I live in Lyon." in person.locator("#plan-told").inner_text()
    person.click("#forget-confirm")
    person.wait_for_selector(".messages .message")
    assert "Forgotten for good" in person.locator(".messages").inner_text()
    assert person.locator(f'.known-item[data-id="{fact_id}"]').count() == 0
    assert "I live in Lyon." not in person.content()

    stranger = browser.new_context().new_page()
    sign_up(stranger, url, "eve", "another-secret-1")
    stranger.goto(f"{url}/me/")
    assert "cello" not in stranger.content() and "Miso" not in stranger.content()
    statement = person.locator('#known-said .known-item').first.get_attribute("data-id")
    csrf = next(c["value"] for c in stranger.context.cookies() if c["name"] == "csrftoken")
    for action in ("forget", "correct"):
        refused = stranger.request.post(f"{url}/me/said/{statement}/{action}/",
                                        form={"csrfmiddlewaretoken": csrf, "value": "x"},
                                        headers={"Referer": f"{url}/me/"})
        assert refused.status == 404, action
    person.reload()
    assert "I'm so tired today after the cello rehearsal." in person.content()

    person.click("#erase-everything")
    person.wait_for_url(f"{url}/me/erase/")
    with person.expect_download() as download:
        person.click("#export-first")
    assert download.value.suggested_filename == "memoryos-mira.zip"
    assert download.value.path().stat().st_size > 100
    person.fill("#confirm", "erase")
    person.click("#erase-confirm")
    person.wait_for_url(f"{url}/me/")
    assert person.locator("#nothing-known").is_visible()
    person.goto(f"{url}/")
    assert "cello" not in person.locator("#transcript").inner_text()

    # The export brought back in the browser restores what was erased (issue 50, finding 1).
    exported = download.value.path()
    person.goto(f"{url}/settings/import/")
    person.set_input_files("#export-file", str(exported))
    person.click("form button:has-text('Import')")
    person.wait_for_url(f"{url}/me/")
    assert "Your memory is restored from the export" in person.locator(".messages").inner_text()
    assert "cello rehearsal" in person.content()
