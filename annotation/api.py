"""The annotator page's JSON API: claim, heartbeat, release, answer, undo, progress.

Session (with CSRF) or token authentication. Every error has the REST API's body
(``site_platform.api.errors``) with a 4xx status (503 for a lost database); the views only validate,
call one service or selector, and serialise.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from leaderboard.api.views import ApiView
from leaderboard.models import Task
from leaderboard.selectors import TaskForbidden, task_for
from site_platform.api.openapi import errors

from . import serializers as s
from .selectors import annotator_progress
from .services import (
    JudgmentError,
    answer_assignment,
    claim_assignments,
    heartbeat,
    release,
    undo_answer,
)

ERROR_TEXT = {
    400: "Invalid body (`invalid`): the message names the field.",
    401: "Not authenticated (`not_authenticated`): send a token or a session cookie.",
    403: "Not an annotator of this task (`not_annotator`), or not allowed (`forbidden`).",
    404: "No such task, lease token (`unknown_assignment`) or answer of yours (`not_found`).",
    409: "Conflict with the queue's state: `task_closed`, `client_id_reused`, "
    "`already_answered`, `undo_expired`, `not_last_answer`.",
    415: "Unsupported content type (`invalid`): send JSON.",
    429: "Throttled (`throttled`).",
}


def documented(ok: dict, *codes: int, summary: str, request=None):
    """``extend_schema`` for a queue endpoint: its success bodies and the error statuses it
    really returns, each with the error body."""
    return extend_schema(
        tags=["annotation"],
        summary=summary,
        request=request,
        responses={**ok, **errors(*codes, 401, 429, text=ERROR_TEXT)},
    )


class QueueAPIView(ApiView):
    permission_classes = [IsAuthenticated]
    # The queue's names for DRF's errors, which its page and clients have always known.
    error_codes = {
        "parse_error": "invalid",
        "unsupported_media_type": "invalid",
        "authentication_failed": "not_authenticated",
        "permission_denied": "forbidden",
        "not_acceptable": "error",
    }

    def validated(self, serializer_class, **kwargs):
        if not isinstance(self.request.data, dict):
            raise exceptions.ValidationError("the body must be a JSON object")
        return super().validated(serializer_class, **kwargs)

    def task(self, slug: str, *, check_annotator: bool = True) -> Task:
        try:
            return task_for(slug, self.request.user, role="annotator", check_role=check_annotator)
        except TaskForbidden as refused:
            raise JudgmentError(str(refused), code="not_annotator") from refused


class ClaimView(QueueAPIView):
    @documented(
        {200: s.ClaimOut},
        400,
        403,
        404,
        415,
        request=s.ClaimIn,
        summary="Claim up to `count` items (leases); `holding` lists tokens you hold",
    )
    def post(self, request, slug: str):
        task = self.task(slug, check_annotator=False)  # the service checks it
        data = self.validated(s.ClaimIn)
        claim = claim_assignments(
            task=task, annotator=request.user, count=data["count"], holding=data["holding"]
        )
        return Response(
            {
                "status": claim.status,
                "message": claim.message,
                "question": task.question,
                "assignments": [s.assignment_out(a) for a in claim.assignments],
                "progress": annotator_progress(task=task, annotator=request.user),
            }
        )


class ProgressView(QueueAPIView):
    @documented({200: s.ProgressOut}, 403, 404, summary="Your progress on a task")
    def get(self, request, slug: str):
        return Response(annotator_progress(task=self.task(slug), annotator=request.user))


class HeartbeatView(QueueAPIView):
    @documented(
        {200: s.HeartbeatOut},
        400,
        415,
        request=s.TokensIn,
        summary="Renew your leases (revives an expired one whose slot is still free)",
    )
    def post(self, request):
        data = self.validated(s.TokensIn)
        rows = heartbeat(annotator=request.user, tokens=data["tokens"])
        return Response({"assignments": [{**r, "token": str(r["token"])} for r in rows]})


class ReleaseView(QueueAPIView):
    @documented(
        {204: None},
        400,
        415,
        request=s.TokensIn,
        summary="Give your leases back at once (the page is closing)",
    )
    def post(self, request):
        release(annotator=request.user, tokens=self.validated(s.TokensIn)["tokens"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class AnswerView(QueueAPIView):
    @documented(
        {
            201: s.AnswerOut,
            200: OpenApiResponse(
                s.AnswerOut,
                description=("A replay of an answer already stored under this `client_id`."),
            ),
        },
        400,
        403,
        404,
        409,
        415,
        request=s.AnswerIn,
        summary="Answer the item of a lease; idempotent by `client_id`",
    )
    def post(self, request):
        data = self.validated(s.AnswerIn)
        result = answer_assignment(annotator=request.user, **data)
        return Response(
            {
                "answer": s.answer_out(result),
                "progress": annotator_progress(task=result.task, annotator=request.user),
            },
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


class UndoView(QueueAPIView):
    @documented(
        {200: s.UndoOut},
        403,
        404,
        409,
        request=None,
        summary="Take your last answer back (within the undo window)",
    )
    def post(self, request, client_id):
        undone = undo_answer(annotator=request.user, client_id=client_id)
        lease = undone.assignment
        return Response(
            {
                "undone": True,
                "assignment": s.assignment_out(lease) if lease is not None else None,
                "progress": annotator_progress(task=undone.task, annotator=request.user),
            }
        )
