"""`manage.py mcp --user NAME`: the MCP server (memory/web/mcp.py) over stdio, for one user's memory.

An MCP host starts it as a subprocess; everything on stdout is protocol, so nothing else is printed."""

from __future__ import annotations

import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory.web.mcp import build_server, fixed_user


class Command(BaseCommand):
    help = "Serve one user's memory over MCP on stdin/stdout (tools recall, add_memory, get_memory)."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="whose memory the server serves (username)")

    def handle(self, *args, user: str, **options):
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"No user {user!r}.")
        anyio.run(build_server(user_of=fixed_user(owner)).run_stdio_async)
