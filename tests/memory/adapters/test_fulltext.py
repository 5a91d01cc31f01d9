"""The full-text port on the database the suite runs on (SQLite's FTS5 by default, PostgreSQL's
full-text search with DATABASE_URL): the same behaviour through one interface."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.adapters.fulltext import PostgresIndex, SqliteFts5Index, fulltext_index, query_terms

pytestmark = pytest.mark.django_db


def test_the_vendor_picks_the_implementation():
    index = fulltext_index()
    expected = PostgresIndex if connection.vendor == "postgresql" else SqliteFts5Index
    assert type(index) is expected and index.vendor == connection.vendor


def test_search_ranks_by_the_words_matched_and_keeps_users_apart(make_user):
    alice, bob = make_user("alice"), make_user("bob")
    index = fulltext_index()
    index.upsert(user_id=alice.pk, docs=[
        ("a1", "My sourdough starter is called Bubbles and lives in the fridge."),
        ("a2", "The sourdough came out flat again."),
        ("a3", "We walked along the river at dawn."),
    ])
    index.upsert(user_id=bob.pk, docs=[("b1", "Bob's sourdough starter is called Bubbles too.")])
    hits = index.search(user_id=alice.pk, text="What is my sourdough starter called?", limit=10)
    assert [hit.doc_id for hit in hits] == ["a1", "a2"]  # a1 matches three words, a2 one; a3 none
    assert hits[0].score > hits[1].score > 0
    assert [hit.doc_id for hit in index.search(user_id=bob.pk, text="sourdough", limit=10)] == ["b1"]
    assert index.search(user_id=alice.pk, text="sourdough", limit=1)[0].doc_id in {"a1", "a2"}


def test_stemming_matches_other_forms_of_a_word(make_user):
    user = make_user()
    index = fulltext_index()
    index.upsert(user_id=user.pk, docs=[("d1", "She was running marathons every spring.")])
    assert [hit.doc_id for hit in index.search(user_id=user.pk, text="marathon runs", limit=5)] == ["d1"]


def test_query_syntax_from_a_user_is_only_words(make_user):
    user = make_user()
    index = fulltext_index()
    index.upsert(user_id=user.pk, docs=[("d1", "NOT a problem: the cat AND the dog")])
    for text in ('"unbalanced', "cat AND", "NOT", "dog*", "(cat OR", "col:cat", "'; DROP TABLE x; --", "!!!", ""):
        index.search(user_id=user.pk, text=text, limit=5)  # never an error
    assert [hit.doc_id for hit in index.search(user_id=user.pk, text='"cat AND (dog', limit=5)] == ["d1"]
    assert index.search(user_id=user.pk, text="?!", limit=5) == []
    assert query_terms("The cat, the CAT and the dog") == ["the", "cat", "and", "dog"]


def test_upsert_replaces_delete_removes_and_clear_empties(make_user):
    alice, bob = make_user("alice"), make_user("bob")
    index = fulltext_index()
    index.upsert(user_id=alice.pk, docs=[("d1", "old words about kites")])
    index.upsert(user_id=alice.pk, docs=[("d1", "new words about gardens")])
    assert index.search(user_id=alice.pk, text="kites", limit=5) == []
    assert [h.doc_id for h in index.search(user_id=alice.pk, text="gardens", limit=5)] == ["d1"]
    assert index.count(user_id=alice.pk) == 1
    index.upsert(user_id=bob.pk, docs=[("d2", "gardens of bob"), ("d3", "more gardens")])
    index.delete(doc_ids=["d2"])
    assert [h.doc_id for h in index.search(user_id=bob.pk, text="gardens", limit=5)] == ["d3"]
    index.delete_user(user_id=bob.pk)
    assert index.count(user_id=bob.pk) == 0 and index.count(user_id=alice.pk) == 1
    index.clear()
    assert index.count() == 0
