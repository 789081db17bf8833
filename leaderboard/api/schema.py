"""The API's schema class (``DEFAULT_SCHEMA_CLASS``): drf-spectacular's ``AutoSchema`` with the
answers its views give that no view declares (the 403 of unverified accounts), and which paths
it documents. In a module of its
own: drf-spectacular's schema module reads the REST framework's settings, whose renderers are in
``openapi``."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

from .views import ApiView

UNVERIFIED_TEXT = (
    "`unverified_email`: the signed-in account (token or session) has not verified its email "
    "address yet; every request it makes is refused until it does (see docs/API.md)."
)


class ApiSchema(AutoSchema):
    """The schema of every operation (``DEFAULT_SCHEMA_CLASS``): drf-spectacular's, plus the
    403 ``unverified_email`` on every operation of the views that refuse such accounts (every
    view on ``ApiView``, whichever rights it asks for: ``ApiView.perform_authentication``),
    derived here once rather than written on each view. A 403 the view documents already gets
    the text added (one response per status)."""

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None or not isinstance(self.view, ApiView):
            return operation
        responses = operation.setdefault("responses", {})
        documented = responses.get("403")
        if documented is None:
            responses["403"] = {
                "description": UNVERIFIED_TEXT,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
        elif UNVERIFIED_TEXT not in documented.get("description", ""):
            documented["description"] = f"{documented.get('description', '')} Or {UNVERIFIED_TEXT}"
        return operation


API_PREFIXES = ("/api/", "/annotate/api/")


def only_json_apis(endpoints):
    """Preprocessing hook: the schema documents the REST API under ``/api/`` and the annotation
    queue's JSON API under ``/annotate/api/`` (not the pages, nor the catch-all 404 routes)."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith(API_PREFIXES)]
