"""`manage.py maintenance [--user NAME]`: run due (or all) maintenance now, e.g. after a crash."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.maintenance import maintenance_run
from memory.models import UserMemoryState
from memory.services import MemoryInputError, stopped_turn_pages, user_get


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
            # Due, or holding a page whose turn stopped before its reply (a crash between the
            # message being stored and the reply: nothing marked maintenance due).
            due = UserMemoryState.objects.filter(maintenance_due=True).values_list("user_id", flat=True)
            user_ids = sorted(set(due) | set(stopped_turn_pages().values_list("user_id", flat=True)))
        for user_id in user_ids:
            report = maintenance_run(user_id=user_id)
            self.stdout.write(f"user={user_id} interrupted={report.interrupted} moved={report.moved} "
                              f"new_segments={report.created_segments} evicted={len(report.evicted)} "
                              f"promoted={len(report.promoted)}")
