"""Root URL configuration: pages, the annotator queue, the REST API, accounts and the admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("leaderboard.api.urls")),
    path("annotate/", include("annotation.urls")),
    path("", include("leaderboard.urls")),
]
