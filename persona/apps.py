from django.apps import AppConfig


class LongTermMemoryConfig(AppConfig):
    """Long-term memory's models (profile, knowledge base, traits, agent traits). The package keeps its
    historical name and app label `persona` because its tables are named after it; its services live in
    memory/services/long_term.py, its pages and routes in memory/web. It imports nothing of the project."""

    name = "persona"
    verbose_name = "Long-term memory"
    default_auto_field = "django.db.models.BigAutoField"
