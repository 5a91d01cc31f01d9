"""The admin over long-term persona memory, acting through the services (see memory/admin.py)."""

from __future__ import annotations

from django.contrib import admin, messages

from memory.admin import EDIT, ReadOnlyAdmin, SteeredAdmin
from memory.services.common import MemoryInputError
from memory.services.supersession import supersession_accept, supersession_reject
from persona.models import AgentTrait, KnowledgeFact, Supersession, UserProfile, UserTrait


@admin.register(KnowledgeFact)
class KnowledgeFactAdmin(SteeredAdmin):
    memory_kind = "fact"
    list_display = ("text", "user", "timestamp", "valid_until", "pinned", "repressed", "version", "cid")
    list_filter = ("pinned", "repressed", ("valid_until", admin.EmptyFieldListFilter))
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


@admin.register(Supersession)
class SupersessionAdmin(ReadOnlyAdmin):
    """The review queue of facts that change; decided through the service, audited, one at a time."""

    list_display = ("new_fact", "old_fact", "user", "status", "slot", "confidence", "decided_by", "occurred_at")
    list_filter = ("status", "slot")
    search_fields = ("user__username", "old_fact__text", "new_fact__text", "reason")
    list_select_related = ("user", "old_fact", "new_fact")
    actions = ["accept", "reject"]

    def has_edit_memory_permission(self, request) -> bool:
        return request.user.has_perm(EDIT)

    def _each(self, request, queryset, verb: str, act) -> None:
        done = 0
        for row in queryset.select_related("user"):
            try:
                act(row)
                done += 1
            except MemoryInputError as exc:
                self.message_user(request, str(exc), messages.ERROR)
        self.message_user(request, f"{verb}: {done}", messages.SUCCESS if done else messages.INFO)

    @admin.action(description="Accept (the newer fact supersedes the older)", permissions=["edit_memory"])
    def accept(self, request, queryset):
        self._each(request, queryset, "Accepted", lambda row: supersession_accept(
            user=row.user, ident=str(row.pk), actor=request.user, reason="admin"))

    @admin.action(description="Reject (both stay current)", permissions=["edit_memory"])
    def reject(self, request, queryset):
        self._each(request, queryset, "Rejected", lambda row: supersession_reject(
            user=row.user, ident=str(row.pk), actor=request.user, reason="admin"))
