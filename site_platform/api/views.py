"""The base of the views of both APIs: error bodies stay JSON when CSV was asked for, a body
validated by a serializer, pagination, CSV exports, and the answer to a path no endpoint has."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from django.http import StreamingHttpResponse
from rest_framework import exceptions
from rest_framework.pagination import BasePagination
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from ..downloads import csv_download
from .openapi import BrowsableAPIRenderer, CSVRenderer

# The base of view mixins: to the type checker, the APIView they are mixed into.
if TYPE_CHECKING:
    ViewMixinBase = APIView
else:
    ViewMixinBase = object


# The base of the views of both APIs: CSV requests get JSON errors, pagination. Errors are
# answered by ``site_platform.api.errors`` (the project's exception handler). A comment, not a
# docstring: the schema would describe every view without a docstring of its own with it.
class JsonApiView(APIView):
    def finalize_response(self, request, response, *args, **kwargs):
        # Error bodies are JSON even when CSV was asked for (``?format=csv``).
        renderer = getattr(request, "accepted_renderer", None)
        if (
            isinstance(response, Response)
            and response.status_code >= 400
            and renderer is not None
            and renderer.format not in ("json", "api")
        ):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)

    def validated(self, serializer_class, **kwargs):
        """The request's body as ``serializer_class`` (with ``kwargs``: ``instance``,
        ``partial``) validates it; else 400 listing the problems by field."""
        serializer = serializer_class(data=self.request.data, **kwargs)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def paginated(self, queryset, serializer_class, **context):
        # The setting names a class; api_settings imports it (its stubs say str).
        paginator = cast("type[BasePagination]", api_settings.DEFAULT_PAGINATION_CLASS)()
        page: list[Any] | None = paginator.paginate_queryset(queryset, self.request, view=self)
        data = serializer_class(page, many=True, context={"request": self.request, **context}).data
        return paginator.get_paginated_response(data)


class CsvExportMixin(ViewMixinBase):
    """Views that answer ``?format=csv`` (or ``Accept: text/csv``) with a streamed CSV file."""

    renderer_classes: Sequence[type[BaseRenderer]] = [
        JSONRenderer,
        BrowsableAPIRenderer,
        CSVRenderer,
    ]

    def wants_csv(self) -> bool:
        return getattr(self.request.accepted_renderer, "format", None) == "csv"

    @staticmethod
    def csv_response(rows, file_name: str) -> StreamingHttpResponse:
        return csv_download(rows, file_name)


class UnknownEndpointView(JsonApiView):
    """Any other path under ``/api/`` or ``/annotate/api/``: 404 with the error body (not the
    HTML page)."""

    permission_classes = []
    authentication_classes = []
    schema = None

    def unknown(self, request, *args, **kwargs):
        raise exceptions.NotFound(f"there is no API endpoint {request.path!r}")

    get = post = put = patch = delete = head = unknown
