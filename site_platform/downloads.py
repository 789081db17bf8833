"""Downloads, for the pages and both APIs alike: CSV (streamed, its cells inert in a
spreadsheet), JSON, and a stored data file (streamed from storage, always an attachment, with a
content type from a short list of data types: never HTML, SVG or anything else a browser would
run; ``nosniff`` is set site-wide; else ``application/octet-stream``)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, TypeVar

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse

from .errors import StorageUnavailable

ResponseT = TypeVar("ResponseT", HttpResponse, StreamingHttpResponse)

# A spreadsheet opening the CSV runs a cell starting with one of these as a formula ("CSV
# injection"): user text (run and team names, item keys, justifications) gets a leading ``'``.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")

DOWNLOAD_TYPES = {
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".py": "text/x-python",
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".gz": "application/gzip",
    ".zip": "application/zip",
    ".tar": "application/x-tar",
    ".pdf": "application/pdf",
}
OCTET_STREAM = "application/octet-stream"


def download_type(file_name: str) -> str:
    """The content type a data file called ``file_name`` is served with."""
    return DOWNLOAD_TYPES.get(os.path.splitext(file_name)[1].lower(), OCTET_STREAM)


def stored_file_response(stored: str, *, file_name: str, size: int) -> FileResponse:
    """The file kept in storage as ``stored``, streamed as an attachment called ``file_name``;
    the storage failing (an unreachable object store) is :class:`StorageUnavailable`."""
    try:
        stream = default_storage.open(stored, "rb")
    except FileNotFoundError:
        raise Http404(
            f"the content of file {file_name!r} is missing: tell the task's organizers"
        ) from None
    except OSError as exc:
        raise StorageUnavailable(
            "the file storage is unavailable; retry the download shortly"
        ) from exc
    response = FileResponse(
        stream, as_attachment=True, filename=file_name, content_type=download_type(file_name)
    )
    response["Content-Length"] = str(size)
    return response


def neutralize_formula(text: str) -> str:
    """``text`` as a spreadsheet shows it: inert. Plain numbers (``-0.5``) stay as they are."""
    if text.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_cell(value: Any) -> str:
    """How one value is written in a CSV cell: booleans as true/false, missing as empty, text
    that a spreadsheet would run as a formula prefixed with ``'``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        return neutralize_formula(value)
    return str(value)


def csv_lines(rows: Iterable[Iterable[Any]]) -> Iterator[str]:
    """Each row as one CSV line (``\\r\\n`` ended), e.g. for a ``StreamingHttpResponse``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)


def attachment(response: ResponseT, file_name: str) -> ResponseT:
    response["Content-Disposition"] = f'attachment; filename="{file_name}"'
    return response


def csv_download(rows: Iterable[Iterable[Any]], file_name: str) -> StreamingHttpResponse:
    """``rows`` streamed as the CSV attachment ``file_name``."""
    return attachment(
        StreamingHttpResponse(csv_lines(rows), content_type="text/csv; charset=utf-8"), file_name
    )


def json_download(data: Any, file_name: str) -> HttpResponse:
    """``data`` as the JSON attachment ``file_name``."""
    return attachment(
        HttpResponse(
            json.dumps(data, ensure_ascii=False), content_type="application/json; charset=utf-8"
        ),
        file_name,
    )


def json_chunks_download(chunks: Iterable[str], file_name: str) -> StreamingHttpResponse:
    """JSON text written in ``chunks``, streamed as the attachment ``file_name``."""
    return attachment(StreamingHttpResponse(chunks, content_type="application/json"), file_name)
