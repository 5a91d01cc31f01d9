"""The recall path's SQL reads give what the ORM would: the same rows, the same value types."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import DialoguePage, Tier
from memory.recall import rows as reads
from memory.recall.long_term import fixed_items
from memory.recall.pipeline import stm_items as _stm_items
from memory.services.pages import page_start
from memory.services.turns import page_complete
from persona.models import UserProfile, UserTrait

pytestmark = pytest.mark.usefixtures("memory_env")


def pages_of(user, count: int) -> list[DialoguePage]:
    pages = []
    for n in range(count):
        page = page_start(user=user, query=f"question {n}", timestamp=timezone.now())
        page_complete(page=page, response=f"answer {n}", reply_model="test", schedule=False)
        pages.append(page)
    return pages


def test_by_pk_loads_the_named_fields_with_the_fields_own_types(make_user) -> None:
    user = make_user()
    first, second = pages_of(user, 2)
    DialoguePage.objects.filter(id=first.id).update(source_ids=["D1:3"], utterances=[{"speaker": "A", "text": "x"}])

    found = reads.by_pk(DialoguePage, [str(first.id), second.id, str(first.id)], ("user", "source_ids", "timestamp",
                                                                                 "utterances"))

    assert set(found) == {str(first.id), str(second.id)}
    row = found[str(first.id)]
    assert isinstance(row.id, uuid.UUID) and row.user_id == user.pk
    assert row.source_ids == ["D1:3"] and row.utterances == [{"speaker": "A", "text": "x"}]
    assert isinstance(row.timestamp, datetime) and timezone.is_aware(row.timestamp)
    assert row.timestamp == DialoguePage.objects.get(id=first.id).timestamp
    assert row.get_deferred_fields() >= {"query", "response"}  # not loaded


def test_by_pk_of_nothing_is_empty_and_a_malformed_key_is_refused(make_user) -> None:
    assert reads.by_pk(DialoguePage, [], ("query",)) == {}
    assert reads.by_pk(DialoguePage, [uuid.uuid4()], ("query",)) == {}
    with pytest.raises(ValidationError):
        reads.by_pk(DialoguePage, ["not-a-uuid"], ("query",))


def test_rows_match_every_named_field_in_order_up_to_the_limit(make_user) -> None:
    user, other = make_user("a"), make_user("b")
    pages_of(other, 1)
    pages = pages_of(user, 4)
    DialoguePage.objects.filter(id=pages[3].id).update(tier=Tier.MTM)

    found = reads.rows(DialoguePage, ("seq",), equal={"user": user.pk, "tier": Tier.STM}, order_by=("-seq",),
                       limit=2)
    oldest_first = reads.rows(DialoguePage, ("seq",), equal={"user": user.pk}, order_by=("seq",))

    assert [row.id for row in found] == [pages[2].id, pages[1].id]
    assert [row.id for row in oldest_first] == [page.id for page in pages]


def test_rows_among_values_keep_only_those_and_an_empty_list_matches_nothing(make_user) -> None:
    user, other = make_user("a"), make_user("b")
    pages_of(other, 3)
    pages = pages_of(user, 4)

    found = reads.rows(DialoguePage, ("seq",), equal={"user": user.pk}, among={"seq": [4, 2, 9]},
                       order_by=("seq",))

    assert [(row.id, row.seq) for row in found] == [(pages[1].id, 2), (pages[3].id, 4)]  # not the other's
    assert reads.rows(DialoguePage, ("seq",), equal={"user": user.pk}, among={"seq": []}) == []


def test_stm_items_leave_out_the_excluded_page_and_keep_the_capacity(make_user) -> None:
    user = make_user()
    pages = pages_of(user, 4)
    assert all(p.tier == Tier.STM for p in DialoguePage.objects.filter(user=user))

    assert [i.ref for i in _stm_items(user, None, 3)] == [str(p.id) for p in reversed(pages[1:])]
    assert [i.ref for i in _stm_items(user, pages[3].id, 3)] == [str(p.id) for p in reversed(pages[:3])]
    assert [i.ref for i in _stm_items(user, pages[2].id, 2)] == [str(pages[3].id), str(pages[1].id)]
    assert _stm_items(user, None, 1)[0].text == "User: question 3 | Assistant: answer 3"


def test_fixed_items_read_the_profile_and_the_positive_traits_best_first(make_user) -> None:
    user, other = make_user("a"), make_user("b")
    UserProfile.objects.create(user=user, name="Ana", birth_year=1990, extra={"city": "Porto"})
    UserProfile.objects.create(user=other, name="Bo")
    UserTrait.objects.bulk_create([UserTrait(user=user, key="openness", score=0.4),
                                   UserTrait(user=user, key="agreeableness", score=0.9),
                                   UserTrait(user=user, key="extraversion", score=0.0),
                                   UserTrait(user=other, key="openness", score=0.7)])

    items = fixed_items(user=user)

    assert [(i.kind, i.ref) for i in items] == [("profile", "profile"), ("user_trait", "agreeableness"),
                                                ("user_trait", "openness")]
    assert items[0].text == "name: Ana; born: 1990; city: Porto"
    assert [i.score for i in items[1:]] == [0.9, 0.4]


def test_fixed_items_read_either_side_when_the_other_is_missing(make_user) -> None:
    no_profile, no_traits, neither = make_user("a"), make_user("b"), make_user("c")
    UserTrait.objects.bulk_create([UserTrait(user=no_profile, key="openness", score=0.4),
                                   UserTrait(user=no_profile, key="agreeableness", score=0.9, repressed=True)])
    UserProfile.objects.create(user=no_traits, name="Bo", extra={"city": "Porto"})

    assert [(i.kind, i.ref) for i in fixed_items(user=no_profile)] == [("user_trait", "openness")]
    assert [i.text for i in fixed_items(user=no_traits)] == ["name: Bo; city: Porto"]
    assert fixed_items(user=neither) == []


def test_row_and_values_read_one_row_and_many_in_one_statement_as_the_orm_would(make_user) -> None:
    user = make_user()
    UserProfile.objects.create(user=user, name="Ana", birth_year=1990, extra={"city": "Porto"})
    UserTrait.objects.bulk_create([UserTrait(user=user, key=key, score=score)
                                   for key, score in (("openness", 0.4), ("agreeableness", 0.9), ("warmth", 0.4))])

    with CaptureQueriesContext(connection) as queries:
        profile, traits = reads.row_and_values(UserProfile, ("name", "extra"), pk=user.pk, many=UserTrait,
                                               many_fields=("score", "key"), equal={"user": user.pk},
                                               order_by=("-score", "key"))

    assert len(queries) == 1
    assert profile.pk == user.pk and profile.name == "Ana" and profile.extra == {"city": "Porto"}
    assert profile.get_deferred_fields() >= {"birth_year", "gender"}  # not loaded
    assert traits == list(UserTrait.objects.filter(user=user).order_by("-score", "key").values_list("score", "key"))


def test_values_give_the_fields_in_the_order_asked_converted_as_the_orm_would(make_user) -> None:
    user = make_user()
    first, second = pages_of(user, 2)

    found = reads.values(DialoguePage, ("seq", "id", "timestamp"), equal={"user": user.pk},
                         among={"seq": [first.seq, second.seq, 999]}, order_by=("-seq",))

    expected = list(DialoguePage.objects.filter(user=user).order_by("-seq").values_list("seq", "id", "timestamp"))
    assert found == expected and isinstance(found[0][1], uuid.UUID)
    assert reads.values(DialoguePage, ("seq",), equal={"user": user.pk}, among={"seq": []}) == []
