"""Long-term memory's reads: every trait dimension with its score, facts with their periods, the profile."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.engine.traits import TRAIT_CATALOGUE
from memory.selectors.long_term import (
    facts_with_periods,
    long_term,
    profile_exists,
    profile_get,
    profile_initial,
    trait_evidence,
    traits_scored,
)
from persona.models import KnowledgeFact, UserProfile, UserTrait

pytestmark = pytest.mark.django_db


def fact(user, text: str, **fields) -> KnowledgeFact:
    return KnowledgeFact.objects.create(user=user, text=text, normalised=text.lower(), **fields)


def test_every_dimension_is_listed_with_zero_where_unscored(make_user):
    user = make_user()
    UserTrait.objects.create(user=user, key="sports_interest", score=0.4, evidence=[{"page_id": "p1"}], pinned=True)
    read = long_term(user=user)
    assert [row.key for row in read.traits] == [d.key for d in TRAIT_CATALOGUE]
    scored = {row.key: row.score for row in read.traits if row.score}
    assert scored == {"sports_interest": 0.4}
    rows = {row["key"]: row for row in traits_scored(user=user)}
    assert rows["sports_interest"]["pinned"] and rows["sports_interest"]["evidence"] == [{"page_id": "p1"}]
    assert not any(row["pinned"] or row["score"] for key, row in rows.items() if key != "sports_interest")


def test_current_facts_come_first_then_the_past_with_its_period_and_successor(make_user):
    user = make_user()
    york = fact(user, "User lives in York")
    fact(user, "User lives in Leeds", valid_until=datetime(2025, 6, 2, tzinfo=UTC), superseded_by=york.pk)
    fact(user, "User lived in Hull", valid_until=datetime(2024, 1, 5, tzinfo=UTC))
    fact(user, "User hides this", repressed=True)
    listed = facts_with_periods(user=user)
    assert [item.label for item in listed] == [
        "User lives in York",
        "User lives in Leeds (until June 2025; since then: User lives in York)",
        "User lived in Hull (until January 2024)",
    ]
    assert [item.current for item in listed] == [True, False, False]


def test_the_profile_reads_say_whether_one_was_given(make_user):
    user = make_user()
    assert not profile_exists(user=user) and profile_initial(user=user) == {}
    assert profile_get(user=user).name == "" and not UserProfile.objects.filter(user=user).exists()  # unsaved
    UserProfile.objects.create(user=user, name="Maya", birth_year=1990)
    assert profile_exists(user=user)
    assert profile_initial(user=user) == {"name": "Maya", "gender": "", "birth_year": 1990}
    assert long_term(user=user).profile.name == "Maya"


def test_a_traits_evidence_is_none_for_an_unknown_dimension_and_empty_before_any(make_user):
    user = make_user()
    assert trait_evidence(user=user, key="no_such_trait") is None
    empty = trait_evidence(user=user, key="sports_interest")
    assert empty.row.score == 0.0 and empty.pages == [] and empty.updates == []
    assert empty.trait.pk is None and empty.trait.key == "sports_interest"
