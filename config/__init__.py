"""Project configuration: Django settings, URLs, WSGI/ASGI entry points and the Celery app."""

from .celery import app as celery_app

__all__ = ("celery_app",)
