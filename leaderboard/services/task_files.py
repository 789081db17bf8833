"""A task's data files: its organizers add, change (replace the content, retitle) and delete
them; participants download them (``site_platform.downloads``, under the task's
``data_access``: ``leaderboard.selectors.data_access_for``).

Files are kept in Django's default storage (so an object store can be plugged in), under a name
the platform makes (``TASK_FILE_DIR/<task id>/<random>``: nothing of the uploaded name reaches
the storage path), copied in one pass that hashes them and stops at the size limit. A refused
or failed upload leaves nothing stored; a replaced or deleted file's content is removed once the
change is committed.
"""

from __future__ import annotations

import os
import uuid
from typing import IO, TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db import transaction

from site_platform.errors import InvalidFields, ServiceError

from ..ingestion import UploadRejected, human_bytes
from ..models import Task, TaskFile
from .stored_files import forget_stored, forget_stored_on_commit, store_upload

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MAX_TITLE_LENGTH = cast(int, TaskFile._meta.get_field("title").max_length)
MAX_FILE_NAME_LENGTH = cast(int, TaskFile._meta.get_field("file_name").max_length)
MAX_DESCRIPTION_LENGTH = 2000
EDITABLE_FIELDS = frozenset({"kind", "title", "description"})


class TaskFileError(ServiceError):
    """A data file refused: ``too_large`` (413), ``too_many_files`` (409), ``missing_file``,
    ``empty_file`` (400)."""

    statuses = {"too_large": 413, "too_many_files": 409}


def task_file_limit() -> int:
    """The most bytes one data file may have."""
    return min(settings.TASK_FILE_MAX_BYTES, settings.UPLOAD_MAX_BYTES)


def _clean_fields(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(fields) - EDITABLE_FIELDS)
    errors: dict[str, list[str]] = {name: ["not a field of a data file"] for name in unknown}
    cleaned: dict[str, Any] = {}
    if "kind" in fields:
        if fields["kind"] not in TaskFile.Kind.values:
            errors["kind"] = [f"one of {', '.join(TaskFile.Kind.values)}"]
        cleaned["kind"] = fields["kind"]
    if "title" in fields:
        title = str(fields["title"] or "").strip()
        if len(title) > MAX_TITLE_LENGTH:
            errors["title"] = [f"at most {MAX_TITLE_LENGTH} characters"]
        cleaned["title"] = title
    if "description" in fields:
        description = str(fields["description"] or "").strip()
        if len(description) > MAX_DESCRIPTION_LENGTH:
            errors["description"] = [f"at most {MAX_DESCRIPTION_LENGTH} characters"]
        cleaned["description"] = description
    if errors:
        summary = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        raise InvalidFields(f"invalid data file ({summary})", errors)
    return cleaned


def _download_name(upload: IO[bytes], file_name: str) -> str:
    name = os.path.basename((file_name or getattr(upload, "name", "") or "").replace("\\", "/"))
    name = "".join(c for c in name if c.isprintable()).strip()
    if not name:
        raise TaskFileError("the file has no name: give it one", code="missing_file")
    stem, ext = os.path.splitext(name)
    return (
        stem[: MAX_FILE_NAME_LENGTH - len(ext)] + ext if len(name) > MAX_FILE_NAME_LENGTH else name
    )


def _stored(task: Task, upload: IO[bytes]) -> tuple[str, int, str]:
    """Copy ``upload`` to storage; its stored name, size and SHA-256."""
    limit = task_file_limit()
    declared = getattr(upload, "size", None)
    if declared is not None and declared > limit:
        raise TaskFileError(
            f"the file is {human_bytes(declared)}, over the limit of {human_bytes(limit)} for a "
            "task's data file; nothing was stored",
            code="too_large",
        )
    seekable = getattr(upload, "seekable", None)
    if callable(seekable) and seekable():
        upload.seek(0)
    name = f"{settings.TASK_FILE_DIR}/{task.pk}/{uuid.uuid4().hex}"
    try:
        stored, received = store_upload(upload, name=name, max_bytes=limit, inflate=False)
    except UploadRejected:
        raise TaskFileError(
            f"the file is over the limit of {human_bytes(limit)} for a task's data file; "
            "nothing was stored",
            code="too_large",
        ) from None
    if received.n_bytes == 0:
        forget_stored(stored)
        raise TaskFileError("the file is empty; nothing was stored", code="empty_file")
    return stored, received.n_bytes, received.sha256


def add_task_file(
    *,
    task: Task,
    user: User,
    upload: IO[bytes],
    file_name: str = "",
    kind: str = TaskFile.Kind.INPUT_DATA,
    title: str = "",
    description: str = "",
) -> TaskFile:
    """Add a data file to ``task`` (``user``, an organizer: the caller checked); its title is
    the file's name unless given."""
    fields = _clean_fields({"kind": kind, "title": title, "description": description})
    download_name = _download_name(upload, file_name)
    if TaskFile.objects.filter(task=task).count() >= settings.TASK_FILES_MAX:
        raise TaskFileError(
            f"task {task.slug!r} has {settings.TASK_FILES_MAX} data files, the most it may have: "
            "delete or replace one",
            code="too_many_files",
        )
    stored, size, sha256 = _stored(task, upload)
    try:
        with transaction.atomic():
            return TaskFile.objects.create(
                task=task,
                kind=fields["kind"],
                title=fields["title"] or download_name[:MAX_TITLE_LENGTH],
                description=fields["description"],
                file_name=download_name,
                stored=stored,
                size=size,
                sha256=sha256,
                uploaded_by=user,
            )
    except BaseException:
        forget_stored(stored)
        raise


def change_task_file(
    *,
    task_file: TaskFile,
    user: User,
    upload: IO[bytes] | None = None,
    file_name: str = "",
    **fields: Any,
) -> TaskFile:
    """Change a data file: its ``kind``, ``title`` or ``description``, and with ``upload`` its
    content (and download name). It keeps its id; the old content is deleted on commit."""
    cleaned = _clean_fields(fields)
    if "title" in cleaned and not cleaned["title"]:
        cleaned.pop("title")  # an empty title keeps the one it has
    replaced: dict[str, Any] = {}
    if upload is not None:
        download_name = _download_name(upload, file_name)
        stored, size, sha256 = _stored(task_file.task, upload)
        replaced = {"file_name": download_name, "stored": stored, "size": size, "sha256": sha256}
        replaced["uploaded_by"] = user
    if not cleaned and not replaced:
        return task_file
    old = task_file.stored
    try:
        with transaction.atomic():
            for name, value in {**cleaned, **replaced}.items():
                setattr(task_file, name, value)
            task_file.save()
            if replaced:
                forget_stored_on_commit(old)
    except BaseException:
        if replaced:
            forget_stored(replaced["stored"])
        raise
    return task_file


def delete_task_file(*, task_file: TaskFile) -> None:
    """Delete a data file and, once committed, its content."""
    with transaction.atomic():
        stored = task_file.stored
        task_file.delete()
        forget_stored_on_commit(stored)
