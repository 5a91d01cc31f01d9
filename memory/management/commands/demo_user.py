"""`manage.py demo_user`: make sure the demo account exists (idempotent)."""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from memory.services import sona_get_or_create
from persona.services import profile_update


class Command(BaseCommand):
    help = "Create the demo user (DEMO_USER / DEMO_PASSWORD, default demo / demo-memory) if missing."

    def handle(self, *args, **opts):
        username = os.environ.get("DEMO_USER", "demo")
        password = os.environ.get("DEMO_PASSWORD", "demo-memory")
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_password(password)
            user.save(update_fields=["password"])
            profile_update(user=user, name="Demo")
        sona_get_or_create(user=user)
        state = "created" if created else "exists"
        self.stdout.write(f"demo user {username!r} {state}; sign in at /accounts/login/ with password {password!r}"
                          if created else f"demo user {username!r} {state}")
