"""A turn's message stored: the user's state row locked and counted up in as few statements as it takes."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.models import DialoguePage, LifecycleEvent, PageStatus, UserMemoryState
from memory.services.common import lock_user_state, lock_user_state_counting_up, lock_user_state_writing
from memory.services.pages import page_start

pytestmark = pytest.mark.usefixtures("memory_env")

BOOKKEEPING = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")


def statements(queries: CaptureQueriesContext) -> list[str]:
    """What each statement did (its first word), the transaction's own aside: they are logged on
    SQLite, not on PostgreSQL."""
    # an executemany is logged as "<n> times: <sql>"
    words = [re.sub(r"^\d+ times: ", "", q["sql"].lstrip()).split(None, 1)[0].upper()
             for q in queries.captured_queries]
    return [word for word in words if word not in BOOKKEEPING]


def test_a_new_users_first_message_makes_their_state_row_in_one_insert(make_user):
    user = make_user()
    with CaptureQueriesContext(connection) as queries:
        page = page_start(user=user, query="  My first message.  ")
    # counting up finds no row; the row is made; counted up again; the page and its event
    assert statements(queries) == ["UPDATE", "INSERT", "UPDATE", "INSERT", "INSERT"]
    assert page.seq == 1 and page.query == "My first message." and page.status == PageStatus.PENDING
    assert UserMemoryState.objects.get(user=user).next_seq == 2
    event = LifecycleEvent.objects.get(user=user, kind=LifecycleEvent.Kind.PAGE_ADDED)
    assert event.subject_id == str(page.id) and event.payload["seq"] == 1


def test_later_messages_count_the_seq_up_in_one_statement(make_user):
    user = make_user()
    page_start(user=user, query="one")
    with CaptureQueriesContext(connection) as queries:
        second = page_start(user=user, query="two")
    assert statements(queries) == ["UPDATE", "INSERT", "INSERT"]
    assert second.seq == 2
    assert list(DialoguePage.objects.filter(user=user).order_by("seq").values_list("seq", "query")) == [
        (1, "one"), (2, "two")]


def test_the_seq_goes_on_from_the_state_row_not_the_pages(make_user):
    ana, ben = make_user(), make_user()
    UserMemoryState.objects.create(user=ana, next_seq=41)  # an imported archive left it there
    assert page_start(user=ana, query="after the import").seq == 41
    assert page_start(user=ben, query="a user of their own").seq == 1
    assert page_start(user=ana, query="and again").seq == 42


def test_each_way_of_taking_the_lock_makes_a_missing_row_with_its_defaults(make_user):
    ana, ben, cy = make_user(), make_user(), make_user()
    with transaction.atomic():
        assert lock_user_state(ana.pk).next_seq == 1
        lock_user_state_writing(ben.pk, maintenance_due=True)
        assert lock_user_state_counting_up(cy.pk, "next_seq") == 2
        assert lock_user_state_counting_up(cy.pk, "recollected_seq") == 1
    rows = {s.user_id: s for s in UserMemoryState.objects.filter(user__in=[ana, ben, cy])}
    assert (rows[ana.pk].next_seq, rows[ana.pk].maintenance_due) == (1, False)
    assert (rows[ben.pk].next_seq, rows[ben.pk].maintenance_due) == (1, True)
    assert (rows[cy.pk].next_seq, rows[cy.pk].recollected_seq, rows[cy.pk].short_term_minutes) == (2, 1, 25.0)
    with transaction.atomic():  # a row there already is left as it is, then locked
        assert lock_user_state(ben.pk).maintenance_due


def test_a_reply_is_stored_with_its_node_and_sona_in_as_few_statements(make_user):
    from memory.engine.content_ids import content_block, row_content
    from memory.models import MemoryNode, SonaMembership
    from memory.services.pages import page_reply_store
    from memory.services.users import sona_get_or_create

    user = make_user()
    sona = sona_get_or_create(user=user)
    page = page_start(user=user, query="My kayak is called Heron.", sona=sona)
    vector = [1.0] + [0.0] * 383
    with CaptureQueriesContext(connection) as queries:
        page_reply_store(page=page, response="A fine name for a kayak.", reply_model="test-model",
                         embedding=vector)
    # the user's lock; where maintenance left the page; the node looked for, then inserted with its
    # block; the page with its CID; its sona
    assert statements(queries) == ["UPDATE", "SELECT", "SELECT", "INSERT", "UPDATE", "INSERT"]
    stored = DialoguePage.objects.get(pk=page.pk)
    node = MemoryNode.objects.get(user=user, kind=MemoryNode.Kind.PAGE, object_id=str(page.pk))
    data, timestamp = row_content("page", stored)
    expected_cid, expected_block = content_block(kind="page", data=data, timestamp=timestamp, dependencies={})
    assert stored.status == PageStatus.COMPLETE and stored.response == "A fine name for a kayak."
    assert stored.cid == node.cid == expected_cid and bytes(node.block) == expected_block
    assert list(SonaMembership.objects.filter(node=node).values_list("sona_id", "via")) == [(sona.pk, "origin")]
    assert UserMemoryState.objects.get(user=user).maintenance_due

