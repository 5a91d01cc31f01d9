"""A user's sonas as the reads find them, and the review queue of facts that change."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memory.models import Sona
from memory.selectors.sonas import sona_counts, sona_for_user, sona_list, sona_name_taken, sona_named
from memory.selectors.supersessions import (
    STATUSES,
    supersession_counts,
    supersession_review,
    supersession_reviews,
)
from memory.services.pages import page_start
from memory.services.turns import page_complete
from persona.models import KnowledgeFact, Supersession

pytestmark = pytest.mark.usefixtures("memory_env")

MARCH = datetime(2025, 3, 14, 10, 0, tzinfo=UTC)
JUNE = datetime(2025, 6, 2, 18, 30, tzinfo=UTC)


def test_sonas_are_found_by_name_whatever_its_case_and_only_their_owners(make_user):
    user, other = make_user(), make_user()
    coach = Sona.objects.create(user=user, name="Coach")
    Sona.objects.create(user=user, name="Tutor")
    theirs = Sona.objects.create(user=other, name="Coach")
    assert [sona.name for sona in sona_list(user=user)] == ["Coach", "Tutor"]
    assert sona_named(user=user, name="  coach ") == coach
    assert sona_name_taken(user=user, name="TUTOR") and not sona_name_taken(user=user, name="Chef")
    assert sona_for_user(user=user, sona_id=str(coach.id)) == coach
    assert sona_for_user(user=user, sona_id=str(theirs.id)) is None
    assert sona_for_user(user=user, sona_id="not-an-id") is None
    assert [(sona.name, members) for sona, members in sona_counts(user=user)] == [("Coach", 0), ("Tutor", 0)]


def stated(user, utterance: str, text: str, at: datetime) -> KnowledgeFact:
    page = page_complete(page=page_start(user=user, query=utterance, timestamp=at), response="Noted.",
                         reply_model="test", schedule=False)
    return KnowledgeFact.objects.create(user=user, text=text, normalised=text.lower(),
                                        source_page_ids=[str(page.id)], timestamp=at, valid_from=at)


def test_a_review_carries_both_facts_and_the_turns_they_were_stated_in(make_user):
    user, stranger = make_user(), make_user()
    leeds = stated(user, "I live in Leeds.", "User lives in Leeds (a fact)", MARCH)
    york = stated(user, "I live in York now.", "User lives in York (a fact)", JUNE)
    row = Supersession.objects.create(user=user, old_fact=leeds, new_fact=york, slot="lives_in", confidence=0.8,
                                      reason="'leeds' became 'york'", decided_by="detector")
    [review] = supersession_reviews(user=user)
    assert review.id == str(row.pk) and review.is_open and review.slot == "lives_in"
    assert (review.old.text, review.new.text) == ("User lives in Leeds (a fact)", "User lives in York (a fact)")
    assert [turn.text for turn in review.old.sources] == ["I live in Leeds."]
    assert review.new.sources[0].timestamp == JUNE
    assert supersession_review(user=user, ident=str(row.pk)) == review
    assert supersession_review(user=stranger, ident=str(row.pk)) is None
    assert supersession_review(user=user, ident="nope") is None
    assert supersession_review(user=user, ident=str(uuid.uuid4())) is None

    Supersession.objects.filter(pk=row.pk).update(status="superseded")
    assert supersession_reviews(user=user) == []  # open ones by default
    assert [r.status for r in supersession_reviews(user=user, status=None)] == ["superseded"]
    counts = supersession_counts(user=user)
    assert set(counts) == set(STATUSES) and counts["superseded"] == 1 and sum(counts.values()) == 1
    assert supersession_counts(user=stranger) == dict.fromkeys(STATUSES, 0)
