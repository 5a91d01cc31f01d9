"""`manage.py backfill_turn_flags`: write whether each turn asks, and whether it ends its page,
into the turn points of a store indexed before indexing wrote them (until then, recall reads the
pages of those turns to find out). Run it once, with the server stopped, like optimize_vectors:
the payload writes leave the embedded shard's segments to be merged again, which it does after."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from memory.adapters import configured
from memory.services.utterances import turn_flags_backfill


class Command(BaseCommand):
    help = "Write the turn-pair flags (asks, last) into turn points indexed before they existed (server stopped)."

    def handle(self, *args, **opts):
        pages = sum(turn_flags_backfill(user_id=pk) for pk in
                    get_user_model().objects.order_by("pk").values_list("pk", flat=True))
        configured.vector_index().optimize()  # a Qdrant server optimises by itself: nothing to do there
        self.stdout.write(f"{pages:,} pages' turn points flagged; vectors optimised")
