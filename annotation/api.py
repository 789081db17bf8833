"""The annotator page's JSON API: claim, heartbeat, release, answer, undo, progress.

Session (with CSRF) or token authentication. Every error is ``{"error": {"code", "message"}}``
with a 4xx status; the views only validate, call one service or selector, and serialise.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.models import Task

from . import serializers as s
from .selectors import annotator_progress, is_annotator
from .services import (
    JudgmentError,
    answer_assignment,
    claim_assignments,
    heartbeat,
    release,
    undo_answer,
)

STATUS = {
    "invalid": 400, "not_annotator": 403, "not_organizer": 403, "task_closed": 409,
    "unknown_assignment": 404, "not_found": 404, "client_id_reused": 409,
    "undo_expired": 409, "not_last_answer": 409, "already_answered": 409,
}


def error(code: str, message: str, http_status: int | None = None) -> Response:
    return Response({"error": {"code": code, "message": message}},
                    status=http_status or STATUS.get(code, 400))


def _flatten(detail) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {_flatten(v)}" if k != "non_field_errors" else _flatten(v)
                         for k, v in detail.items())
    if isinstance(detail, list):
        return "; ".join(_flatten(d) for d in detail)
    return str(detail)


class QueueAPIView(APIView):
    permission_classes = [IsAuthenticated]

    def handle_exception(self, exc):
        if isinstance(exc, JudgmentError):
            return error(exc.code, exc.message)
        if isinstance(exc, Http404):
            return error("not_found", str(exc) or "not found", 404)
        response = super().handle_exception(exc)
        code = {400: "invalid", 401: "not_authenticated", 403: "forbidden",
                404: "not_found", 405: "method_not_allowed",
                415: "invalid"}.get(response.status_code, "error")
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            code = "not_authenticated"
        response.data = {"error": {"code": code, "message": _flatten(exc.detail)
                                   if isinstance(exc, exceptions.APIException) else str(exc)}}
        return response

    def valid(self, serializer_class):
        serializer = serializer_class(data=self.request.data)
        if not isinstance(self.request.data, dict):
            raise exceptions.ValidationError("the body must be a JSON object")
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def task(self, slug: str, *, check_annotator: bool = True) -> Task:
        task = Task.objects.filter(slug=slug).first()
        if task is None:
            raise Http404(f"no task {slug!r}")
        if check_annotator and not is_annotator(task=task, user=self.request.user):
            raise JudgmentError("you are not an annotator of this task", "not_annotator")
        return task


class ClaimView(QueueAPIView):
    def post(self, request, slug: str):
        task = self.task(slug, check_annotator=False)  # the service checks it
        data = self.valid(s.ClaimIn)
        claim = claim_assignments(task=task, annotator=request.user, count=data["count"],
                                  holding=data["holding"])
        return Response({
            "status": claim.status, "message": claim.message, "question": task.question,
            "assignments": [s.assignment_out(a) for a in claim.assignments],
            "progress": annotator_progress(task=task, annotator=request.user)})


class ProgressView(QueueAPIView):
    def get(self, request, slug: str):
        return Response(annotator_progress(task=self.task(slug), annotator=request.user))


class HeartbeatView(QueueAPIView):
    def post(self, request):
        data = self.valid(s.TokensIn)
        rows = heartbeat(annotator=request.user, tokens=data["tokens"])
        return Response({"assignments": [{**r, "token": str(r["token"])} for r in rows]})


class ReleaseView(QueueAPIView):
    def post(self, request):
        release(annotator=request.user, tokens=self.valid(s.TokensIn)["tokens"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class AnswerView(QueueAPIView):
    def post(self, request):
        data = self.valid(s.AnswerIn)
        result = answer_assignment(annotator=request.user, **data)
        return Response(
            {"answer": s.answer_out(result),
             "progress": annotator_progress(task=result.task, annotator=request.user)},
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class UndoView(QueueAPIView):
    def post(self, request, client_id):
        undone = undo_answer(annotator=request.user, client_id=client_id)
        lease = undone.assignment
        return Response({"undone": True, "assignment": s.assignment_out(lease),
                         "progress": annotator_progress(task=lease.task,
                                                        annotator=request.user)})
