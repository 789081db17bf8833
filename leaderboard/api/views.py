"""REST API: tasks, run uploads, run status, reference samples.

Each view validates its input, calls one service or selector and serialises the result. Every
error has the same JSON body::

    {"error": {"code": "...", "message": "...", "problems": [{"line": 7, "message": "..."}],
               "total": 1, "run": null}}

Uploads are never read into memory: Django spools them to temporary files past
``FILE_UPLOAD_MAX_MEMORY_SIZE`` and the parser streams the file object. A request whose declared
length is already over the task's limit is refused before its body is read.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView, exception_handler

from ..ingestion import human_bytes
from ..models import Task
from ..selectors import is_organizer, run_for, runs_visible_to, visible_task, visible_tasks
from ..services.reference import upload_reference
from ..services.runs import SubmissionError, submit_upload, upload_limit
from ..services.tasks import TaskSettingsError, create_task, update_task
from .permissions import CanCreateTasksOrReadOnly, IsTaskOrganizer, IsTaskOrganizerOrReadOnly
from .serializers import (
    RunDetailSerializer,
    RunSerializer,
    RunUploadSerializer,
    TaskSerializer,
    TaskWriteSerializer,
)

SUBMISSION_STATUS = {
    "rejected": status.HTTP_400_BAD_REQUEST,
    "invalid": status.HTTP_400_BAD_REQUEST,
    "missing_file": status.HTTP_400_BAD_REQUEST,
    "not_team_member": status.HTTP_403_FORBIDDEN,
    "task_closed": status.HTTP_409_CONFLICT,
    "too_large": status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    "over_quota": status.HTTP_429_TOO_MANY_REQUESTS,
}
# Room for the multipart envelope and the form fields around the file.
MULTIPART_SLACK = 1024 * 1024


def error_body(code: str, message: str, *, problems=(), total: int = 0, run=None,
               **extra) -> dict:
    return {"error": {"code": code, "message": message, "problems": list(problems),
                      "total": total or len(problems), "run": run, **extra}}


def _field_problems(detail, prefix: str = "") -> list[dict]:
    """Flatten DRF validation details into ``{"line": None, "message": "field: ..."}``."""
    if isinstance(detail, dict):
        return [p for name, sub in detail.items()
                for p in _field_problems(sub, f"{prefix}{name}: " if name != "non_field_errors"
                                         else prefix)]
    if isinstance(detail, list):
        return [p for sub in detail for p in _field_problems(sub, prefix)]
    return [{"line": None, "message": f"{prefix}{detail}"}]


def api_exception_handler(exc, context):
    """DRF's handler, with every error in the one body shape."""
    if isinstance(exc, SubmissionError):
        return Response({"error": exc.as_dict()},
                        status=SUBMISSION_STATUS.get(exc.code, status.HTTP_400_BAD_REQUEST))
    if isinstance(exc, TaskSettingsError):
        problems = [{"line": None, "message": f"{name}: {' '.join(messages)}"}
                    for name, messages in exc.field_errors.items()]
        return Response(error_body("invalid", exc.message, problems=problems,
                                   fields=exc.field_errors), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        problems = _field_problems(exc.detail)
        message = "invalid request: " + "; ".join(p["message"] for p in problems)
        response.data = error_body("invalid", message, problems=problems)
    else:
        code = exc.default_code if isinstance(exc, exceptions.APIException) else "error"
        detail = getattr(exc, "detail", str(exc))
        response.data = error_body(getattr(detail, "code", None) or code, str(detail))
    return response


class ApiView(APIView):
    """Base of the API views: the error body above, pagination helper."""

    def get_exception_handler(self):
        return api_exception_handler

    def paginated(self, queryset, serializer_class, **context):
        paginator = api_settings.DEFAULT_PAGINATION_CLASS()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        data = serializer_class(page, many=True,
                                context={"request": self.request, **context}).data
        return paginator.get_paginated_response(data)

    def task(self, slug: str) -> Task:
        """The task if the user may see it, else 404 naming the slug."""
        task = visible_task(slug=slug, user=self.request.user)
        if task is None:
            raise exceptions.NotFound(f"there is no task {slug!r}")
        return task

    def check_declared_size(self, task: Task) -> None:
        """Refuse (413) a request whose declared length is over the limit, before reading it."""
        try:
            declared = int(self.request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return
        limit = upload_limit(task)
        if declared > limit + MULTIPART_SLACK:
            raise SubmissionError("too_large", f"the request is {human_bytes(declared)}, over "
                                               f"the limit of {human_bytes(limit)} for task "
                                               f"{task.slug!r}")

    def upload(self):
        upload = self.request.FILES.get("file")
        if upload is None:
            raise SubmissionError("missing_file", "no file: send it as the multipart form "
                                                  "field `file`")
        return upload


class TaskListView(ApiView):
    """``GET``: the tasks the user may see. ``POST``: create a task (its creator organizes it)."""

    permission_classes = [CanCreateTasksOrReadOnly]

    def get(self, request):
        return self.paginated(visible_tasks(request.user).order_by("-created_at", "slug"),
                              TaskSerializer)

    def post(self, request):
        serializer = TaskWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        task = create_task(organizers=[request.user], **serializer.validated_data)
        data = TaskSerializer(task, context={"request": request, "organizer": True}).data
        return Response(data, status=status.HTTP_201_CREATED)


class TaskDetailView(ApiView):
    """``GET``: a task's public settings. ``PATCH``: change them (its organizers)."""

    permission_classes = [IsTaskOrganizerOrReadOnly]

    def get(self, request, slug: str):
        task = self.task(slug)
        organizer = is_organizer(task=task, user=request.user)
        return Response(TaskSerializer(task, context={"request": request,
                                                      "organizer": organizer}).data)

    def patch(self, request, slug: str):
        task = self.task(slug)
        self.check_object_permissions(request, task)
        serializer = TaskWriteSerializer(task, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        update_task(task=task, **serializer.validated_data)
        return Response(TaskSerializer(task, context={"request": request,
                                                      "organizer": True}).data)


class TaskRunsView(ApiView):
    """``GET``: the caller's teams' runs (all runs for organizers). ``POST``: upload a run."""

    permission_classes = [IsAuthenticated]

    @property
    def throttle_scope(self):  # uploads only; listing is not throttled by scope
        return "uploads" if self.request.method == "POST" else None

    def get(self, request, slug: str):
        task = self.task(slug)
        return self.paginated(runs_visible_to(task=task, user=request.user), RunSerializer)

    def post(self, request, slug: str):
        task = self.task(slug)
        self.check_declared_size(task)
        upload = self.upload()
        fields = RunUploadSerializer(data=request.data)
        fields.is_valid(raise_exception=True)
        run = submit_upload(task=task, user=request.user, upload=upload,
                            team=fields.validated_data["team"] or None, file_name=upload.name,
                            name=fields.validated_data["name"],
                            description=fields.validated_data["description"])
        return Response(RunSerializer(run, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)


class RunDetailView(ApiView):
    """A run: state, reason, counts, problems, timestamps, event log (its team, organizers)."""

    def get(self, request, run_id: int):
        run = run_for(run_id=run_id, user=request.user)
        if run is None:  # 404, not 403: run ids do not tell what exists
            raise exceptions.NotFound(f"there is no run {run_id}")
        return Response(RunDetailSerializer(run, context={"request": request}).data)


class TaskReferenceView(ApiView):
    """``POST``: replace the task's reference sample (its organizers)."""

    permission_classes = [IsAuthenticated, IsTaskOrganizer]
    throttle_scope = "uploads"

    def post(self, request, slug: str):
        task = self.task(slug)
        self.check_object_permissions(request, task)
        self.check_declared_size(task)
        upload = self.upload()
        n = upload_reference(task=task, user=request.user, upload=upload, file_name=upload.name)
        return Response({"items": n, "reference_version": task.reference_version},
                        status=status.HTTP_201_CREATED)
