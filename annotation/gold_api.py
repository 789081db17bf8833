"""The REST API's gold upload, ``POST /api/tasks/<slug>/gold/`` (a task's organizers), beside
the reference sample and pool uploads of ``leaderboard.api``.

Gold items are this app's, and the leaderboard app sits below it (it never imports this one), so
the view is here and ``config/urls.py`` serves it among the REST API's routes (``api``
namespace: ``api:task-gold``). It is built like those uploads: the same base view, permission,
throttle scope, size checks, error body and ``202`` (a worker loads the file).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers

from leaderboard.api.upload_views import ACCEPTED, OrganizerUploadView
from leaderboard.models import OrganizerUpload
from site_platform.api.openapi import with_errors

GOLD_REQUEST = inline_serializer(
    "GoldUpload",
    {
        "file": serializers.FileField(
            help_text="UTF-8 text, one `key<TAB>correct|incorrect` line per gold item (keys of "
            "the task's items; blank lines and `#` comments are skipped)."
        ),
    },
)


class TaskGoldView(OrganizerUploadView):
    """``POST``: receive gold items of the task (its organizers); a worker loads them, all or
    nothing (the first problems with their lines); loading the same file again changes
    nothing."""

    @extend_schema(
        operation_id="tasks_gold_create",
        request={"multipart/form-data": GOLD_REQUEST},
        responses=with_errors(ACCEPTED, 400, 401, 403, 404, 413, 429),
    )
    def post(self, request, slug: str):
        return self.receive(slug, OrganizerUpload.Kind.GOLD)
