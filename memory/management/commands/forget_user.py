"""`manage.py forget_user --user NAME --yes`: the right to erasure from the command line."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.services.common import MemoryInputError
from memory.services.deletion import user_forget
from memory.services.users import user_get


class Command(BaseCommand):
    help = ("Delete everything of one user's memory (pages, segments, long-term memory, graph, traces, events, "
            "vectors). The account stays. Final: there is no undo.")

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True)
        parser.add_argument("--reason", default="right to erasure")
        parser.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")

    def handle(self, *args, **opts):
        try:
            user = user_get(username=opts["user"])
        except MemoryInputError as exc:
            raise CommandError(str(exc)) from None
        if not opts["yes"]:
            raise CommandError(f"This deletes everything {user.get_username()!r}'s memory holds, for good. "
                               "Run again with --yes to confirm.")
        counts = user_forget(user=user, reason=opts["reason"])
        self.stdout.write(f"forgot {user.get_username()}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
