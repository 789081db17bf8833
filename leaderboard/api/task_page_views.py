"""REST API of a task's page: its terms (read; a team accepts them; organizers see who did) and
its data files (listed to whoever may see the task, downloaded under the task's
``data_access``, added, changed and deleted by its organizers)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import errors, with_errors
from site_platform.downloads import DOWNLOAD_TYPES, OCTET_STREAM, stored_file_response

from ..ingestion import human_bytes
from ..models import TaskFile
from ..selectors import (
    data_access_for,
    task_file_for,
    task_files,
    teams_of,
    terms_acceptances,
    terms_digest,
    terms_of_teams,
)
from ..services.runs import resolve_team
from ..services.task_files import (
    TaskFileError,
    add_task_file,
    change_task_file,
    delete_task_file,
    task_file_limit,
)
from ..services.terms import accept_terms
from .task_page_serializers import (
    TaskFileFieldsSerializer,
    TaskFileSerializer,
    TaskFilesSerializer,
    TermsAcceptanceSerializer,
    TermsAcceptSerializer,
    TermsSerializer,
)
from .views import MULTIPART_SLACK, ApiView

# Views without permission_classes have the default: reading for anyone who may see the task,
# writing for the signed in (IsAuthenticatedOrReadOnly); the services and task_for say the rest.

FILE_REQUEST = inline_serializer(
    "TaskFileUpload",
    {
        "file": serializers.FileField(),
        "kind": serializers.ChoiceField(choices=TaskFile.Kind.choices, required=False),
        "title": serializers.CharField(required=False),
        "description": serializers.CharField(required=False),
    },
)


class TaskTermsView(ApiView):
    """``GET``: the task's terms and their version (``digest``); signed in, where each of your
    teams stands. ``POST``: accept them for your team (idempotent: 201 accepted now, 200 already
    accepted)."""

    @extend_schema(responses=with_errors({200: TermsSerializer}, 404))
    def get(self, request, slug: str):
        task = self.task(slug)
        digest = terms_digest(task)
        teams = terms_of_teams(task=task, teams=teams_of(request.user))
        data = {"task": task.slug, "terms": task.terms, "digest": digest}
        return Response(TermsSerializer({**data, "must_accept": bool(digest), "teams": teams}).data)

    @extend_schema(
        request=TermsAcceptSerializer,
        responses=with_errors(
            {201: TermsAcceptanceSerializer, 200: TermsAcceptanceSerializer},
            400,
            401,
            403,
            404,
            409,
        ),
    )
    def post(self, request, slug: str):
        task = self.task(slug)
        fields = self.validated(TermsAcceptSerializer)
        team = resolve_team(user=request.user, team=fields["team"] or None)
        acceptance, created = accept_terms(
            task=task, team=team, user=request.user, digest=fields["digest"]
        )
        data = TermsAcceptanceSerializer(acceptance, context={"digest": acceptance.digest}).data
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class TermsAcceptancesView(ApiView):
    """Every team's acceptance of every version of the task's terms, newest first (its
    organizers); ``current`` marks the task's current version."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses=with_errors({200: TermsAcceptanceSerializer(many=True)}, 401, 403, 404)
    )
    def get(self, request, slug: str):
        task = self.organized_task(slug)
        context = {"digest": terms_digest(task)}
        return Response(
            TermsAcceptanceSerializer(terms_acceptances(task), many=True, context=context).data
        )


class _FileUploadMixin(ApiView):
    @property
    def throttle_scope(self):  # uploads only
        return "uploads" if self.request.method in ("POST", "PATCH") else None

    def check_file_size(self) -> None:
        """Refuse (413) a request declared over a data file's limit, before reading it."""
        try:
            declared = int(self.request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return
        limit = task_file_limit()
        if declared > limit + MULTIPART_SLACK:
            raise TaskFileError(
                f"the request is {human_bytes(declared)}, over the limit of "
                f"{human_bytes(limit)} for a task's data file; nothing was stored",
                code="too_large",
            )

    def fields(self) -> dict:
        data = request_fields(self.request)
        serializer = TaskFileFieldsSerializer(data=data, partial=True)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


def request_fields(request) -> dict:
    """The body's fields without the file (a multipart body's values are lists)."""
    data = request.data
    if hasattr(data, "dict"):
        data = data.dict()
    if not isinstance(data, dict):
        raise exceptions.ValidationError({"non_field_errors": ["send an object"]})
    return data


class TaskFileListView(_FileUploadMixin):
    """``GET``: the task's data files, whether you may download them and, if not, what to do.
    ``POST``: add a file (its organizers): multipart ``file`` with ``kind``, ``title``,
    ``description``."""

    @extend_schema(
        operation_id="tasks_files_list", responses=with_errors({200: TaskFilesSerializer}, 404)
    )
    def get(self, request, slug: str):
        task = self.task(slug)
        access = data_access_for(task=task, user=request.user)
        data = {
            "task": task.slug,
            "data_access": task.data_access,
            "may_download": access.allowed,
            "reason": access.reason,
            "files": list(task_files(task)),
        }
        return Response(TaskFilesSerializer(data, context={"request": request}).data)

    @extend_schema(
        request={"multipart/form-data": FILE_REQUEST},
        responses=with_errors({201: TaskFileSerializer}, 400, 401, 403, 404, 409, 413),
    )
    def post(self, request, slug: str):
        task = self.organized_task(slug)
        self.check_file_size()
        upload = self.upload()
        added = add_task_file(
            task=task, user=request.user, upload=upload, file_name=upload.name, **self.fields()
        )
        data = TaskFileSerializer(added, context={"request": request}).data
        return Response(data, status=status.HTTP_201_CREATED)


class TaskFileDetailView(_FileUploadMixin):
    """``GET``: one data file's listing. ``PATCH`` (its organizers): change ``kind``, ``title``,
    ``description`` (JSON), or replace the content with a multipart ``file`` (the same id).
    ``DELETE`` (its organizers): delete it."""

    @extend_schema(responses=with_errors({200: TaskFileSerializer}, 404))
    def get(self, request, slug: str, file_id: int):
        task_file = task_file_for(task=self.task(slug), file_id=file_id)
        return Response(TaskFileSerializer(task_file, context={"request": request}).data)

    @extend_schema(
        request={
            "application/json": TaskFileFieldsSerializer,
            "multipart/form-data": FILE_REQUEST,
        },
        responses=with_errors({200: TaskFileSerializer}, 400, 401, 403, 404, 413),
    )
    def patch(self, request, slug: str, file_id: int):
        task = self.organized_task(slug)
        task_file = task_file_for(task=task, file_id=file_id)
        self.check_file_size()
        upload = request.FILES.get("file")
        changed = change_task_file(
            task_file=task_file,
            user=request.user,
            upload=upload,
            file_name=upload.name if upload is not None else "",
            **self.fields(),
        )
        return Response(TaskFileSerializer(changed, context={"request": request}).data)

    @extend_schema(request=None, responses={204: None, **errors(401, 403, 404)})
    def delete(self, request, slug: str, file_id: int):
        task = self.organized_task(slug)
        delete_task_file(task_file=task_file_for(task=task, file_id=file_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TaskFileDownloadView(ApiView):
    """A data file's content, streamed as an attachment, for whoever the task's
    ``data_access`` lets download (401 signed out, 403 with what to do)."""

    permission_classes = []

    @extend_schema(
        responses={
            **{
                (200, content_type): OpenApiTypes.BINARY
                for content_type in sorted({OCTET_STREAM, *DOWNLOAD_TYPES.values()})
            },
            **errors(401, 403, 404),
        }
    )
    def get(self, request, slug: str, file_id: int):
        task = self.task(slug)
        task_file = task_file_for(task=task, file_id=file_id)
        access = data_access_for(task=task, user=request.user)
        if not access.allowed:
            if not request.user.is_authenticated:
                raise exceptions.NotAuthenticated(access.reason)
            raise exceptions.PermissionDenied(access.reason)
        return stored_file_response(
            task_file.stored, file_name=task_file.file_name, size=task_file.size
        )
