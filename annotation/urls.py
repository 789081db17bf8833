"""The annotator pages (mounted at ``annotate/``)."""

from django.urls import path

from . import views

app_name = "annotation"

urlpatterns = [
    path("", views.home, name="home"),
    path("<slug:slug>/", views.annotate, name="task"),
]
