"""`manage.py check_index [--fix]`: the people whose pages the vector index lacks, compared with the
database (memory/services/reindex.py index_check); `--fix` reindexes them. A server does this as it
starts; run it by hand after restoring a backup or moving the shard."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.services.reindex import index_check


class Command(BaseCommand):
    help = "Compare the vector index with the database; --fix reindexes the people it lacks."

    def add_arguments(self, parser):
        parser.add_argument("--fix", action="store_true", help="reindex each person whose pages the index lacks")

    def handle(self, *args, **opts):
        short = index_check(fix=opts["fix"])
        for gap in short:
            self.stdout.write(f"user={gap.user_id} pages={gap.pages} points={gap.points}"
                              + (" reindexed" if opts["fix"] else ""))
        if short and not opts["fix"]:
            raise CommandError(f"the index lacks pages of {len(short)} person(s); run with --fix")
        if not short:
            self.stdout.write("the index holds every page the database says it does")
