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

import time

from django.conf import settings
from django.core.management.base import BaseCommand

from memory import components
from memory.benchmarks.common import dir_size_mb


class Command(BaseCommand):
    help = "Build HNSW indexes of the embedded vector shard (run with the server stopped)."

    def handle(self, *args, **opts):
        if settings.QDRANT_URL:
            self.stdout.write("QDRANT_URL is set: the Qdrant server optimises its collection itself.")
            return
        index = components.vector_index()
        shard_dir = index.shard_dir
        points = index.count()
        before = dir_size_mb(shard_dir)
        started = time.perf_counter()
        changed = index.optimize()
        seconds = time.perf_counter() - started
        verdict = "optimised" if changed else "already optimal"
        self.stdout.write(f"{verdict}: {points:,} points in {seconds:.1f} s; "
                          f"shard {before:.1f} MB -> {dir_size_mb(shard_dir):.1f} MB ({shard_dir})")
