"""The one error body of both APIs (documentation of its shape) and the mixin every writable
serializer of both APIs uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework import serializers

if TYPE_CHECKING:
    _MixinBase = serializers.Serializer
else:
    _MixinBase = object


class RefuseUnknownFields(_MixinBase):
    """Serializer mixin: a body field the serializer does not know is refused (400, naming it),
    never silently dropped: a misspelt setting must not look applied. For every writable
    serializer of the leaderboard and annotation APIs."""

    # Sent with the fields but read by the view (e.g. an upload's ``file``).
    also_accepted: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        if hasattr(data, "keys"):
            known = [*self.fields, *self.also_accepted]
            unknown = sorted(set(data.keys()) - set(known))
            if unknown:
                message = f"unknown field (accepted: {', '.join(known)})"
                raise serializers.ValidationError({name: [message] for name in unknown})
        return super().to_internal_value(data)


# -- error body (documentation of the shape every error of both APIs has) -----------------------
class ProblemSerializer(serializers.Serializer):
    line = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="What went wrong, for programs (see docs/API.md).")
    message = serializers.CharField(help_text="What went wrong, for people.")
    problems = ProblemSerializer(many=True, help_text="The first problems, by field or line.")
    total = serializers.IntegerField(help_text="How many problems there are in all.")
    run = serializers.JSONField(
        allow_null=True,
        help_text=(
            "The run the error concerns (a rejected upload, the run with a duplicate file), else "
            "null."
        ),
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()
