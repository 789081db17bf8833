"""The REST API's gold upload, ``POST /api/tasks/<slug>/gold/`` (a task's organizers), beside
the reference sample and pool uploads of ``leaderboard.api``.

Gold items are this app's, and the leaderboard app sits below it (it never imports this one), so
the view is here and ``config/urls.py`` serves it among the REST API's routes (``api``
namespace: ``api:task-gold``). It is built like those uploads: the same base view, permission,
throttle scope, size checks and error body.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from leaderboard.api.openapi import with_errors
from leaderboard.api.permissions import IsTaskOrganizer
from leaderboard.api.views import ApiView

from .services import upload_gold

GOLD_REQUEST = inline_serializer(
    "GoldUpload",
    {
        "file": serializers.FileField(
            help_text="UTF-8 text, one `key<TAB>correct|incorrect` line per gold item (keys of "
            "the task's items; blank lines and `#` comments are skipped)."
        ),
    },
)
GOLD_LOADED = inline_serializer(
    "GoldUploaded",
    {
        "created": serializers.IntegerField(help_text="Gold items new to the task."),
        "updated": serializers.IntegerField(help_text="Gold items given another answer."),
        "unchanged": serializers.IntegerField(help_text="Gold items loaded before as they are."),
    },
)


class TaskGoldView(ApiView):
    """``POST``: load gold items of the task (its organizers): all or nothing, every problem
    with its line; loading the same file again changes nothing."""

    permission_classes = [IsAuthenticated, IsTaskOrganizer]
    throttle_scope = "uploads"

    @extend_schema(
        operation_id="tasks_gold_create",
        request={"multipart/form-data": GOLD_REQUEST},
        responses=with_errors({201: GOLD_LOADED}, 400, 401, 403, 404, 413, 429),
    )
    def post(self, request, slug: str):
        task = self.task(slug)
        self.check_object_permissions(request, task)
        self.check_declared_size(task)
        loaded = upload_gold(task=task, upload=self.upload())
        return Response(
            {"created": loaded.created, "updated": loaded.updated, "unchanged": loaded.unchanged},
            status=status.HTTP_201_CREATED,
        )
