"""The vector index checked against the database (memory/services/reindex.py index_check): a shard
that lost a person's points is noticed, said in the log, and reindexed (issue 49, finding 8: a
shard once opened with 0 points for everyone and nothing warned)."""

from __future__ import annotations

import io
import logging

import pytest
from django.core.management import CommandError, call_command

from memory.adapters import configured
from memory.runtime.due_work import due_work_start_in_background
from memory.services.maintenance import maintenance_run
from memory.services.pages import page_start
from memory.services.recall import recall_for_query
from memory.services.reindex import IndexShortfall, index_check
from memory.services.turns import page_complete

pytestmark = pytest.mark.usefixtures("memory_env")


def say(user, text: str) -> None:
    page_complete(page=page_start(user=user, query=text), response="Noted.", reply_model="test")
    maintenance_run(user_id=user.pk)


def test_an_index_that_lost_a_persons_pages_is_noticed_and_reindexed(make_user, caplog):
    ana, bo = make_user("ana"), make_user("bo")
    say(ana, "My cat Miso sleeps on the piano.")
    say(ana, "I grow chillies on the balcony.")
    say(bo, "I play the oboe.")
    assert index_check() == []
    configured.vector_index().delete_user(user_id=str(ana.pk))  # the shard lost her points
    with caplog.at_level(logging.ERROR, logger="memory.services.reindex"):
        assert index_check() == [IndexShortfall(user_id=ana.pk, pages=2, points=0)]
    assert f"event=index_disagrees user={ana.pk} pages=2 points=0" in caplog.text
    with pytest.raises(CommandError, match=r"lacks pages of 1 person"):
        call_command("check_index", stdout=io.StringIO())
    out = io.StringIO()
    call_command("check_index", "--fix", stdout=out)
    assert f"user={ana.pk} pages=2 points=0 reindexed" in out.getvalue()
    assert index_check() == []
    found = recall_for_query(user=ana, query="Where does my cat sleep?", update_heat=False, record_trace=False)
    assert any("Miso" in item.text for item in found.items[:5])


def test_a_server_starting_reindexes_what_the_index_lacks(make_user):
    ana = make_user("ana")
    say(ana, "My cat Miso sleeps on the piano.")
    configured.vector_index().delete_user(user_id=str(ana.pk))  # the index is open, as after a warm-up
    due_work_start_in_background(interval_s=0).join(60)  # one run, as a server starts
    assert configured.vector_index().count(user_id=str(ana.pk), kind="page") == 1
