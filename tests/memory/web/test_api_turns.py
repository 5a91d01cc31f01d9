"""The REST API: turns drawn from the websocket chat's rate limit, sonas validated as the chat's
form does and never created by accident, and docs whose assets the app serves itself."""

from __future__ import annotations

import json
import math

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from memory.models import DialoguePage, Sona
from memory.web.rate_limit import rate_limit_take, rate_limits_reset

pytestmark = pytest.mark.usefixtures("memory_env")


@pytest.fixture
def api(make_user, settings):
    settings.MEMORYOS_CHAT = {**settings.MEMORYOS_CHAT, "RATE_REDIS_URL": "", "RATE_BURST": 3,
                              "RATE_PER_MINUTE": 1.0}
    rate_limits_reset()
    user = make_user("ana")
    client = Client()
    client.force_login(user)

    def post(**body):
        return client.post("/api/memory/turns", json.dumps(body), content_type="application/json")

    yield user, post
    rate_limits_reset()


def test_turns_beyond_the_limit_get_a_429_with_a_clear_error_and_are_not_stored(api):
    user, post = api
    for i in range(3):
        assert post(message=f"Note number {i} about my garden.").status_code == 200
    refused = post(message="One too many.")
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "rate_limited"
    assert body["message"].startswith("You are sending messages too fast. Please wait ")
    # one a minute, less what refilled while the three turns ran
    assert 0 < body["detail"]["retry_after"] <= 60
    assert int(refused["Retry-After"]) == math.ceil(body["detail"]["retry_after"])
    assert DialoguePage.objects.filter(user=user).count() == 3


def test_the_api_and_the_websocket_draw_from_one_bucket(api):
    user, post = api
    for _ in range(3):
        assert rate_limit_take(user.pk) == 0.0  # three frames over the websocket
    assert post(message="And one over REST.").status_code == 429


def test_a_persona_name_longer_than_the_forms_is_refused(api):
    user, post = api
    response = post(message="Hello", sona="x" * 500, create_sona=True)
    assert response.status_code == 422
    assert "at most 40 characters" in json.dumps(response.json())
    assert not Sona.objects.filter(user=user).exists() and not DialoguePage.objects.filter(user=user).exists()


def test_an_unknown_persona_is_refused_unless_the_request_creates_it(api):
    user, post = api
    refused = post(message="Plan my week.", sona="coach")
    assert refused.status_code == 400
    assert refused.json() == {"code": "invalid", "detail": None,
                              "message": "Unknown sona 'coach'; send \"create_sona\": true to create it."}
    assert not Sona.objects.filter(user=user).exists() and not DialoguePage.objects.filter(user=user).exists()

    created = post(message="Plan my week.", sona="coach", create_sona=True,
                   sona_profile="A patient running coach who plans training weeks.")
    assert created.status_code == 200
    coach = Sona.objects.get(user=user, name="coach")
    assert coach.profile == "A patient running coach who plans training weeks."
    assert post(message="And next week?", sona="Coach").status_code == 200  # named as the form compares
    assert list(DialoguePage.objects.filter(user=user).values_list("sona__name", flat=True)) == ["coach", "coach"]
    assert Sona.objects.filter(user=user).count() == 1


def test_the_docs_page_loads_its_swagger_ui_from_the_app():
    response = Client().get("/api/docs")
    html = response.content.decode()
    assert response.status_code == 200
    assert "/static/ninja/swagger-ui-bundle.js" in html and "/static/ninja/swagger-ui.css" in html
    assert "cdn" not in html.lower()
    assert finders.find("ninja/swagger-ui-bundle.js") and finders.find("ninja/swagger-ui-init.js")
