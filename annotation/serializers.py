"""Shapes of the annotation queue's JSON API: strict inputs (unknown fields are refused, never
silently dropped) and the outputs the annotator page relies on."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from .display import item_display
from .models import Answer

MAX_TOKENS = 50


class StrictSerializer(serializers.Serializer):
    def validate(self, attrs):
        if isinstance(self.initial_data, dict):
            unknown = sorted(set(self.initial_data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(f"unknown field(s): {', '.join(unknown)}")
        return attrs


class ClaimIn(StrictSerializer):
    count = serializers.IntegerField(min_value=1, required=False, default=1)
    holding = serializers.ListField(child=serializers.UUIDField(), required=False, default=list,
                                    max_length=MAX_TOKENS)

    def validate_count(self, value):
        if value > settings.ANNOTATION_MAX_CLAIM:
            raise serializers.ValidationError(
                f"at most {settings.ANNOTATION_MAX_CLAIM} items may be claimed at once")
        return value


class TokensIn(StrictSerializer):
    tokens = serializers.ListField(child=serializers.UUIDField(), max_length=MAX_TOKENS)


class AnswerIn(StrictSerializer):
    client_id = serializers.UUIDField()
    token = serializers.UUIDField()
    answer = serializers.ChoiceField(choices=Answer.values)
    justification = serializers.CharField(max_length=500, required=False, allow_blank=True,
                                          default="")
    seconds_spent = serializers.FloatField(min_value=0, required=False, allow_null=True,
                                           default=None)


def assignment_out(lease) -> dict:
    """One leased item as the page sees it: an opaque token, its expiry and what to show.

    Nothing else: no request id, run, team, score or other answers; a gold item looks exactly
    like a real one.
    """
    item = lease.request.item if lease.request_id is not None else lease.gold.item
    return {"token": str(lease.token), "expires_at": lease.expires_at,
            "display": item_display(lease.task, item)}


def answer_out(result) -> dict:
    record = result.record
    return {"client_id": str(record.client_id), "answer": record.answer,
            "counted": result.counted, "undo_until": result.undo_until}
