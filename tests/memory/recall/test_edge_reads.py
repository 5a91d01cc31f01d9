"""A user's edges out of or into some nodes are read through the (user, source) and (user, target)
indexes, so Memoria's expansion and the provenance walk do not grow with the user's graph: with
the user's own index alone SQLite walked every edge of the user (13.9 ms for 50 nodes at 100,000
pages). Checked on SQLite's query plans."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import MemoryEdge
from memory.recall import rows

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's query plans")]


def plan_of(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql)
        return " ".join(str(row) for row in cursor.fetchall())


def test_memorias_expansion_reads_a_users_edges_out_of_nodes_through_the_user_source_index():
    with CaptureQueriesContext(connection) as queries:
        rows.rows(MemoryEdge, ("id", "source_id", "target_id", "relation", "weight"), equal={"user": 7},
                  among={"source": [11, 12, 13]})
    assert "edge_user_source" in plan_of(queries.captured_queries[-1]["sql"])


def test_the_provenance_walk_reads_edges_either_way_through_the_users_indexes():
    assert "edge_user_source" in MemoryEdge.objects.filter(user_id=7, source__in=[11, 12]).explain()
    assert "edge_user_target" in MemoryEdge.objects.filter(user_id=7, target__in=[11, 12]).explain()


def test_all_of_a_users_edges_are_found_through_the_indexes_that_lead_with_the_user():
    assert "USING INDEX edge_user_" in MemoryEdge.objects.filter(user_id=7).explain()
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, MemoryEdge._meta.db_table).values()
    # the user's own index is not kept beside them: a third index to write with every edge
    assert sorted(c["columns"] for c in constraints if c["index"] and c["columns"][0] == "user_id") == [
        ["user_id", "source_id"], ["user_id", "target_id"]]
