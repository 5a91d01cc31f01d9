"""Sonas as they are made: one INSERT with the name's embedding, a name embedded once per embedder."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.adapters import configured
from memory.models import Sona, vector_to_bytes
from memory.services.users import DEFAULT_SONA_NAME, sona_get_or_create

pytestmark = pytest.mark.usefixtures("memory_env")


class CountingEmbedder:
    """The configured embedder, with every text it was asked to embed written down."""

    def __init__(self, real, *, failing: bool = False) -> None:
        self.real, self.failing, self.texts = real, failing, []

    def embed(self, texts):
        self.texts.extend(texts)
        if self.failing:
            raise ConnectionError("the embeddings endpoint is down")
        return self.real.embed(texts)

    def __getattr__(self, name):
        return getattr(self.real, name)


def counting(monkeypatch, real=None, **kwargs) -> CountingEmbedder:
    spy = CountingEmbedder(real or configured.embedder(), **kwargs)
    monkeypatch.setattr(configured, "embedder", lambda: spy)
    return spy


def test_every_new_users_first_sona_has_its_names_vector_from_one_embedding(make_user, monkeypatch):
    spy = counting(monkeypatch)
    ana, ben = make_user(), make_user()
    first, second = sona_get_or_create(user=ana), sona_get_or_create(user=ben)
    assert spy.texts == [DEFAULT_SONA_NAME]  # the same word for every user: embedded once
    expected = vector_to_bytes(spy.real.embed([DEFAULT_SONA_NAME])[0])
    assert bytes(first.name_embedding) == bytes(second.name_embedding) == expected
    assert [(s.user_id, s.is_default) for s in Sona.objects.order_by("created_at")] == [(ana.pk, True),
                                                                                         (ben.pk, True)]
    sona_get_or_create(user=ana, name="gardener")
    assert spy.texts == [DEFAULT_SONA_NAME, "gardener"]
    assert not Sona.objects.get(user=ana, name="gardener").is_default


def test_another_embedder_embeds_the_name_again(make_user, monkeypatch):
    spy = counting(monkeypatch)
    sona_get_or_create(user=make_user())
    other = counting(monkeypatch, spy.real)  # the settings changed, or the server swapped its model
    sona_get_or_create(user=make_user())
    assert spy.texts == [DEFAULT_SONA_NAME] and other.texts == [DEFAULT_SONA_NAME]


def test_a_failing_embedder_leaves_the_name_unembedded_and_is_asked_again(make_user, monkeypatch):
    down = counting(monkeypatch, failing=True)
    ana = make_user()
    sona = sona_get_or_create(user=ana, name="night owl")
    assert bytes(sona.name_embedding) == b"" and Sona.objects.filter(user=ana).count() == 1
    down.failing = False
    again = sona_get_or_create(user=make_user(), name="night owl")
    assert down.texts == ["night owl", "night owl"]  # a failure is not kept
    assert np.frombuffer(bytes(again.name_embedding), dtype=np.float32).shape == (configured.embedder().dimension,)


def test_an_existing_sona_is_found_without_writing_or_embedding(make_user, monkeypatch):
    user = make_user()
    made = sona_get_or_create(user=user, name="coach")
    spy = counting(monkeypatch)
    with CaptureQueriesContext(connection) as queries:
        assert sona_get_or_create(user=user, name="coach") == made
        assert sona_get_or_create(user=user) == made  # the first sona is the default one
    assert spy.texts == []
    assert all(q["sql"].lstrip().upper().startswith("SELECT") for q in queries.captured_queries)
