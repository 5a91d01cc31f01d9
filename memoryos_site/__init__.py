# The Celery app is made with Django, so that a task sent from any process goes to its broker
# (Celery's own Django layout).
from memoryos_site.celery import app as celery_app

__all__ = ("celery_app",)
