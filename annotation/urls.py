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
    path("<slug:slug>/queue/answers.csv", views.answers_csv, name="answers_csv"),
]
