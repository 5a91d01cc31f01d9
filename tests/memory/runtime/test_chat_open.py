"""What a socket's opening readies before the person's first message."""

from __future__ import annotations

import pytest

from memory.adapters import configured
from memory.models import Sona
from memory.runtime.chat import chat_sona_ready

pytestmark = pytest.mark.usefixtures("memory_env")


def test_opening_makes_the_default_sona_and_readies_the_users_searches(make_user, monkeypatch):
    user = make_user()
    readied: list[str] = []
    index = configured.vector_index()
    monkeypatch.setattr(index, "prepare", lambda *, user_id: readied.append(user_id))
    chat_sona_ready(user_id=user.pk)
    assert Sona.objects.filter(user=user, is_default=True).count() == 1
    assert readied == [str(user.pk)]
    chat_sona_ready(user_id=user.pk)  # a second socket: no second sona
    assert Sona.objects.filter(user=user, is_default=True).count() == 1
