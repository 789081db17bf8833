"""REST API for a closed-pool task's organizers: upload the pool (once; runs wait for it)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from ..services.pool import upload_pool
from .openapi import with_errors
from .permissions import IsTaskOrganizer
from .views import ApiView

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


class TaskPoolView(ApiView):
    """``POST``: create a closed-pool task's items (its organizers; once: runs wait for it)."""

    permission_classes = [IsAuthenticated, IsTaskOrganizer]
    throttle_scope = "uploads"

    @extend_schema(
        request={"multipart/form-data": POOL_REQUEST},
        responses=with_errors(
            {201: inline_serializer("PoolUploaded", {"items": serializers.IntegerField()})},
            400,
            401,
            403,
            404,
            409,
            413,
            429,
        ),
    )
    def post(self, request, slug: str):
        task = self.task(slug)
        self.check_object_permissions(request, task)
        self.check_declared_size(task)
        upload = self.upload()
        payloads = request.FILES.get("payloads")
        n = upload_pool(task=task, user=request.user, upload=upload, payloads=payloads)
        return Response({"items": n}, status=status.HTTP_201_CREATED)
