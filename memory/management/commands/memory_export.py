"""`manage.py memory_export --user NAME --out FILE.car`: one user's memory as a CAR archive
(memory/services/portable.py)."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory.services.portable import memory_export


class Command(BaseCommand):
    help = "Export one user's memory (nodes, pages, segments, long-term memory, sonas) as a CARv1 archive."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True)
        parser.add_argument("--out", required=True, type=Path)

    def handle(self, *args, user: str, out: Path, **options):
        out = Path(out)
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"No user {user!r}.")
        partial = out.with_name(out.name + ".part")
        with partial.open("wb") as handle:
            summary = memory_export(user=owner, out=handle)
        partial.replace(out)  # a failed export leaves no archive behind
        counts = ", ".join(f"{count} {name}" for name, count in summary.records.items() if count)
        self.stdout.write(f"{out}: {summary.blocks} blocks, {summary.nodes} nodes ({counts}); root {summary.root}")
