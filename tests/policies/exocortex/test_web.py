"""The Exocortex decay settings on the profile page: shown, saved through the service (htmx or not),
refused when out of range with nothing changed, each user's own."""

from __future__ import annotations

import pytest
from django.test import Client

from memory.models import UserMemoryState

HTMX = {"HTTP_HX_REQUEST": "true"}


def signed_in(make_user, name: str):
    user, client = make_user(name), Client()
    client.force_login(user)
    return user, client


@pytest.mark.django_db
def test_the_profile_page_shows_and_saves_the_decay_settings(make_user):
    user, client = signed_in(make_user, "ana")
    page = client.get("/profile/")
    assert page.status_code == 200 and b'id="decay-settings"' in page.content
    assert b'name="short_term_minutes"' in page.content and b'value="25.0"' in page.content
    saved = client.post("/settings/decay/", {"short_term_minutes": "40", "long_term_threshold": "0.1"}, **HTMX)
    assert saved.status_code == 200 and b"Saved." in saved.content
    state = UserMemoryState.objects.get(user=user)
    assert (state.short_term_minutes, state.long_term_threshold) == (40.0, 0.1)
    assert b'value="40.0"' in client.get("/profile/").content
    redirected = client.post("/settings/decay/", {"short_term_minutes": "30", "long_term_threshold": "0.02"})
    assert redirected.status_code == 302 and redirected["Location"] == "/profile/"
    other, _ = signed_in(make_user, "ben")
    assert not UserMemoryState.objects.filter(user=other, short_term_minutes=30.0).exists()


@pytest.mark.django_db
def test_out_of_range_decay_settings_are_refused_and_change_nothing(make_user):
    user, client = signed_in(make_user, "ana")
    client.post("/settings/decay/", {"short_term_minutes": "30", "long_term_threshold": "0.02"}, **HTMX)
    for minutes, threshold in (("0", "0.01"), ("99999", "0.01"), ("25", "0"), ("25", "0.95"), ("x", "0.01"),
                               ("25", "")):
        response = client.post("/settings/decay/", {"short_term_minutes": minutes, "long_term_threshold": threshold},
                               **HTMX)
        # the form and its errors, swapped in place (htmx swaps only 2xx answers)
        assert response.status_code == 200 and b"Saved." not in response.content, (minutes, threshold)
        assert b'role="alert"' in response.content, (minutes, threshold)
    plain = client.post("/settings/decay/", {"short_term_minutes": "-1", "long_term_threshold": "0.01"})
    assert plain.status_code == 400 and b'id="decay-settings"' in plain.content
    state = UserMemoryState.objects.get(user=user)
    assert (state.short_term_minutes, state.long_term_threshold) == (30.0, 0.02)


@pytest.mark.django_db
def test_the_decay_settings_need_a_signed_in_user_and_a_post(client, make_user):
    response = client.post("/settings/decay/", {"short_term_minutes": "30", "long_term_threshold": "0.02"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    _, signed = signed_in(make_user, "ana")
    assert signed.get("/settings/decay/").status_code == 405
