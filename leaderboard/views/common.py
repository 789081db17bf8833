"""Helpers every page view uses: file downloads."""

from __future__ import annotations

import json

from django.http import HttpResponse, StreamingHttpResponse

from ..exports import csv_lines


def csv_download(rows, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def json_download(data, filename: str) -> HttpResponse:
    response = HttpResponse(
        json.dumps(data, ensure_ascii=False), content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
