"""REST API for a closed-pool task's organizers: upload the pool (once; runs wait for it). A
worker loads it: the answer is the upload received (``202``), followed at its ``url``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers

from site_platform.api.openapi import with_errors

from ..models import OrganizerUpload
from .upload_views import ACCEPTED, OrganizerUploadView

POOL_REQUEST = inline_serializer(
    "PoolUpload",
    {
        "file": serializers.FileField(
            help_text='One key per line (TSV) or {"key", "payload"} (JSON Lines), optionally '
            "gzipped."
        ),
        "payloads": serializers.FileField(
            required=False, help_text='JSON Lines {"key", "payload"}: what annotators see.'
        ),
    },
)


class TaskPoolView(OrganizerUploadView):
    """``POST``: receive a closed-pool task's items (its organizers; once: runs wait for it); a
    worker loads them."""

    @extend_schema(
        request={"multipart/form-data": POOL_REQUEST},
        responses=with_errors(ACCEPTED, 400, 401, 403, 404, 409, 413, 429),
    )
    def post(self, request, slug: str):
        payloads = lambda: {"payloads": request.FILES.get("payloads")}  # noqa: E731
        return self.receive(slug, OrganizerUpload.Kind.POOL, payloads)
