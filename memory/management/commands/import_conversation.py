"""`manage.py import_conversation FILE --user NAME [--sample I]`: replay a LoCoMo-format conversation.

The whole file is checked first and nothing is stored when it is invalid; running it again adds
only the pages not stored yet (after a stop, or never: a second run of the same file is a no-op).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.formats.locomo import LocomoFormatError, load_conversations
from memory.management.database import database_ready
from memory.selectors.stats import memory_stats
from memory.services.common import MemoryInputError
from memory.services.importing import conversation_import, conversations_validate
from memory.services.users import user_get


class Command(BaseCommand):
    help = "Replay a conversation in the public LoCoMo JSON format into a user's memory."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--user", required=True, help="created if it does not exist (same rules as sign-up)")
        parser.add_argument("--sample", type=int, default=0, help="index of the conversation in the file")
        parser.add_argument("--json", action="store_true", help="print the final counts as JSON")

    def handle(self, *args, **opts):
        database_ready()
        try:
            conversations = load_conversations(opts["file"])
        except LocomoFormatError as exc:
            raise CommandError(f"Malformed conversation file: {exc}") from None
        index = opts["sample"]
        if not 0 <= index < len(conversations):
            raise CommandError(f"--sample {index} is out of range: the file has {len(conversations)} samples.")
        try:
            conversations_validate(conversations)  # the whole file, before anything is stored
            user = user_get(username=opts["user"], create=True)
            report = conversation_import(user=user, conversation=conversations[index], progress=True)
        except MemoryInputError as exc:
            raise CommandError(str(exc)) from None
        stats = memory_stats(user=user)
        self.stdout.write(f"imported {report.sample_id}: {report.turns} turns as {report.pages} pages, "
                          f"{report.added} added and {report.already} already stored, in {report.seconds:.1f}s")
        if opts["json"]:
            self.stdout.write(json.dumps({"import": report.__dict__, "stats": stats}, indent=2))
        else:
            self.stdout.write(
                f"STM {stats['stm_pages']} pages | MTM {stats['mtm_pages']} pages in {stats['mtm_segments']} "
                f"segments ({stats['evicted_segments']} evicted) | LPM {stats['kb_facts']} KB facts, "
                f"{stats['user_traits']} traits, {stats['agent_traits']} agent traits"
            )
