"""`manage.py demo_user`: make sure the demo account exists with its demo memory (idempotent).

The demo user's memory is the conversation shipped in memory/formats/demo/ (weeks of talk about a
few recurring topics), imported once through the same write path as live turns, so a fresh
`make run` shows a full inspector: pages in every tier, segments formed and promoted, facts, traits.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand

from memory.formats.locomo import load_conversations
from memory.selectors.stats import memory_stats
from memory.services.importing import conversation_import
from memory.services.long_term import profile_update
from memory.services.users import sona_get_or_create, user_ensure

DEMO_CONVERSATION = Path(__file__).resolve().parents[2] / "formats" / "demo" / "demo_conversation.json"


class Command(BaseCommand):
    help = ("Create the demo user (DEMO_USER / DEMO_PASSWORD, default demo / demo-memory) with the demo "
            "conversation imported, if missing; print where to look.")

    def add_arguments(self, parser):
        parser.add_argument("--no-conversation", action="store_true", help="an empty demo memory")

    def handle(self, *args, **opts):
        username = os.environ.get("DEMO_USER", "demo")
        password = os.environ.get("DEMO_PASSWORD", "demo-memory")
        user, created = user_ensure(username=username, password=password)
        if created:  # the demo conversation's person
            profile_update(user=user, name="Maya" if DEMO_CONVERSATION.exists() else "Demo")
        sona_get_or_create(user=user)
        if not opts["no_conversation"] and DEMO_CONVERSATION.exists() and not memory_stats(user=user)["total_pages"]:
            self.stdout.write("importing the demo conversation (a minute on first start)...")
            for conversation in load_conversations(DEMO_CONVERSATION):
                conversation_import(user=user, conversation=conversation, progress=True)
        stats = memory_stats(user=user)
        state = "created" if created else "exists"
        self.stdout.write(f"demo user {username!r} {state}: {stats['total_pages']} pages, {stats['mtm_segments']} "
                          f"mid-term segments, {stats['kb_facts']} facts, {stats['user_traits']} traits")
        if created:
            self.stdout.write(f"sign in at /accounts/login/ with {username!r} / {password!r}")
        self.stdout.write(f"chat at /, see its memory at /inspector/{username}/ "
                          f"(mid-term figures at /inspector/{username}/mtm/, the replay at "
                          f"/inspector/{username}/replay/)")
