"""Admin bases of every app (``site_platform.admin``): list columns of annotated values."""

from __future__ import annotations

from types import SimpleNamespace

from django.contrib import admin

from site_platform.admin import annotated_column


class Columns(admin.ModelAdmin):
    scores_size = annotated_column("_scores_bytes", "scores (bytes)")


def test_an_annotated_column_shows_the_rows_value_and_sorts_by_it():
    column = Columns.scores_size
    assert column.short_description == "scores (bytes)"
    assert column.admin_order_field == "_scores_bytes"
    model_admin = Columns.__new__(Columns)  # no model needed to read a column
    assert model_admin.scores_size(SimpleNamespace(_scores_bytes=4096)) == 4096
