"""The annotator pages (mounted at ``annotate/``) and their JSON API (under ``api/``)."""

from django.urls import include, path

from . import views

app_name = "annotation"

urlpatterns = [
    path("", views.home, name="home"),
    # The API's URL names (``api_*``) live in this app's namespace: ``annotation:api_claim``.
    path("api/", include("annotation.api_urls")),
    path("<slug:slug>/", views.annotate, name="task"),
    path("<slug:slug>/queue/", views.queue, name="queue"),
    path("<slug:slug>/queue/unpause", views.unpause, name="unpause"),
    # The organize page's gold upload (gold items are this app's).
    path("<slug:slug>/gold/", views.upload_gold, name="upload_gold"),
    # The organize page's reference sample draw (it queues the candidates for verification).
    path(
        "<slug:slug>/reference-sample/draw/",
        views.draw_reference_sample_page,
        name="draw_reference_sample",
    ),
    path(
        "<slug:slug>/reference-sample/cancel/",
        views.cancel_reference_sample_page,
        name="cancel_reference_sample",
    ),
    path(
        "<slug:slug>/reference-sample/settle/",
        views.settle_reference_sample_page,
        name="settle_reference_sample",
    ),
    path("<slug:slug>/queue/answers.csv", views.answers_csv, name="answers_csv"),
]
