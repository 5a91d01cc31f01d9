"""The full-text index's writes (memory/adapters/fulltext.py): a page's words indexed when its reply
is stored, edited, imported or reindexed, and dropped with the page or the user. Memoria's recall is
its reader (memory/policies/memoria/ranking.py).
"""

from __future__ import annotations

from memory.adapters.fulltext import fulltext_index
from memory.models import DialoguePage


def fulltext_page_put(*, page: DialoguePage, text: str, new: bool = False) -> None:
    """Index a page's words (inside the caller's transaction: the index is in the same database).
    `new`: the page was never indexed (its reply is being stored), so there is nothing to replace:
    on SQLite, replacing reads the whole index (FTS5 finds no UNINDEXED id any faster), a read
    that grew with every page of every user."""
    docs = [(str(page.id), text)]
    if new:
        fulltext_index().insert(user_id=page.user_id, docs=docs)
    else:
        fulltext_index().upsert(user_id=page.user_id, docs=docs)


def fulltext_pages_delete(*, page_ids) -> None:
    fulltext_index().delete(doc_ids=[str(page_id) for page_id in page_ids])


def fulltext_user_delete(*, user_id: int) -> None:
    fulltext_index().delete_user(user_id=user_id)
