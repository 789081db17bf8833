"""URL tables: the routes that share a prefix (a task's, a run's, a team's) written once each,
as rows of ``(route, view, name)``, the prefix once for all of them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.urls import URLPattern, path
from django.views import View

Route = tuple[str, Any, str]


def routes(prefix: str, table: Iterable[Route]) -> list[URLPattern]:
    """One ``path(prefix + route, view, name=name)`` for each row of ``table``, in its order;
    a view class (an API view) is mounted with ``as_view()``."""
    return [path(prefix + route, _view(view), name=name) for route, view, name in table]


def _view(view: Any) -> Callable[..., Any]:
    if isinstance(view, type) and issubclass(view, View):
        return view.as_view()
    return view
