"""`manage.py memory_import --user NAME FILE`: an export (the zip of /me/'s "Download everything",
or its bare .car archive) into a user with no memory yet
(`--into-existing` adds it to the memory they have). Every block and record is checked first; a
tampered or malformed archive is refused, naming the first bad block or entry, and nothing changes.
The import is recorded in the user's lifecycle log: the archive's CID, whose export it was, when."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory.services.common import MemoryInputError
from memory.services.export_bundle import memory_import_bundle


class Command(BaseCommand):
    help = "Import a memory export (manage.py memory_export) into a user who has no memory yet."

    def add_arguments(self, parser):
        parser.add_argument("archive", type=Path)
        parser.add_argument("--user", required=True)
        parser.add_argument("--into-existing", action="store_true",
                            help="Add to the memory the user has (refused otherwise when they have any).")

    def handle(self, *args, archive: Path, user: str, into_existing: bool = False, **options):
        archive = Path(archive)
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"No user {user!r}.")
        if not archive.is_file():
            raise CommandError(f"No file {archive}.")
        try:
            with archive.open("rb") as handle:
                summary = memory_import_bundle(user=owner, source=handle, into_existing=into_existing)
        except MemoryInputError as error:
            raise CommandError(str(error)) from None
        if summary.source_user and summary.source_user != owner.get_username():
            self.stderr.write(self.style.WARNING(
                f"Warning: this archive is {summary.source_user}'s export; it is now in {owner.get_username()}'s "
                f"memory (their words, facts and traits among {owner.get_username()}'s own)."))
        counts = ", ".join(f"{count} {name}" for name, count in summary.records.items() if count)
        self.stdout.write(f"{user}: {summary.blocks} blocks checked, {summary.nodes} nodes, {summary.edges} edges "
                          f"({counts}) from archive {summary.root}")
