"""Upload guards of the pages (the submit page, the organize page's uploads): the API's upload
throttle, and a ceiling on the bytes of any uploaded file, enforced while the request body is
read; :func:`refused_upload` applies both, with the task's own limit on the declared size.

Django writes an uploaded file to a temporary file before any view runs (the CSRF check of a
page form already reads the body), so a per-task limit checked by the view cannot keep a huge
upload off the disk. This handler, first in ``FILE_UPLOAD_HANDLERS``, stops reading once the
files of one request pass ``UPLOAD_MAX_BYTES`` (the site-wide ceiling; each task's own, lower
limit is applied by the upload service) and marks the request, so the view answers 413. The
partial file is dropped, nothing is stored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import cast

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, ScopedRateThrottle
from rest_framework.views import APIView

from site_platform.errors import retry_after

from ..ingestion import human_bytes
from ..services.runs import SubmissionError, upload_limit

UPLOAD_SCOPE = "uploads"  # the API's upload views' throttle scope
# Room for the multipart framing and the form's other fields around the file.
MULTIPART_SLACK = 1024 * 1024


def refused_upload(request, task, *, limit: int | None = None) -> SubmissionError | None:
    """Why an upload to ``task`` from a page is refused before a service sees it: over the
    upload throttle (429), or a body over the task's limit (``limit``, else its runs' limit;
    declared) or the site's (as read; 413); ``None`` if it may go on. Nothing is stored either
    way."""
    wait = upload_throttle_wait(request)
    if wait is not None:
        return SubmissionError(
            f"too many uploads: try again in {math.ceil(wait)} s; nothing was stored",
            code="throttled",
            headers=retry_after(wait),
        )
    limit = upload_limit(task) if limit is None else limit
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    over = declared > limit + MULTIPART_SLACK
    if over or (request.FILES is not None and upload_too_large(request)):  # FILES: read it
        size = f"the request is {human_bytes(declared)}, " if declared else ""
        return SubmissionError(
            f"{size}over the limit of {human_bytes(limit)} for this task; nothing was stored",
            code="too_large",
        )
    return None


def upload_throttle_wait(request) -> float | None:
    """Count an upload from a page against the API's upload throttle (same class, scope, rate
    and counter per user); the seconds to wait if over it, else ``None``."""
    scoped = next(
        (
            cls
            # The setting names classes; api_settings imports them (its stubs say str).
            for cls in cast("Sequence[type[BaseThrottle]]", api_settings.DEFAULT_THROTTLE_CLASSES)
            if issubclass(cls, ScopedRateThrottle)
        ),
        ScopedRateThrottle,
    )
    throttle = scoped()
    # The throttle reads nothing of the view but its scope.
    view = cast(APIView, SimpleNamespace(throttle_scope=UPLOAD_SCOPE))
    if throttle.allow_request(request, view):
        return None
    return throttle.wait() or 1.0


def upload_too_large(request) -> bool:
    """Whether :class:`UploadCeilingHandler` stopped reading this request's files."""
    return bool(getattr(request, "upload_too_large", False))


class UploadCeilingHandler(FileUploadHandler):
    def __init__(self, request=None):
        super().__init__(request)
        self.seen = 0

    def receive_data_chunk(self, raw_data, start):
        self.seen += len(raw_data)
        if self.seen > settings.UPLOAD_MAX_BYTES:
            if self.request is not None:
                self.request.upload_too_large = True  # type: ignore[attr-defined]  # read above
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None  # the next handlers store the file
