"""The admin shows every model and acts only through the services: its actions pin, repress, delete
along provenance and forget a user, audited; there is no raw delete and no write through a form."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.urls import reverse

from memory.models import DialoguePage, LifecycleEvent, Segment
from memory.services.pages import page_start
from memory.services.turns import page_complete
from persona.models import KnowledgeFact

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def memory(make_user, memory_env):
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "STM_CAPACITY": 1}
    user = make_user("owner")
    pages = []
    for text in ("My violin teacher is called Ines.", "I practise scales every morning."):
        pages.append(page_complete(page=page_start(user=user, query=text), response="Noted.", reply_model="test"))
    return user, pages


def test_every_model_is_registered_and_its_pages_render(client, make_user, memory):
    root = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(root)
    from memory import models as memory_models
    from persona import models as persona_models

    for module in (memory_models, persona_models):
        for model in [m for m in vars(module).values() if isinstance(m, type) and getattr(m, "_meta", None)
                      and not m._meta.abstract and m._meta.app_label in ("memory", "persona")]:
            assert admin.site.is_registered(model), model
            changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            assert client.get(changelist).status_code == 200, model
    segment = Segment.objects.get(user=memory[0])
    page = client.get(reverse("admin:memory_segment_change", args=[segment.id]))
    assert page.status_code == 200 and "Heat = α·N_visit".encode() in page.content
    assert b'name="_save"' not in page.content  # looked at, never written here
    listing = client.get(reverse("admin:memory_dialoguepage_changelist")).content
    assert b"delete_selected" not in listing and b"delete_along_provenance" in listing


def test_admin_actions_call_the_services(client, make_user, memory):
    user, pages = memory
    root = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(root)
    changelist = reverse("admin:memory_dialoguepage_changelist")
    client.post(changelist, {"action": "repress", "_selected_action": [str(pages[0].id)]})
    assert DialoguePage.objects.get(id=pages[0].id).repressed
    event = LifecycleEvent.objects.get(user=user, kind="repressed")
    assert event.payload["actor"] == "root" and event.payload["reason"] == "admin"
    client.post(changelist, {"action": "delete_along_provenance", "_selected_action": [str(pages[1].id)]})
    assert not DialoguePage.objects.filter(id=pages[1].id).exists()
    assert LifecycleEvent.objects.filter(user=user, kind="deleted").exists()
    client.post(reverse("admin:auth_user_changelist"), {"action": "forget_memory", "_selected_action": [user.pk]})
    assert not DialoguePage.objects.filter(user=user).exists()
    assert LifecycleEvent.objects.filter(user=user, kind="user_forgotten").exists()


def test_staff_without_the_edit_permission_cannot_act(client, make_user, memory):
    from django.contrib.auth.models import Permission

    user, pages = memory
    viewer = make_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_dialoguepage"))
    client.force_login(viewer)
    changelist = reverse("admin:memory_dialoguepage_changelist")
    assert b"delete_along_provenance" not in client.get(changelist).content
    client.post(changelist, {"action": "repress", "_selected_action": [str(pages[0].id)]})
    assert not DialoguePage.objects.get(id=pages[0].id).repressed


def test_forget_user_command_asks_for_confirmation(make_user, memory):
    from django.core.management.base import CommandError

    user, _ = memory
    KnowledgeFact.objects.create(user=user, text="User plays violin", normalised="user plays violin")
    with pytest.raises(CommandError, match="--yes"):
        call_command("forget_user", "--user", "owner")
    assert DialoguePage.objects.filter(user=user).exists()
    call_command("forget_user", "--user", "owner", "--yes")
    assert not DialoguePage.objects.filter(user=user).exists() and not KnowledgeFact.objects.filter(user=user).exists()
    with pytest.raises(CommandError, match="Unknown user"):
        call_command("forget_user", "--user", "nobody", "--yes")


def test_the_admin_decides_a_review_through_the_service(client, make_user):
    from memory.services.supersession import supersession_detect
    from tests.memory.services.test_supersession import JUNE, MARCH, stated

    user = make_user("mover")
    stated(user, "I live in Leeds.", "User lives in Leeds", MARCH)
    york = stated(user, "I live in York.", "User lives in York", JUNE)
    [row] = supersession_detect(user_id=user.pk, fact_ids=[str(york.pk)])
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    url = reverse("admin:persona_supersession_changelist")
    assert "User lives in York" in client.get(url).content.decode()
    client.post(url, {"action": "accept", "_selected_action": [str(row.pk)]})
    row.refresh_from_db()
    assert (row.status, row.decided_by) == ("accepted", "root")
    assert LifecycleEvent.objects.filter(user=user, kind="fact_superseded", payload__actor="root").exists()
