"""Root URL configuration: pages, the annotator queue, the REST API, accounts and the admin."""

from django.contrib import admin
from django.urls import include, path

from annotation import rest_urls as annotation_rest_urls
from leaderboard.api import urls as api_urls
from leaderboard.views.accounts import (
    AddressesView,
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
    path("accounts/email/", AddressesView.as_view(), name="account_email"),
    path("accounts/", include("allauth.urls")),
    # The REST API: the leaderboard's routes (its catch-all 404 last) after the annotation app's
    # (the gold upload), one namespace.
    path(
        "api/",
        include(([*annotation_rest_urls.urlpatterns, *api_urls.urlpatterns], api_urls.app_name)),
    ),
    path("annotate/", include("annotation.urls")),
    path("", include("leaderboard.urls")),
]
