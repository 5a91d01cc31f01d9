"""`manage.py optimize_vectors`: build the embedded shard's HNSW indexes and merge its segments.

Qdrant Edge never optimises by itself: without this, a dense search filtered to one user scans
that user's points one by one. The MemoryOS policy's searches stay small (segments, then pages in
five segments) and do not need it; the hybrid policy searches all of a user's utterances and
does (BENCHMARKS.md: the scale benchmark, with and without HNSW). Run it after a large import,
and then from time to time as users grow (a nightly cron job is plenty), while the server is
stopped: an embedded shard opens in one process only, and the build holds the GIL (about two
minutes per 100,000 points on 2 cores). A Qdrant server (QDRANT_URL) optimises on its own.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memory.services.reindex import vectors_optimize


class Command(BaseCommand):
    help = "Build HNSW indexes of the embedded vector shard (run with the server stopped)."

    def handle(self, *args, **opts):
        report = vectors_optimize()
        if report is None:
            self.stdout.write("QDRANT_URL is set: the Qdrant server optimises its collection itself.")
            return
        verdict = "optimised" if report.changed else "already optimal"
        self.stdout.write(f"{verdict}: {report.points:,} points in {report.seconds:.1f} s; "
                          f"shard {report.size_before_mb:.1f} MB -> {report.size_after_mb:.1f} MB "
                          f"({report.shard_dir})")
