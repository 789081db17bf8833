"""REST API routes (mounted at ``/api/``; URL names in the ``api`` namespace)."""

from django.urls import path

from . import views

app_name = "api"

urlpatterns = [
    path("tasks/", views.TaskListView.as_view(), name="task-list"),
    path("tasks/<slug:slug>/", views.TaskDetailView.as_view(), name="task-detail"),
    path("tasks/<slug:slug>/runs/", views.TaskRunsView.as_view(), name="task-runs"),
    path("tasks/<slug:slug>/reference/", views.TaskReferenceView.as_view(),
         name="task-reference"),
    path("runs/<int:run_id>/", views.RunDetailView.as_view(), name="run-detail"),
]
