"""REST API of organizers' uploads (gold items, a pool, a reference sample, reference
candidates): each upload view answers ``202`` with the upload as received (:func:`accepted`); a
worker loads it, and ``GET /api/tasks/<slug>/uploads/<id>/`` tells its state, counts and first
problems (``uploads/``: the latest ones). No body grows with the file: problems are capped."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.reverse import reverse

from site_platform.api.openapi import with_errors

from ..models import OrganizerUpload
from ..selectors import organizer_upload, recent_uploads
from ..services.organizer_uploads import receive_upload
from .views import ApiView

REFERENCE_REQUEST = inline_serializer(
    "ReferenceUpload",
    {
        "file": serializers.FileField(help_text="TSV `key<TAB>group` or JSON Lines."),
    },
)


class UploadProblemSerializer(serializers.Serializer):
    line = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class OrganizerUploadSerializer(serializers.ModelSerializer):
    problems = UploadProblemSerializer(
        many=True, help_text="The first problems of a rejected file (at most 20), by line."
    )
    problem_count = serializers.IntegerField(help_text="How many problems the file has in all.")
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="What a loaded file loaded, by name."
    )
    url = serializers.SerializerMethodField()

    class Meta:
        model = OrganizerUpload
        fields = [
            "id",
            "kind",
            "state",
            "file_name",
            "payloads_name",
            "n_bytes",
            "message",
            "counts",
            "problems",
            "problem_count",
            "created_at",
            "updated_at",
            "url",
        ]
        read_only_fields = fields

    def get_url(self, upload: OrganizerUpload) -> str:
        return reverse(
            "api:task-upload",
            kwargs={"slug": upload.task.slug, "upload_id": upload.pk},
            request=self.context.get("request"),
        )


def accepted(request, upload: OrganizerUpload) -> Response:
    """The ``202`` of an upload view: the upload as received, where to follow it."""
    body = OrganizerUploadSerializer(upload, context={"request": request}).data
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


ACCEPTED = {202: OrganizerUploadSerializer}


class OrganizerUploadView(ApiView):
    """The base of the organizer upload views: its organizers, the upload throttle and size
    checks, then the upload received for a worker (:func:`accepted`)."""

    permission_classes = [IsAuthenticated]
    throttle_scope = "uploads"

    def receive(self, slug: str, kind: str, fields=None) -> Response:
        """Receive the request's ``file`` as an upload of ``kind``; ``fields()``: the service's
        other arguments, read once the requester may upload."""
        task = self.organized_task(slug)
        self.check_declared_size(task)
        upload = self.upload()
        more = fields() if fields is not None else {}
        user = cast(User, self.request.user)  # IsAuthenticated: never anonymous here
        received = receive_upload(task=task, user=user, kind=kind, upload=upload, **more)
        return accepted(self.request, received)


class TaskUploadsView(ApiView):
    """``GET``: the task's latest organizer uploads, newest first (its organizers)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="tasks_uploads_list",
        responses=with_errors({200: OrganizerUploadSerializer(many=True)}, 401, 403, 404),
    )
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        uploads = recent_uploads(task)
        return Response(
            OrganizerUploadSerializer(uploads, many=True, context={"request": request}).data
        )


class TaskUploadView(ApiView):
    """``GET``: one organizer upload of the task: its state, counts and first problems."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="tasks_uploads_retrieve",
        responses=with_errors({200: OrganizerUploadSerializer}, 401, 403, 404),
    )
    def get(self, request, slug: str, upload_id: int):
        task = self.organized_task(slug)
        upload = organizer_upload(task=task, upload_id=upload_id)
        return Response(OrganizerUploadSerializer(upload, context={"request": request}).data)


class TaskReferenceView(OrganizerUploadView):
    """``POST``: receive a reference sample that replaces the task's (its organizers), loaded by
    a worker; 409 while a draw of the sample built in the product is being verified."""

    @extend_schema(
        request={"multipart/form-data": REFERENCE_REQUEST},
        responses=with_errors(ACCEPTED, 400, 401, 403, 404, 409, 413, 429),
    )
    def post(self, request, slug: str):
        return self.receive(slug, OrganizerUpload.Kind.REFERENCE)
