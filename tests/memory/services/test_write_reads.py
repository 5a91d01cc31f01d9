"""Maintenance's reads on the write path go through indexes that hold only their own rows, so a
write does not grow with the store (issue 37, item 2): checked on SQLite's query plans, where the
planner otherwise walked all of a user's pages by (user, seq)."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.selectors.maintenance import stopped_turn_pages_of
from memory.services.maintenance import chain_newest_pages
from memory.services.segments import segments_holding_pins

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's query plans")]


def test_a_users_stopped_turns_are_read_through_the_pending_index():
    assert "page_pending" in stopped_turn_pages_of(7).select_related("user").order_by("seq").explain()


def test_a_chains_pages_are_read_through_the_chain_index():
    assert "page_chain" in chain_newest_pages("6f1d4a52-8a3e-4c7b-9d0e-2b5c8f4e7a10", 11).explain()


def test_the_segments_holding_pinned_pages_are_read_through_the_pinned_index():
    assert "page_pinned" in segments_holding_pins(7).explain()

