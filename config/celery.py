"""The Celery application ("leaderboard").

Configuration comes from Django settings with the ``CELERY_`` prefix (see config/settings.py);
tasks are discovered in each installed app's ``tasks`` module. Start a worker with
``celery -A config worker``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("leaderboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
