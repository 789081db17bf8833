"""Shapes of the annotation queue's JSON API: strict inputs (unknown fields are refused, never
silently dropped) and the outputs the annotator page relies on."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from site_platform.api.serializers import RefuseUnknownFields

from .display import item_display
from .models import Answer

MAX_TOKENS = 50


class UUIDText(serializers.UUIDField):
    """A UUID given as text only: DRF would also take a JSON number (and ``true``) as
    ``UUID(int=...)``, silently making up an id the client never had."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class Text(serializers.CharField):
    """Text only (DRF's ``CharField`` would turn a JSON number into its digits)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class Number(serializers.FloatField):
    """A JSON number only (not ``true``, not ``"12"``)."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSerializer(RefuseUnknownFields, serializers.Serializer):
    pass


class ClaimIn(StrictSerializer):
    count = serializers.IntegerField(min_value=1, required=False, default=1)
    holding = serializers.ListField(
        child=UUIDText(), required=False, default=list, max_length=MAX_TOKENS
    )

    def validate_count(self, value):
        if value > settings.ANNOTATION_MAX_CLAIM:
            raise serializers.ValidationError(
                f"at most {settings.ANNOTATION_MAX_CLAIM} items may be claimed at once"
            )
        return value


class TokensIn(StrictSerializer):
    tokens = serializers.ListField(child=UUIDText(), max_length=MAX_TOKENS)


class AnswerIn(StrictSerializer):
    client_id = UUIDText()
    token = UUIDText()
    answer = serializers.ChoiceField(choices=Answer.values)
    justification = Text(max_length=500, required=False, allow_blank=True, default="")
    seconds_spent = Number(min_value=0, required=False, allow_null=True, default=None)


def assignment_out(lease) -> dict:
    """One leased item as the page sees it: an opaque token, its expiry and what to show.

    Nothing else: no request id, run, team, score or other answers; a gold item looks exactly
    like a real one.
    """
    item = lease.request.item if lease.request_id is not None else lease.gold.item
    return {
        "token": str(lease.token),
        "expires_at": lease.expires_at,
        "display": item_display(lease.task, item),
    }


def answer_out(result) -> dict:
    record = result.record
    return {
        "client_id": str(record.client_id),
        "answer": record.answer,
        "counted": result.counted,
        "message": result.message,
        "undo_until": result.undo_until,
    }


# -- response shapes (the OpenAPI schema's documentation of what the views return) -------------
class ProgressOut(serializers.Serializer):
    answered_today = serializers.IntegerField()
    answered_total = serializers.IntegerField()
    daily_cap = serializers.IntegerField(allow_null=True)
    remaining = serializers.IntegerField(
        help_text="Items you could still be given, gold items included (each answer takes one)."
    )
    paused = serializers.BooleanField()
    paused_reason = serializers.CharField(allow_blank=True)


class AssignmentOut(serializers.Serializer):
    token = serializers.UUIDField(help_text="Opaque lease token: all the page ever sees.")
    expires_at = serializers.DateTimeField()
    display = serializers.DictField(
        help_text="What to show: the task's display layout of the "
        "item's payload (see docs/ANNOTATION.md)."
    )


class ClaimOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "empty", "daily_cap", "paused", "closed"])
    message = serializers.CharField(allow_blank=True)
    question = serializers.CharField(allow_blank=True)
    assignments = AssignmentOut(many=True)
    progress = ProgressOut()


class LeaseStateOut(serializers.Serializer):
    token = serializers.UUIDField()
    expires_at = serializers.DateTimeField(allow_null=True, help_text="null when not valid.")
    valid = serializers.BooleanField()


class HeartbeatOut(serializers.Serializer):
    assignments = LeaseStateOut(many=True, help_text="One per token, in the given order.")


class StoredAnswerOut(serializers.Serializer):
    client_id = serializers.UUIDField()
    answer = serializers.ChoiceField(choices=Answer.values)
    counted = serializers.BooleanField(
        help_text=(
            "False for a skip and for an answer on a lease you no longer held (expired, given "
            "back, or revoked by a pause): kept, not counted."
        )
    )
    message = serializers.CharField(allow_blank=True, help_text="Why it was not counted.")
    undo_until = serializers.DateTimeField()


class AnswerOut(serializers.Serializer):
    answer = StoredAnswerOut()
    progress = ProgressOut()


class UndoOut(serializers.Serializer):
    undone = serializers.BooleanField()
    assignment = AssignmentOut(
        allow_null=True,
        help_text=(
            "A fresh lease on the same item; null when the answer taken back was late or your work "
            "on the task is paused."
        ),
    )
    progress = ProgressOut()
