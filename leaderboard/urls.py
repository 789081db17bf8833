"""Server-rendered pages of the leaderboard app (mounted at the site root)."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("tasks/<slug:slug>/", views.board, name="task_board"),
    path("tasks/<slug:slug>/submit/", views.submit, name="submit_run"),
    path("tasks/<slug:slug>/runs/", views.task_runs, name="task_runs"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
]
