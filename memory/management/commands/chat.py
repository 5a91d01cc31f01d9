"""`manage.py chat --user NAME [--sona NAME]`: a terminal chat through the same services."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from memory.management.database import database_ready
from memory.services.common import MemoryInputError
from memory.services.turns import turn_run
from memory.services.users import sona_get_or_create, user_get


def _lines():
    """Prompted lines from a terminal, plain lines from a pipe; ends at EOF."""
    if not sys.stdin.isatty():
        yield from sys.stdin
        return
    while True:
        try:
            yield input("you> ")
        except EOFError:
            return


class Command(BaseCommand):
    help = "Chat with the assistant in the terminal; /quit to leave."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="created if it does not exist")
        parser.add_argument("--sona", default=None, help="the assistant sona to talk to")
        parser.add_argument("--trace", action="store_true", help="show what was recalled for each reply")

    def handle(self, *args, **opts):
        database_ready()
        try:
            user = user_get(username=opts["user"], create=True)
        except MemoryInputError as exc:
            raise CommandError(str(exc)) from None
        sona = sona_get_or_create(user=user, name=opts["sona"])
        self.stdout.write(f"Talking to {sona.name} as {user.username}. /quit to leave.")
        for line in _lines():
            message = line.strip()
            if message in {"/quit", "/exit"}:
                break
            if not message:
                continue
            self._turn(user, sona, message, opts["trace"])

    def _turn(self, user, sona, message: str, show_trace: bool) -> None:
        self.stdout.write(f"{sona.name}> ", ending="")
        try:
            result = turn_run(user=user, message=message, sona=sona,
                              on_token=lambda t: (self.stdout.write(t, ending=""), self.stdout.flush()))
        except MemoryInputError as exc:
            self.stderr.write(f"\n{exc}")
            return
        label = " [offline]" if result.offline else ""
        self.stdout.write(label)
        if show_trace:
            for item in result.prompt.included:
                self.stdout.write(f"  · {item.kind} {item.score:.3f} {item.text[:90]}")
