"""The admin over long-term persona memory, acting through the services (see memory/admin.py)."""

from __future__ import annotations

from django.contrib import admin

from memory.admin import ReadOnlyAdmin, SteeredAdmin
from persona.models import AgentTrait, KnowledgeFact, UserProfile, UserTrait


@admin.register(KnowledgeFact)
class KnowledgeFactAdmin(SteeredAdmin):
    memory_kind = "fact"
    list_display = ("text", "user", "timestamp", "pinned", "repressed", "version", "cid")
    list_filter = ("pinned", "repressed")
    search_fields = ("text", "user__username", "cid")
    readonly_fields = ("cid", "source_page_ids")
    list_select_related = ("user",)


@admin.register(AgentTrait)
class AgentTraitAdmin(KnowledgeFactAdmin):
    memory_kind = "agent_trait"
    list_display = ("text", "user", "sona", "timestamp", "pinned", "repressed", "version", "cid")


@admin.register(UserTrait)
class UserTraitAdmin(SteeredAdmin):
    memory_kind = "trait"
    list_display = ("key", "user", "score", "pinned", "repressed", "version", "updated_at")
    list_filter = ("pinned", "repressed")
    search_fields = ("key", "user__username")

    def _ident(self, row) -> str:
        return row.key


@admin.register(UserProfile)
class UserProfileAdmin(ReadOnlyAdmin):
    list_display = ("user", "name", "gender", "birth_year", "updated_at")
    search_fields = ("user__username", "name")
