"""OpenAPI helpers: the error body on every documented error, paginated lists, CSV responses;
the renderers of both APIs (JSON, the browsable HTML pages, CSV). The schema class and what it
documents are the leaderboard's (``leaderboard.api.schema``)."""

from __future__ import annotations

import json
from functools import cache

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import renderers, serializers
from rest_framework.renderers import BaseRenderer

from .serializers import ErrorSerializer

ERROR_TEXT = {
    400: "Invalid request (problems listed by field or by line).",
    401: "Not authenticated, or the token was rejected.",
    403: "Not allowed for this user.",
    404: "No such task, run, snapshot, team or invitation (or not visible to this user).",
    409: "Conflict with the task's, the token's or the team's state.",
    410: "The invitation was used or has expired.",
    413: "The upload is over the task's size limit.",
    429: "Over a quota or throttled.",
}
PAGE = OpenApiParameter("page", OpenApiTypes.INT, description="Page number (50 per page).")
FORMAT = OpenApiParameter(
    "format",
    OpenApiTypes.STR,
    enum=["json", "csv"],
    description="`csv` for a CSV file (same as `Accept: text/csv`).",
)


def errors(*codes: int, text: dict[int, str] = ERROR_TEXT) -> dict:
    """Response documentation for the given error statuses (every one has the error body, the
    same in both APIs); ``text`` describes each status."""
    return {code: OpenApiResponse(ErrorSerializer, description=text[code]) for code in codes}


def with_errors(ok: dict, *codes: int) -> dict:
    return {**ok, **errors(*codes)}


@cache
def page_of(serializer_class: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The paginated envelope of a list of ``serializer_class`` (PageNumberPagination)."""
    name = serializer_class.__name__.removesuffix("Serializer")
    return type(
        f"Paginated{name}ListSerializer",
        (serializers.Serializer,),
        {
            "count": serializers.IntegerField(),
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer_class(many=True),
            "__module__": __name__,
        },
    )


class CSVRenderer(BaseRenderer):
    """Declares ``text/csv`` (``?format=csv``). CSV bodies are streamed by the views themselves;
    only error bodies reach this renderer and they stay JSON (see ``CsvExportMixin``)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data).encode()


class BrowsableAPIRenderer(renderers.BrowsableAPIRenderer):
    """DRF's browsable pages without the inline ``<style>`` of their code highlighting: the
    Content-Security-Policy allows no inline style (the pages' other styles are files)."""

    def get_context(self, *args, **kwargs):
        context = super().get_context(*args, **kwargs)
        context["code_style"] = None
        return context


def throttled_everywhere(result, generator, request, public):
    """Postprocessing hook: every operation may answer 429 (the default throttles apply to every
    view, anonymous callers sharing one budget per address), so every operation documents it,
    with the error body its other errors have."""
    too_many = {
        "description": ERROR_TEXT[429],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                operation.setdefault("responses", {}).setdefault("429", too_many)
    return result
