"""`manage.py maintenance [--user NAME]`: run due (or all) maintenance now, e.g. after a crash."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.runtime.due_work import due_work_run
from memory.services.common import MemoryInputError
from memory.services.maintenance import MaintenanceReport, maintenance_run
from memory.services.users import user_get


class Command(BaseCommand):
    help = "Run memory maintenance for users whose maintenance is due, or for one user."

    def add_arguments(self, parser):
        parser.add_argument("--user")

    def handle(self, *args, **opts):
        if not opts["user"]:
            # What a server also runs by itself as it starts (memory/runtime/due_work.py).
            due_work_run(on_report=self._write)
            return
        try:
            user_id = user_get(username=opts["user"]).pk
        except MemoryInputError as exc:
            raise CommandError(str(exc)) from None
        self._write(user_id, maintenance_run(user_id=user_id))

    def _write(self, user_id: int, report: MaintenanceReport) -> None:
        self.stdout.write(f"user={user_id} interrupted={report.interrupted} moved={report.moved} "
                          f"new_segments={report.created_segments} evicted={len(report.evicted)} "
                          f"promoted={len(report.promoted)}")
