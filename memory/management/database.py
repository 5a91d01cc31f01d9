"""What the commands that use the memory ask of the database before they start: that it is set up.
On a database not yet migrated they would fail at their first query with a traceback; they say
what to do instead."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def database_ready() -> None:
    """CommandError, in a person's words, when the database lacks tables or migrations."""
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # the database cannot be reached at all
        raise CommandError(f"The database cannot be read ({exc}). Check DATABASE_URL, then run "
                           "`manage.py migrate`.") from None
    if pending:
        raise CommandError(f"The database is not set up yet ({len(pending)} migration(s) to apply): run "
                           "`.venv/bin/python manage.py migrate` first (`make run` does it for you).")
