"""REST API: tasks, run uploads, run status and details, reference samples; the base view.

The board, snapshots and run history are in ``board_views``; organizer actions in
``organizer_views``; tokens and the caller in ``account_views``.

Each view validates its input, calls one service or selector and serialises the result. Every
error has the same JSON body (``site_platform.api.errors``).

Uploads are never read into memory: Django spools them to temporary files past
``FILE_UPLOAD_MAX_MEMORY_SIZE``. A run upload is only copied to storage here (hashed, its sizes
checked as it streams) and answered 202; a worker parses it. A request whose declared length is
already over the task's limit is refused before its body is read.
"""

from __future__ import annotations

import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from site_platform.api.openapi import PAGE, page_of, with_errors
from site_platform.api.views import JsonApiView

from ..board_text import RunWords
from ..ingestion import human_bytes
from ..models import Run, Task
from ..selectors import (
    TaskForbidden,
    check_verified_email,
    is_organizer,
    may_edit_run,
    run_for,
    runs_seen_by,
    snapshots_visible_to,
    task_for,
    visible_tasks,
)
from ..services.board import update_run_details
from ..services.runs import SubmissionError, submit_upload, upload_limit
from ..services.tasks import create_task, update_task
from .permissions import CanCreateTasksOrReadOnly
from .serializers import (
    RunDetailSerializer,
    RunDetailsSerializer,
    RunSerializer,
    RunUploadSerializer,
)
from .task_serializers import TaskSerializer, TaskWriteSerializer

# Room for the multipart envelope and the form fields around the file.
MULTIPART_SLACK = 1024 * 1024


# The base of the views of both APIs: the platform's (``site_platform.api.views``) with the
# site's one rule for accounts and the lookups of tasks and runs. A comment, not a docstring:
# the schema would describe every view without a docstring of its own with it.
class ApiView(JsonApiView):
    def perform_authentication(self, request):
        # The API's one place for who may act: a signed-in account (a token, a session) whose
        # address is not verified is refused every request (403 unverified_email), so a token
        # it holds from before does not work either. Anonymous callers read as before.
        if request.user.is_authenticated:
            check_verified_email(request.user, for_request=True)

    def run(self, run_id: int) -> Run:
        """The run if the user may see it, else 404 (not 403: run ids do not tell what exists)."""
        run = run_for(run_id=run_id, user=self.request.user)
        if run is None:
            raise exceptions.NotFound(f"there is no run {run_id}")
        return run

    def run_words(self, task: Task) -> RunWords:
        """The words of ``task``'s runs as the caller sees them: read against the newest
        snapshot the caller may see (as their runs' states are: ``runs_seen_by``)."""
        return RunWords.of(task, snapshots_visible_to(task=task, user=self.request.user).first())

    def organized_task(self, slug: str, *, refusal: str | None = None) -> Task:
        """The task if the user may see it (else 404) and organizes it (else 403, ``refusal``
        when given; 401 when the caller is not signed in): the API's one check of organizer
        rights."""
        try:
            return task_for(slug, self.request.user, role="organizer")
        except TaskForbidden as forbidden:
            if not self.request.user.is_authenticated:
                self.permission_denied(self.request)  # 401 asking for credentials
            if refusal is not None:
                raise exceptions.PermissionDenied(refusal) from forbidden
            raise

    def task(self, slug: str) -> Task:
        """The task if the user may see it, else 404 naming the slug."""
        return task_for(slug, self.request.user)

    def check_declared_size(self, task: Task) -> None:
        """Refuse (413) a request whose declared length is over the limit, before reading it."""
        try:
            declared = int(self.request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return
        limit = upload_limit(task)
        if declared > limit + MULTIPART_SLACK:
            raise SubmissionError(
                f"the request is {human_bytes(declared)}, over "
                f"the limit of {human_bytes(limit)} for task "
                f"{task.slug!r}",
                code="too_large",
            )

    def upload(self):
        upload = self.request.FILES.get("file")
        if upload is None:
            raise SubmissionError(
                "no file: send it as the multipart form field `file`", code="missing_file"
            )
        return upload


UPLOAD_REQUEST = inline_serializer(
    "RunUpload",
    {
        "file": serializers.FileField(help_text="TSV or JSON Lines, optionally gzipped."),
        "name": serializers.CharField(required=False, allow_blank=True),
        "description": serializers.CharField(required=False, allow_blank=True),
        "team": serializers.CharField(
            required=False, allow_blank=True, help_text="Needed only when you are in several teams."
        ),
    },
)


class RunFilter(django_filters.FilterSet):
    """``?state=`` (repeatable) and ``?team=`` (a team's name) on a task's runs."""

    state = django_filters.MultipleChoiceFilter(choices=Run.State.choices)
    team = django_filters.CharFilter(field_name="team__name")

    class Meta:
        model = Run
        fields = ["state", "team"]


class TaskListView(ApiView):
    """``GET``: the tasks the user may see. ``POST``: create a task (its creator organizes it)."""

    permission_classes = [CanCreateTasksOrReadOnly]

    @extend_schema(
        operation_id="tasks_list",
        parameters=[PAGE],
        responses=with_errors({200: page_of(TaskSerializer)}, 404),
    )
    def get(self, request):
        return self.paginated(
            visible_tasks(request.user).order_by("-created_at", "slug"), TaskSerializer
        )

    @extend_schema(
        request=TaskWriteSerializer,
        responses=with_errors({201: TaskSerializer}, 400, 401, 403, 409),
        description="A new task is a draft unless `state` says otherwise; `state: open` is "
        "refused (409 `task_not_ready`) while its checklist has something missing, as it has "
        "for a task with no data yet.",
    )
    def post(self, request):
        settings = self.validated(TaskWriteSerializer)
        task = create_task(organizers=[request.user], **settings)
        data = TaskSerializer(task, context={"request": request, "organizer": True}).data
        return Response(data, status=status.HTTP_201_CREATED)


class TaskDetailView(ApiView):
    """``GET``: a task's public settings (its organizers also see its ``readiness``). ``PATCH``:
    change them (its organizers)."""

    # Reading: anyone who may see the task (an unknown slug is 404 to every caller, before
    # any question of credentials); changing: ``organized_task``.
    permission_classes = [AllowAny]

    @extend_schema(responses=with_errors({200: TaskSerializer}, 404))
    def get(self, request, slug: str):
        task = self.task(slug)
        organizer = is_organizer(task=task, user=request.user)
        return Response(
            TaskSerializer(task, context={"request": request, "organizer": organizer}).data
        )

    @extend_schema(
        request=TaskWriteSerializer,
        responses=with_errors({200: TaskSerializer}, 400, 401, 403, 404, 409),
        description="`state: open` (from draft, or closed again) is refused with 409 "
        "`task_not_ready` while the task's checklist (`readiness`) has something missing: the "
        "error's `problems` are the missing checks and its `readiness` the whole list; nothing "
        "is saved then.",
    )
    def patch(self, request, slug: str):
        task = self.organized_task(slug)
        update_task(task=task, **self.validated(TaskWriteSerializer, instance=task, partial=True))
        return Response(TaskSerializer(task, context={"request": request, "organizer": True}).data)


class TaskRunsView(ApiView):
    """``GET``: the caller's teams' runs (all runs for organizers). ``POST``: upload a run."""

    permission_classes = [IsAuthenticated]

    @property
    def throttle_scope(self):  # uploads only; listing is not throttled by scope
        return "uploads" if self.request.method == "POST" else None

    @extend_schema(
        operation_id="tasks_runs_list",
        parameters=[
            PAGE,
            OpenApiParameter(
                "state",
                OpenApiTypes.STR,
                many=True,
                enum=[s.value for s in Run.State],
                description="Only runs in these states (repeatable).",
            ),
            OpenApiParameter("team", OpenApiTypes.STR, description="A team's name."),
        ],
        responses=with_errors({200: page_of(RunSerializer)}, 400, 401, 404),
    )
    def get(self, request, slug: str):
        task = self.task(slug)
        query = RunFilter(request.query_params, queryset=Run.objects.none())
        if not query.is_valid():
            raise exceptions.ValidationError(query.errors)
        return self.paginated(
            runs_seen_by(
                task=task,
                user=request.user,
                states=query.form.cleaned_data["state"],
                team=query.form.cleaned_data["team"] or None,
            ),
            RunSerializer,
            words=self.run_words(task),
        )

    @extend_schema(
        request={"multipart/form-data": UPLOAD_REQUEST},
        responses=with_errors({202: RunSerializer}, 400, 401, 403, 404, 409, 413, 429),
    )
    def post(self, request, slug: str):
        """Receive a run: 202 with the run ``received``; a worker validates it (follow it at its
        ``url``: ``validating``, then ``queued`` or ``rejected`` with its problems by line)."""
        task = self.task(slug)
        self.check_declared_size(task)
        upload = self.upload()
        fields = self.validated(RunUploadSerializer)
        run = submit_upload(
            task=task,
            user=request.user,
            upload=upload,
            team=fields["team"] or None,
            file_name=upload.name,
            name=fields["name"],
            description=fields["description"],
        )
        data = RunSerializer(run, context={"request": request}).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})


class RunDetailView(ApiView):
    """``GET``: a run: state, reason, counts, problems, timestamps, event log (its team,
    organizers). ``PATCH``: its team changes its public name, description or link."""

    @extend_schema(responses=with_errors({200: RunDetailSerializer}, 404))
    def get(self, request, run_id: int):
        run = self.run(run_id)
        context = {"request": request, "words": self.run_words(run.task)}
        return Response(RunDetailSerializer(run, context=context).data)

    @extend_schema(
        request=RunDetailsSerializer,
        responses=with_errors({200: RunDetailSerializer}, 400, 401, 403, 404),
    )
    def patch(self, request, run_id: int):
        run = self.run(run_id)
        if not may_edit_run(run=run, user=request.user):
            raise exceptions.PermissionDenied(
                f"only the members of team {run.team.name!r} may change this run"
            )
        if not isinstance(request.data, dict):
            raise exceptions.ValidationError({"non_field_errors": ["send a JSON object"]})
        update_run_details(run=run, **self.validated(RunDetailsSerializer, partial=True))
        context = {"request": request, "words": self.run_words(run.task)}
        return Response(RunDetailSerializer(run, context=context).data)
