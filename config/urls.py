"""Root URL configuration: pages, the annotator queue, the REST API, accounts and the admin."""

from django.contrib import admin
from django.urls import include, path

from leaderboard.views.accounts import (
    ThrottledLoginView,
    ThrottledPasswordResetView,
    ThrottledSignupView,
    limit_failed_logins,
)

urlpatterns = [
    path("admin/login/", limit_failed_logins(admin.site.login)),
    path("admin/", admin.site.urls),
    # Accounts are django-allauth's; the forms that check a password or send mail are counted
    # (429 past the limit) and come first, in front of allauth's own views at the same paths.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/signup/", ThrottledSignupView.as_view(), name="signup"),
    path("accounts/password/reset/", ThrottledPasswordResetView.as_view(), name="password_reset"),
    path("accounts/", include("allauth.urls")),
    path("api/", include("leaderboard.api.urls")),
    path("annotate/", include("annotation.urls")),
    path("", include("leaderboard.urls")),
]
