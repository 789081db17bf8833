"""Root URL configuration. Later issues add the public board, queue, participant pages and API."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
