"""The person's own page, "What I know about you": facts with their sources and period, correct
with an undo, forget, export, erase everything (confirmed). Each route acts on the signed-in
person's memory only: another person's ids are a 404 and change nothing."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from memory.models import DialoguePage, LifecycleEvent, MemoryNode
from memory.services import graph
from memory.services.long_term import profile_update
from memory.services.turns import turn_run
from persona.models import AgentTrait, KnowledgeFact, UserProfile
from tests.memory.services.test_editing import fact

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def ana(make_user):
    user = make_user("ana")
    profile_update(user=user, name="Ana", extra={"city": "Lyon"})
    turn_run(user=user, message="I have a cat named Miso.")
    turn_run(user=user, message="I live in Lyon.")
    turn_run(user=user, message="I moved to Porto last week.")
    cat, lyon, porto = DialoguePage.objects.filter(user=user).order_by("seq")
    cat_fact = fact(user, "User has a cat named Miso", [cat])
    new = fact(user, "User lives in Porto", [porto])
    old = fact(user, "User lives in Lyon", [lyon])
    KnowledgeFact.objects.filter(pk=old.pk).update(valid_until=timezone.make_aware(timezone.datetime(2026, 3, 10)),
                                                   superseded_by=new.pk)
    return user, cat_fact, old, new


def test_the_page_lists_facts_with_sources_history_and_profile(client, ana):
    user, cat_fact, old, new = ana
    client.force_login(user)
    page = client.get("/me/").content.decode()
    assert "you have a cat named miso" in page.lower() and "I have a cat named Miso." in page
    assert "until March 2026; since then: you live in Porto" in page
    assert "Your name:" in page and "Ana" in page and "City:" in page
    assert 'href="/me/"' in client.get("/").content.decode()  # the nav links to it


def test_correct_and_its_undo(client, ana):
    user, cat_fact, _, _ = ana
    client.force_login(user)
    done = client.post(f"/me/facts/{cat_fact.pk}/correct/", {"value": "User has a cat named Mochi"})
    assert done.status_code == 302 and "?undo=" in done["Location"]
    cat_fact.refresh_from_db()
    assert cat_fact.text == "User has a cat named Mochi" and cat_fact.version == 2
    page = client.get(done["Location"]).content.decode()
    assert "Undo the correction" in page
    event = done["Location"].rsplit("=", 1)[1]
    client.post(f"/me/undo/{event}/")
    cat_fact.refresh_from_db()
    assert cat_fact.text == "User has a cat named Miso"
    assert client.post(f"/me/undo/{event}/").status_code == 404  # once only
    profile = client.post("/me/profile/extra.city/correct/", {"value": "Porto"})
    assert profile.status_code == 302 and UserProfile.objects.get(user=user).extra["city"] == "Porto"


def test_the_correct_box_opens_with_the_words_shown_and_saves_them_as_a_fact(client, ana):
    user, cat_fact, _, _ = ana
    client.force_login(user)
    page = client.get("/me/").content.decode()
    assert 'value="You have a cat named Miso"' in page and 'value="User has a cat named Miso"' not in page
    client.post(f"/me/facts/{cat_fact.pk}/correct/", {"value": "You have a cat named Mochi"})
    cat_fact.refresh_from_db()
    assert cat_fact.text == "User has a cat named Mochi"
    assert "You have a cat named Mochi" in client.get("/me/").content.decode()


def test_forget_erases_the_fact_and_the_turns_that_said_it(client, ana):
    user, cat_fact, _, _ = ana
    client.force_login(user)
    assert client.post(f"/me/facts/{cat_fact.pk}/forget/").status_code == 302
    assert not KnowledgeFact.objects.filter(pk=cat_fact.pk).exists()
    assert not DialoguePage.objects.filter(user=user, query__icontains="Miso").exists()
    assert "Miso" not in client.get("/me/").content.decode()
    client.post("/me/profile/extra.city/forget/")
    profile = UserProfile.objects.get(user=user)
    assert "city" not in profile.extra and not [h for h in profile.history if h["field"] == "extra.city"]
    assert LifecycleEvent.objects.filter(user=user, payload__action="forget").count() == 2


def test_export_then_erase_everything_confirmed(client, ana):
    user, *_ = ana
    client.force_login(user)
    export = client.get("/me/export/")
    assert export.status_code == 200 and export["Content-Type"] == "application/zip"
    bundle = zipfile.ZipFile(io.BytesIO(export.content))
    assert {"index.html", "memory.json", "memoryos.car"} <= set(bundle.namelist())
    page = bundle.read("index.html").decode()  # readable in any browser (issue 50, finding 1)
    assert "You have a cat named Miso" in page and "I have a cat named Miso." in page
    assert "You live in Lyon <small>(until March 2026" in page
    data = json.loads(bundle.read("memory.json"))
    assert [t["you"] for t in data["conversation"]][:1] == ["I have a cat named Miso."]
    before = (sorted(KnowledgeFact.objects.filter(user=user).values_list("text", flat=True)),
              sorted(DialoguePage.objects.filter(user=user).values_list("query", "response")))
    confirm = client.get("/me/erase/").content.decode()
    assert 'href="/me/export/"' in confirm
    refused = client.post("/me/erase/", {"confirm": "yes"})
    assert refused.status_code == 400 and DialoguePage.objects.filter(user=user).exists()
    assert client.post("/me/erase/", {"confirm": "erase"}).status_code == 302
    assert not DialoguePage.objects.filter(user=user).exists() and not KnowledgeFact.objects.filter(user=user).exists()
    assert "I don't know anything about you yet" in client.get("/me/").content.decode()
    # and brought back on the import page: everything as it was
    restored = client.post("/settings/import/", {"export": SimpleUploadedFile("memoryos-ana.zip", export.content)})
    assert restored.status_code == 302 and restored.url == "/me/"
    assert (sorted(KnowledgeFact.objects.filter(user=user).values_list("text", flat=True)),
            sorted(DialoguePage.objects.filter(user=user).values_list("query", "response"))) == before


def test_another_person_sees_and_changes_nothing(client, ana, make_user):
    user, cat_fact, old, _ = ana
    eve = make_user("eve")
    client.force_login(eve)
    page = client.get("/me/").content.decode()
    assert "Miso" not in page and "Lyon" not in page
    cat_page = DialoguePage.objects.get(user=user, seq=1)
    for url in (f"/me/facts/{cat_fact.pk}/forget/", f"/me/facts/{old.pk}/correct/", f"/me/said/{cat_page.pk}/forget/",
                "/me/traits/extraversion/forget/", "/me/profile/extra.city/forget/", "/me/nonsense/1/forget/",
                "/me/facts/not-a-uuid/forget/"):
        assert client.post(url, {"value": "User lives in Mars"}).status_code == 404, url
    undo = LifecycleEvent.objects.create(user=user, kind="edited", subject_id="about_me",
                                         payload={"action": "correct", "undo": {"facts": [], "pages": [],
                                                                                 "profile": {}}})
    assert client.post(f"/me/undo/{undo.pk}/").status_code == 404
    assert KnowledgeFact.objects.filter(user=user).count() == 3
    assert DialoguePage.objects.filter(user=user).count() == 3
    assert UserProfile.objects.get(user=user).extra == {"city": "Lyon"}
    client.logout()
    assert client.get("/me/").status_code == 302  # to the login page


def test_the_assistants_notes_about_the_person_are_shown_and_can_be_forgotten(client, ana, make_user):
    """Issue 50, finding 4: agent traits held "Assistant will remember that on 14 March the user is
    flying to Lisbon", never shown on /me/."""
    user = ana[0]
    page = DialoguePage.objects.get(user=user, seq=1)
    note = AgentTrait.objects.create(user=user, text="Assistant will remember that on 14 March the user is flying "
                                     "to Lisbon", normalised="lisbon note", source_page_ids=[str(page.id)])
    graph.row_node_put(user_id=user.pk, kind=MemoryNode.Kind.AGENT_TRAIT, row=note)
    client.force_login(user)
    shown = client.get("/me/").content.decode()
    assert "What the assistant noted in your conversations" in shown and "flying to Lisbon" in shown
    eve = make_user("eve")
    client.force_login(eve)
    assert client.post(f"/me/notes/{note.pk}/forget/").status_code == 404  # not hers
    client.force_login(user)
    answer = client.post(f"/me/notes/{note.pk}/forget/", follow=True)
    assert "Forgotten for good: 1 note of the assistant&#x27;s." in answer.content.decode()
    assert not AgentTrait.objects.filter(pk=note.pk).exists()
    assert "flying to Lisbon" not in client.get("/me/").content.decode()


def test_forget_lists_each_turn_it_removes_and_why_before_it_acts(client, ana):
    """Issue 50, finding 2: forget removed six turns, both "what do you know about me?" exchanges
    among them, and said only "with the turns that said it"."""
    user, cat_fact, _, _ = ana
    asked = turn_run(user=user, message="What do you know about me?")
    assert "Miso" in asked.reply
    client.force_login(user)
    plan = client.get(f"/me/facts/{cat_fact.pk}/forget/").content.decode()
    told = plan.split('id="plan-told"')[1].split("</ul>")[0]
    redacted = plan.split('id="plan-redacted"')[1].split("</ul>")[0]
    assert "I have a cat named Miso." in told and "What do you know about me?" in redacted
    assert KnowledgeFact.objects.filter(pk=cat_fact.pk).exists()  # nothing changed yet
    client.post(f"/me/facts/{cat_fact.pk}/forget/")
    assert not KnowledgeFact.objects.filter(pk=cat_fact.pk).exists()
    kept = DialoguePage.objects.get(pk=asked.page.pk)  # the question stays; its reply is gone
    assert kept.query == "What do you know about me?" and "Miso" not in kept.response
    assert client.get(f"/me/facts/{cat_fact.pk}/forget/").status_code == 404
