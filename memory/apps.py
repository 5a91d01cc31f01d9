from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Who hears about changes to facts: the facts read at a turn hear a page's correction, and
        # the chat's sockets hear what a turn's after-reply work remembered, changed or forgot.
        # How the work a turn makes due runs (inline, the lane, Celery) is the runtime's, not the services'.
        from memory.runtime.after_reply import after_reply_install
        from memory.services import editing, facts
        from memory.web import notices

        editing.page_corrected_listen(facts.facts_reread_page)
        facts.fact_changes_listen(notices.memory_changed_send)
        after_reply_install()
