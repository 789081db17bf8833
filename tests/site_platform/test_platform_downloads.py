"""Downloads of the pages and both APIs (``site_platform.downloads``): CSV cells, CSV and JSON
attachments, stored files."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.http import Http404

from site_platform.downloads import (
    csv_cell,
    csv_download,
    csv_lines,
    download_type,
    json_chunks_download,
    json_download,
    stored_file_response,
)
from site_platform.errors import StorageUnavailable


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (None, ""),
        (True, "true"),
        (False, "false"),
        (0.25, "0.25"),
        (7, "7"),
        ("-0.5", "-0.5"),
        ("=1+2", "'=1+2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        (datetime(2026, 1, 2, 3, 4, tzinfo=UTC), "2026-01-02T03:04:00+00:00"),
    ],
)
def test_csv_cells(value, cell):
    assert csv_cell(value) == cell


def test_csv_lines_one_per_row_crlf_ended_and_quoted():
    assert list(csv_lines([["key", "name"], ["a,b", None]])) == ["key,name\r\n", '"a,b",\r\n']


def test_csv_download_is_a_streamed_utf8_attachment():
    response = csv_download([["key"], ["é"]], "t-v1.csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="t-v1.csv"'
    assert b"".join(response.streaming_content).decode() == "key\r\né\r\n"


def test_json_download_keeps_the_text_as_it_is():
    response = json_download({"name": "é=1"}, "t-v1.json")
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="t-v1.json"'
    assert json.loads(response.content) == {"name": "é=1"}
    assert "é" in response.content.decode()


def test_json_chunks_are_streamed_as_one_attachment():
    response = json_chunks_download(iter(['{"items": [', "1, 2", "]}"]), "items.json")
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="items.json"'
    assert json.loads(b"".join(response.streaming_content)) == {"items": [1, 2]}


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("data.TSV", "text/tab-separated-values"),
        ("run.jsonl", "application/jsonl"),
        ("page.html", "application/octet-stream"),
        ("logo.svg", "application/octet-stream"),
        ("README", "application/octet-stream"),
    ],
)
def test_only_data_types_are_served_as_themselves(name, content_type):
    assert download_type(name) == content_type


def test_a_stored_file_is_streamed_as_an_attachment_under_its_name(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path)},
        },
    }
    stored = default_storage.save("task-files/abc", ContentFile(b"a\tb\n"))
    response = stored_file_response(stored, file_name="input.tsv", size=4)
    assert response["Content-Type"] == "text/tab-separated-values"
    assert response["Content-Length"] == "4"
    assert 'filename="input.tsv"' in response["Content-Disposition"]
    assert b"".join(response.streaming_content) == b"a\tb\n"
    with pytest.raises(Http404, match=r"the content of file 'gone\.tsv' is missing"):
        stored_file_response("task-files/gone", file_name="gone.tsv", size=1)


def test_the_storage_failing_is_unavailable(monkeypatch):
    def fail(name, mode):
        raise PermissionError("object store unreachable")

    monkeypatch.setattr(default_storage, "open", fail)
    with pytest.raises(StorageUnavailable) as refused:
        stored_file_response("task-files/abc", file_name="input.tsv", size=4)
    assert refused.value.http_status == 503
    assert refused.value.headers["Retry-After"] == "5"
