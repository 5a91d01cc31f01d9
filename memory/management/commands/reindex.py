"""`manage.py reindex`: rebuild every vector in Qdrant from the database (the source of truth)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memory.services.reindex import reindex_all


class Command(BaseCommand):
    help = "Drop all vectors and rebuild them from the database."

    def handle(self, *args, **opts):
        counts = reindex_all(progress=True)
        self.stdout.write(" ".join(f"{kind}={n}" for kind, n in counts.items()))
