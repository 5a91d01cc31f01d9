"""The Celery app: worker processes, apart from the web servers, that do the work after replies
when MEMORYOS_MAINTENANCE_MODE is "celery" (memory/runtime/tasks.py holds the tasks).

    celery -A memoryos_site worker --loglevel=INFO

Its settings are Django's CELERY_* (memoryos_site/settings.py), read from the environment.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

app = Celery("memoryos_site", include=["memory.runtime.tasks"])
app.config_from_object("django.conf:settings", namespace="CELERY")
