"""The base of both APIs' views (``site_platform.api.views``): a body validated by a
serializer, as one error body when it is not valid."""

from __future__ import annotations

import json

import pytest
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory

from site_platform.api.serializers import RefuseUnknownFields
from site_platform.api.views import JsonApiView

pytestmark = pytest.mark.django_db


class RoleSerializer(RefuseUnknownFields, serializers.Serializer):
    role = serializers.ChoiceField(choices=["annotator", "organizer"])
    note = serializers.CharField(required=False)


class Echo(JsonApiView):
    authentication_classes = []
    permission_classes = []

    def post(self, request):
        return Response(self.validated(RoleSerializer))

    def patch(self, request):
        return Response(self.validated(RoleSerializer, partial=True))


def send(method: str, body: dict) -> Response:
    factory = APIRequestFactory()
    request = getattr(factory, method)("/api/echo/", body, format="json")
    response = Echo.as_view()(request)
    response.render()
    return response


def test_a_valid_body_is_its_validated_fields():
    assert json.loads(send("post", {"role": "organizer"}).content) == {"role": "organizer"}


def test_partial_validation_leaves_out_the_fields_not_sent():
    assert json.loads(send("patch", {"note": "hi"}).content) == {"note": "hi"}


def test_an_invalid_body_is_400_with_its_problems_by_field():
    response = send("post", {"role": "admin", "colour": "red"})
    assert response.status_code == 400
    error = json.loads(response.content)["error"]
    assert error["code"] == "invalid"
    assert [p["message"].split(":")[0] for p in error["problems"]] == ["colour"]
