"""The offline reply uses what it was given: an attached file's text answers a later question about
it, and a sona described as keeping answers short answers briefly."""

from __future__ import annotations

import pytest

from memory.services.files import file_upload
from memory.services.turns import turn_run
from memory.services.users import sona_get_or_create

pytestmark = pytest.mark.usefixtures("memory_env")


def test_a_later_question_about_an_attached_file_is_answered_from_its_text(make_user):
    user = make_user()
    packing = file_upload(user=user, name="packing.txt", data=b"Passport. Hiking boots. Rain jacket. Sunscreen.")
    turn_run(user=user, message="Here is my packing list for the trip.", files=[packing.content_cid])

    reply = turn_run(user=user, message="What did the file say about boots?").reply

    assert "the file you attached said" in reply and "Hiking boots" in reply
    assert "Attached said" not in reply and "I have kept" not in reply


def test_a_sona_that_keeps_answers_short_answers_briefly(make_user):
    user = make_user()
    terse = sona_get_or_create(user=user, name="Terse")
    terse.profile = "A calm helper who keeps answers short."
    terse.save(update_fields=["profile"])
    for line in ("I went hiking in the Alps with Ana.", "We hiked the Eiger trail in the Alps.",
                 "The Alps hike took six hours."):
        turn_run(user=user, message=line, sona=terse)

    reply = turn_run(user=user, message="Tell me about my hikes in the Alps?", sona=terse).reply

    assert len(reply.split()) <= 30 and not reply.startswith("Here's what I remember"), reply
