from django.apps import AppConfig


class PersonaConfig(AppConfig):
    name = "persona"
    default_auto_field = "django.db.models.BigAutoField"
