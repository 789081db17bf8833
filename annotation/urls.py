"""URL routes (filled in by the web layer)."""

urlpatterns: list = []
