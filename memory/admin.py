"""The Django admin over memory: every model, to look at (list columns, search, filters, read-only
computed fields: heat and its terms, content ids) and to act on through the same services as the
inspector (pin, repress, delete along provenance, forget a user). Nothing here writes a model
directly: the change forms are read-only, and the stock delete is replaced by the provenance delete.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.utils import timezone

from memory.config import memory_params
from memory.engine.heat import heat_breakdown
from memory.models import (
    ApiToken,
    AttachedFile,
    DialoguePage,
    HistoryImport,
    LifecycleEvent,
    MemoryAlias,
    MemoryChunk,
    MemoryEdge,
    MemoryNode,
    Recollection,
    RetrievalTrace,
    Segment,
    ServerProcess,
    Sona,
    SonaMembership,
    UserMemoryState,
)
from memory.services.common import MemoryInputError
from memory.services.deletion import memory_delete, user_forget
from memory.services.editing import memory_pin, memory_repress
from memory.services.supersession import supersession_accept, supersession_reject
from persona.models import AgentTrait, KnowledgeFact, Supersession, UserProfile, UserTrait

EDIT = "memory.edit_any_user"


class ReadOnlyAdmin(admin.ModelAdmin):
    """Looked at, never written here: memory changes through its services."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class SteeredAdmin(ReadOnlyAdmin):
    """A memory operators steer: actions that call the services, one memory at a time, audited."""

    memory_kind = ""
    actions = ["pin", "unpin", "repress", "unrepress", "delete_along_provenance"]

    def has_edit_memory_permission(self, request) -> bool:
        return request.user.has_perm(EDIT)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # the stock delete would bypass provenance
        return actions

    def _each(self, request, queryset, verb: str, act) -> None:
        done, failed = 0, []
        for row in queryset:
            try:
                act(row)
                done += 1
            except MemoryInputError as exc:
                failed.append(str(exc))
        self.message_user(request, f"{verb}: {done}", messages.SUCCESS if done else messages.INFO)
        for reason in failed:
            self.message_user(request, reason, messages.ERROR)

    def _ident(self, row) -> str:
        return str(row.pk)

    @admin.action(description="Pin", permissions=["edit_memory"])
    def pin(self, request, queryset):
        self._each(request, queryset, "Pinned", lambda r: memory_pin(
            user=r.user, kind=self.memory_kind, ident=self._ident(r), actor=request.user, reason="admin"))

    @admin.action(description="Unpin", permissions=["edit_memory"])
    def unpin(self, request, queryset):
        self._each(request, queryset, "Unpinned", lambda r: memory_pin(
            user=r.user, kind=self.memory_kind, ident=self._ident(r), actor=request.user, reason="admin", pinned=False))

    @admin.action(description="Repress (kept, never recalled)", permissions=["edit_memory"])
    def repress(self, request, queryset):
        self._each(request, queryset, "Repressed", lambda r: memory_repress(
            user=r.user, kind=self.memory_kind, ident=self._ident(r), actor=request.user, reason="admin"))

    @admin.action(description="Unrepress", permissions=["edit_memory"])
    def unrepress(self, request, queryset):
        self._each(request, queryset, "Unrepressed", lambda r: memory_repress(
            user=r.user, kind=self.memory_kind, ident=self._ident(r), actor=request.user, reason="admin",
            repressed=False))

    @admin.action(description="Delete along provenance (final)", permissions=["edit_memory"])
    def delete_along_provenance(self, request, queryset):
        self._each(request, queryset, "Deleted for good", lambda r: memory_delete(
            user=r.user, kind=self.memory_kind, ident=self._ident(r), actor=request.user, reason="admin"))


@admin.register(DialoguePage)
class DialoguePageAdmin(SteeredAdmin):
    memory_kind = "page"
    list_display = ("seq", "user", "tier", "status", "short_query", "timestamp", "pinned", "repressed", "version")
    list_filter = ("tier", "status", "pinned", "repressed", "reply_model")
    search_fields = ("query", "response", "user__username", "cid")
    readonly_fields = ("cid",)
    list_select_related = ("user",)
    exclude = ("embedding",)

    @admin.display(description="query")
    def short_query(self, page):
        return page.query[:80]


@admin.register(Segment)
class SegmentAdmin(SteeredAdmin):
    memory_kind = "segment"
    list_display = ("short_id", "user", "status", "page_count", "n_visit", "l_interaction", "heat", "pinned",
                    "repressed", "last_access")
    list_filter = ("status", "pinned", "repressed", "summary_source")
    search_fields = ("summary", "user__username", "cid")
    readonly_fields = ("heat_terms", "cid")
    list_select_related = ("user",)
    exclude = ("embedding",)

    @admin.display(description="segment")
    def short_id(self, segment):
        return segment.label

    def _terms(self, segment) -> dict[str, float]:
        return heat_breakdown(segment.to_engine(with_embedding=False), now=timezone.now(), params=memory_params())

    @admin.display(description="heat")
    def heat(self, segment):
        return round(self._terms(segment)["heat"], 3)

    @admin.display(description="heat = α·N_visit + β·L_interaction + γ·recency")
    def heat_terms(self, segment):
        terms = self._terms(segment)
        return (f"{terms['heat']:.3f} = {terms['visits']:.2f} + {terms['interaction']:.2f} + "
                f"{terms['recency']:.4f}")


@admin.register(Sona)
class SonaAdmin(ReadOnlyAdmin):
    list_display = ("name", "user", "recall_policy", "is_default", "created_at")
    list_filter = ("recall_policy", "is_default")
    search_fields = ("name", "profile", "user__username")


@admin.register(UserMemoryState)
class UserMemoryStateAdmin(ReadOnlyAdmin):
    list_display = ("user", "next_seq", "maintenance_due", "maintenance_failures", "last_maintenance_at",
                    "short_term_minutes", "long_term_threshold")
    list_filter = ("maintenance_due",)
    search_fields = ("user__username", "last_error")


@admin.register(HistoryImport)
class HistoryImportAdmin(ReadOnlyAdmin):
    """The history uploads queued, running and done (memory/services/history_jobs.py)."""

    list_display = ("id", "user", "name", "format", "status", "done", "total", "created_at", "updated_at")
    list_filter = ("status", "format")
    search_fields = ("user__username", "name")


@admin.register(ServerProcess)
class ServerProcessAdmin(ReadOnlyAdmin):
    """The server processes that hold live turns, and when each was last seen alive."""

    list_display = ("id", "host", "pid", "started_at", "seen_at")
    search_fields = ("host",)


@admin.register(Recollection)
class RecollectionAdmin(ReadOnlyAdmin):
    list_display = ("user", "created_at", "prompt_similarity", "text")
    search_fields = ("text", "prompt", "user__username")
    exclude = ("embedding",)


@admin.register(MemoryNode)
class MemoryNodeAdmin(ReadOnlyAdmin):
    list_display = ("kind", "object_id", "cid", "user", "importance", "importance_ratings", "created_at")
    list_filter = ("kind",)
    search_fields = ("cid", "object_id", "user__username")


@admin.register(MemoryAlias)
class MemoryAliasAdmin(ReadOnlyAdmin):
    """A content id a node had before its content or dependencies changed: links to it still resolve."""

    list_display = ("cid", "node", "user", "created_at")
    search_fields = ("cid", "node__cid", "user__username")
    list_select_related = ("node", "user")


@admin.register(AttachedFile)
class AttachedFileAdmin(ReadOnlyAdmin):
    """A file a turn carries (or an upload waiting for one); it goes with its page's delete."""

    list_display = ("name", "media_type", "size", "user", "page", "content_cid", "created_at")
    list_filter = ("media_type",)
    search_fields = ("name", "content_cid", "cid", "user__username")
    list_select_related = ("user", "page")


@admin.register(SonaMembership)
class SonaMembershipAdmin(ReadOnlyAdmin):
    list_display = ("sona", "node", "via", "user", "created_at")
    list_filter = ("via",)
    search_fields = ("sona__name", "node__cid", "user__username")
    list_select_related = ("sona", "node", "user")


@admin.register(MemoryChunk)
class MemoryChunkAdmin(ReadOnlyAdmin):
    """A chunk of a segment's page tree: the block its segment links to instead of every page."""

    list_display = ("node", "height", "index", "cid", "user")
    search_fields = ("cid", "node__cid", "user__username")
    list_select_related = ("node", "user")


@admin.register(MemoryEdge)
class MemoryEdgeAdmin(ReadOnlyAdmin):
    list_display = ("source", "relation", "target", "weight", "user")
    list_filter = ("relation",)
    search_fields = ("source__cid", "target__cid", "user__username")
    list_select_related = ("source", "target", "user")


@admin.register(LifecycleEvent)
class LifecycleEventAdmin(ReadOnlyAdmin):
    list_display = ("kind", "subject_id", "user", "occurred_at", "created_at")
    list_filter = ("kind",)
    search_fields = ("subject_id", "user__username")
    date_hierarchy = "created_at"


@admin.register(RetrievalTrace)
class RetrievalTraceAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user", "policy", "short_query", "latency_ms", "prompt_tokens")
    list_filter = ("policy",)
    search_fields = ("query", "user__username")

    @admin.display(description="query")
    def short_query(self, trace):
        return trace.query[:80]


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Tokens are made and revoked by their person on /settings/tokens/; their hash is not shown."""

    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    exclude = ("key_hash",)


User = get_user_model()


class MemoryUserAdmin(UserAdmin):
    """Django's user admin, with the right to erasure: forget everything of a user's memory."""

    actions = [*UserAdmin.actions, "forget_memory"]

    def has_edit_memory_permission(self, request) -> bool:
        return request.user.has_perm(EDIT)

    @admin.action(description="Forget their memory (everything remembered; final)", permissions=["edit_memory"])
    def forget_memory(self, request, queryset):
        for user in queryset:
            counts = user_forget(user=user, actor=request.user, reason="admin: right to erasure")
            self.message_user(request, f"Forgot {user.get_username()}: {counts['pages']} pages, "
                                       f"{counts['facts']} facts, {counts['events']} events.", messages.SUCCESS)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, MemoryUserAdmin)

# ---------------------------------------------------------------- long-term memory (the persona app's models)


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
