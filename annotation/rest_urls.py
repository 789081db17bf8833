"""This app's routes in the REST API (``/api/``, ``api`` namespace), put before the REST API's
own by ``config/urls.py``: the gold upload (see ``annotation.gold_api``) and the reference
sample draw, cancel and settling (``annotation.reference_sample_api``)."""

from django.urls import path

from .gold_api import TaskGoldView
from .reference_sample_api import (
    ReferenceSampleCancelView,
    ReferenceSampleDrawView,
    ReferenceSampleSettleView,
)

urlpatterns = [
    path("tasks/<slug:slug>/gold/", TaskGoldView.as_view(), name="task-gold"),
    path(
        "tasks/<slug:slug>/reference-sample/draw/",
        ReferenceSampleDrawView.as_view(),
        name="task-reference-sample-draw",
    ),
    path(
        "tasks/<slug:slug>/reference-sample/cancel/",
        ReferenceSampleCancelView.as_view(),
        name="task-reference-sample-cancel",
    ),
    path(
        "tasks/<slug:slug>/reference-sample/settle/",
        ReferenceSampleSettleView.as_view(),
        name="task-reference-sample-settle",
    ),
]
