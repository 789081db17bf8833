"""URL tables (``site_platform.urls.routes``): one path per row under the shared prefix."""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import resolve, reverse
from django.views import View

from site_platform.urls import routes


def page(request, slug):
    return HttpResponse(slug)


class Endpoint(View):
    def get(self, request, slug, run_id):
        return HttpResponse(f"{slug} {run_id}")


urlpatterns = routes(
    "tasks/<slug:slug>/",
    [
        ("", page, "task"),
        ("runs/<int:run_id>/", Endpoint, "task-run"),
    ],
)


def test_each_row_is_a_path_under_the_prefix_in_the_tables_order():
    assert [str(p.pattern) for p in urlpatterns] == [
        "tasks/<slug:slug>/",
        "tasks/<slug:slug>/runs/<int:run_id>/",
    ]
    assert [p.name for p in urlpatterns] == ["task", "task-run"]


def test_a_function_is_mounted_as_it_is_and_a_view_class_with_as_view(settings):
    settings.ROOT_URLCONF = __name__
    assert resolve("/tasks/ner/").func is page
    match = resolve("/tasks/ner/runs/7/")
    assert match.func.view_class is Endpoint
    assert match.kwargs == {"slug": "ner", "run_id": 7}
    assert reverse("task-run", kwargs={"slug": "ner", "run_id": 7}) == "/tasks/ner/runs/7/"
