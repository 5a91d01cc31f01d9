"""The inspector's Exocortex figure: the user's own recency and nostalgia over their memory's real
age, the crossing marked where recency = nostalgia = 1/2, variants that show how the settings move it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.models import DialoguePage
from memory.policies.exocortex.engine import decay as exo
from memory.policies.exocortex.selectors import exocortex_curves
from memory.policies.exocortex.services import decay_settings_update
from memory.services.pages import page_start
from tests.memory.inspector.test_charts import values

DAY = 86400.0


def traces_by_name(figure: str) -> dict:
    """Each trace by name, its x and y as lists (plotly writes arrays as base64 typed arrays)."""
    return {trace["name"]: {**trace, "x": values(trace["x"]), "y": values(trace["y"])}
            for trace in json.loads(figure)["data"]}


@pytest.mark.django_db
def test_the_figure_shows_the_users_own_curves_over_their_memorys_age(make_user):
    user = make_user("ana")
    now = timezone.now()
    page = page_start(user=user, query="My first words here.")
    DialoguePage.objects.filter(id=page.id).update(timestamp=now - timedelta(days=30))
    view = exocortex_curves(user=user, now=now)
    assert view.oldest_seconds == pytest.approx(30 * DAY)
    expected = exo.intersection_age(oldest_age_seconds=30 * DAY, settings=exo.DecaySettings())
    assert view.crossing_seconds == pytest.approx(expected)
    assert 0.4 * 25 * 60 < expected < 0.5 * 25 * 60  # 0.45 · S at 30 days (memory/policies/exocortex/engine/decay.py)
    traces = traces_by_name(view.figure)
    recency, nostalgia = traces["recency · yours"], traces["nostalgia · yours"]
    sums = [r + n for r, n in zip(recency["y"], nostalgia["y"], strict=True)]
    assert sums == pytest.approx([1.0] * len(sums))
    assert max(recency["x"]) == pytest.approx(30.0)  # days: to the oldest memory, no further
    crossing = traces["recency = nostalgia · yours"]
    assert crossing["y"] == [0.5] and crossing["x"][0] == pytest.approx(expected / DAY)
    assert {"recency · short-term 50 min", "recency · long-term threshold 0.1"} <= set(traces)
    # A lower floor pulls the oldest memory's recency down to it; a longer short term moves the crossing later.
    assert recency["y"][-1] == pytest.approx(0.01, abs=1e-9)
    assert traces["recency · long-term threshold 0.1"]["y"][-1] == pytest.approx(0.1, abs=1e-9)
    assert traces["recency = nostalgia · short-term 50 min"]["x"][0] > crossing["x"][0]


@pytest.mark.django_db
def test_the_figure_follows_the_users_settings_and_the_overview_shows_it(make_user):
    user = make_user("ana")
    page_start(user=user, query="Hello.")
    decay_settings_update(user=user, short_term_minutes=10, long_term_threshold=0.05)
    view = exocortex_curves(user=user)
    assert view.settings == exo.DecaySettings(short_term_seconds=600.0, long_term_threshold=0.05)
    client = Client()
    client.force_login(user)
    page = client.get("/inspector/ana/")
    assert page.status_code == 200 and b'id="exocortex-curves"' in page.content
    assert b'data-figure="decay-figure"' in page.content and b"10 minutes" in page.content
