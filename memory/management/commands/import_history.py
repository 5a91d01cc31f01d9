"""`manage.py import_history FILE --user NAME`: a ChatGPT or Claude data export (conversations.json,
or ChatGPT's zip) or a JSON Lines transcript into a user's memory (memory/services/history_import.py).

The whole file is checked first, as a stream within MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES and
MEMORYOS_HISTORY_IMPORT_MAX_MESSAGES, and nothing is stored when it is invalid or past a limit; running it again adds
only what is not stored yet.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.management.database import database_ready
from memory.services.common import MemoryInputError
from memory.services.history_import import history_import
from memory.services.users import user_get


class Command(BaseCommand):
    help = "Import a ChatGPT or Claude export, or a JSON Lines transcript, into a user's memory."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="conversations.json, the export's zip, or a .jsonl transcript")
        parser.add_argument("--user", required=True, help="created if it does not exist (same rules as sign-up)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    def handle(self, *args, **opts):
        database_ready()
        path: Path = opts["file"]
        try:
            stream = path.open("rb")  # read as a stream within the import's limits (settings)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from None
        try:
            with stream:
                user = user_get(username=opts["user"], create=True)
                report = history_import(user=user, data=stream, name=path.name, progress=not opts["no_progress"])
        except MemoryInputError as exc:
            raise CommandError(str(exc)) from None
        if opts["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
            return
        skipped = ", ".join(f"{count} {why}" for why, count in report.skipped.items()) or "none"
        self.stdout.write(f"imported {report.format} export {path.name}: {report.conversations} conversations, "
                          f"{report.messages} messages as {report.pages} pages ({report.added} added, "
                          f"{report.already} already stored) in {report.seconds:.1f}s; skipped: {skipped}")
