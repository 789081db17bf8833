"""A task's data file as a download, for the pages and the API alike: streamed from storage,
always an attachment, with a content type from a short list of data types (never HTML, SVG or
anything else a browser would run; ``nosniff`` is set site-wide), else
``application/octet-stream``."""

from __future__ import annotations

import os

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404

from .errors import StorageUnavailable
from .models import TaskFile

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


def task_file_response(task_file: TaskFile) -> FileResponse:
    """``task_file`` streamed as an attachment under its download name; the storage failing
    (an unreachable object store) is :class:`StorageUnavailable`."""
    try:
        stream = default_storage.open(task_file.stored, "rb")
    except FileNotFoundError:
        raise Http404(
            f"the content of file {task_file.file_name!r} is missing: tell the task's organizers"
        ) from None
    except OSError as exc:
        raise StorageUnavailable(
            "the file storage is unavailable; retry the download shortly"
        ) from exc
    response = FileResponse(
        stream,
        as_attachment=True,
        filename=task_file.file_name,
        content_type=download_type(task_file.file_name),
    )
    response["Content-Length"] = str(task_file.size)
    return response
