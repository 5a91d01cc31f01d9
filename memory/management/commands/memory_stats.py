"""`manage.py memory_stats --user NAME [--json]`: counts per tier."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from memory.selectors.stats import memory_stats
from memory.services.common import MemoryInputError
from memory.services.users import user_get


class Command(BaseCommand):
    help = "Print a user's memory counts per tier."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True)
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **opts):
        try:
            user = user_get(username=opts["user"])
        except MemoryInputError as exc:
            raise CommandError(str(exc)) from None
        stats = memory_stats(user=user)
        if opts["json"]:
            self.stdout.write(json.dumps(stats, indent=2))
            return
        width = max(len(k) for k in stats)
        for key, value in stats.items():
            self.stdout.write(f"{key:<{width}}  {value}")
