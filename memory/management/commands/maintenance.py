"""`manage.py maintenance [--user NAME]`: run due (or all) maintenance now, e.g. after a crash."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.selectors import users_with_maintenance_to_do
from memory.services.common import MemoryInputError
from memory.services.maintenance import maintenance_run
from memory.services.users import user_get


class Command(BaseCommand):
    help = "Run memory maintenance for users whose maintenance is due, or for one user."

    def add_arguments(self, parser):
        parser.add_argument("--user")

    def handle(self, *args, **opts):
        if opts["user"]:
            try:
                user_ids = [user_get(username=opts["user"]).pk]
            except MemoryInputError as exc:
                raise CommandError(str(exc)) from None
        else:
            user_ids = users_with_maintenance_to_do()
        for user_id in user_ids:
            report = maintenance_run(user_id=user_id)
            self.stdout.write(f"user={user_id} interrupted={report.interrupted} moved={report.moved} "
                              f"new_segments={report.created_segments} evicted={len(report.evicted)} "
                              f"promoted={len(report.promoted)}")
