"""The annotator pages (mounted at ``annotate/``) and their JSON API (under ``api/``)."""

from django.urls import include, path

from site_platform.urls import routes

from . import views

app_name = "annotation"

# Under <slug>/, a task's.
TASK_ROUTES = [
    ("", views.annotate, "task"),
    ("queue/", views.queue, "queue"),
    ("queue/unpause", views.unpause, "unpause"),
    ("queue/answers.csv", views.answers_csv, "answers_csv"),
    # The organize page's gold upload (gold items are this app's).
    ("gold/", views.upload_gold, "upload_gold"),
    # The organize page's reference sample draw (it queues the candidates for verification).
    ("reference-sample/draw/", views.draw_reference_sample_page, "draw_reference_sample"),
    ("reference-sample/cancel/", views.cancel_reference_sample_page, "cancel_reference_sample"),
    ("reference-sample/settle/", views.settle_reference_sample_page, "settle_reference_sample"),
]

urlpatterns = [
    path("", views.home, name="home"),
    # The API's URL names (``api_*``) live in this app's namespace: ``annotation:api_claim``.
    path("api/", include("annotation.api_urls")),
    *routes("<slug:slug>/", TASK_ROUTES),
]
