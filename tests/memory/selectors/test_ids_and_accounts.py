"""Ids as the reads take them, and the accounts' reads: users by name, a user's API tokens."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.utils import timezone

from memory.models import ApiToken
from memory.selectors.accounts import api_tokens, user_named, usernames
from memory.selectors.ids import uuid_or_none, uuids


def test_malformed_ids_name_nothing_and_the_others_come_back_as_uuids():
    known = uuid.uuid4()
    assert uuids([str(known), "not-a-uuid", "", str(known).upper(), "12"]) == [known, known]
    assert uuid_or_none(str(known)) == known
    assert uuid_or_none("'; drop table --") is None


def test_a_users_tokens_list_the_active_ones_first_newest_first(make_user):
    ana, ben = make_user(), make_user()
    now = timezone.now()
    made = {}
    for name, age_days, revoked in (("old", 3, False), ("revoked", 2, True), ("new", 1, False)):
        token = ApiToken.objects.create(user=ana, name=name, prefix=f"p{name}", key_hash="x",
                                        revoked_at=now if revoked else None)
        ApiToken.objects.filter(pk=token.pk).update(created_at=now - timedelta(days=age_days))
        made[name] = token
    ApiToken.objects.create(user=ben, name="bens", prefix="pbens", key_hash="x")
    assert [token.name for token in api_tokens(user=ana)] == ["new", "old", "revoked"]


def test_users_are_found_by_exact_name_and_listed_in_order(make_user):
    for name in ("carla", "ana", "ben"):
        make_user(name)
    assert user_named("ana").username == "ana"
    assert user_named("Ana") is None and user_named("nobody") is None
    assert usernames() == ["ana", "ben", "carla"]
    assert usernames(limit=2) == ["ana", "ben"]
