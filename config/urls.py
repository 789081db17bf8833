"""Root URL configuration: pages, the annotator queue, the REST API, accounts and the admin."""

from django.contrib import admin
from django.urls import include, path

from leaderboard.views.accounts import ThrottledLoginView, limit_failed_logins

urlpatterns = [
    path("admin/login/", limit_failed_logins(admin.site.login)),
    path("admin/", admin.site.urls),
    # Sign-in counts failed attempts (429 past the limit); the rest is Django's auth views.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("leaderboard.api.urls")),
    path("annotate/", include("annotation.urls")),
    path("", include("leaderboard.urls")),
]
