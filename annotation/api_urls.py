"""The annotation queue's JSON API, included by ``annotation/urls.py`` under ``api/``."""

from django.urls import path, re_path

from site_platform.api.views import UnknownEndpointView

from . import api

urlpatterns = [
    path("tasks/<slug:slug>/claim", api.ClaimView.as_view(), name="api_claim"),
    path("tasks/<slug:slug>/progress", api.ProgressView.as_view(), name="api_progress"),
    path("assignments/heartbeat", api.HeartbeatView.as_view(), name="api_heartbeat"),
    path("assignments/release", api.ReleaseView.as_view(), name="api_release"),
    path("answers", api.AnswerView.as_view(), name="api_answer"),
    path("answers/<uuid:client_id>/undo", api.UndoView.as_view(), name="api_undo"),
    # Last: any other path (a slug or uuid that does not parse) gets the JSON error body.
    re_path(r"^[\s\S]*$", UnknownEndpointView.as_view(), name="api_unknown"),
]
