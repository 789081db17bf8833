"""Where received files live (run files, a task's data files, organizer uploads): Django's default
storage, configured from the environment by ``storage_config_from_env`` in ``config/settings.py``.

The embedded default is the filesystem under ``MEDIA_ROOT``. With ``S3_BUCKET`` set they live in
an S3-compatible object store (AWS S3, MinIO, SeaweedFS, ...) through django-storages, so that web
and worker machines share the bucket instead of a directory. Everything reads and writes them
through ``django.core.files.storage.default_storage`` only (``save``, ``open(name, "rb")``,
``delete``): nothing assumes a local path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from boto3.exceptions import Boto3Error
from botocore.exceptions import BotoCoreError, ClientError
from django.core.files import File
from storages.backends.s3 import S3Storage
from storages.utils import clean_name


class ObjectStoreError(OSError):
    """The object store failed or could not be reached. An ``OSError``, as a full or vanished
    disk is on the filesystem, so callers handle both backends' failures alike."""


@contextmanager
def _failures_as_os_errors(action: str, name: str) -> Iterator[None]:
    try:
        yield
    except (BotoCoreError, ClientError, Boto3Error) as exc:
        raise ObjectStoreError(f"the object store failed to {action} {name!r}: {exc}") from exc


def _not_found(err: ClientError) -> bool:
    return err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404


class StreamedObject(File):
    """An object's body as it arrives from the store: read once, front to back (as the parsers
    and downloads read), never seekable."""

    def __init__(self, body: IO[bytes], name: str, size: int) -> None:
        super().__init__(body, name=name)
        self.size = size

    def seekable(self) -> bool:
        return False


class ObjectStorage(S3Storage):
    """django-storages' S3 backend, reading an object as a stream, its failures ``OSError``.

    ``S3Storage.open`` downloads the whole object into a temporary file before the first byte is
    read (in memory, at its default ``max_memory_size``): a 1 GiB run would sit in a worker's
    memory, and a download would wait for the whole file. Here ``open(name, "rb")`` returns the
    body of one GET as it arrives. A missing object is ``FileNotFoundError``, as on the
    filesystem; any other failure of the store is :class:`ObjectStoreError`.
    """

    def _open(self, name: str, mode: str = "rb") -> File:
        if mode != "rb":
            with _failures_as_os_errors("open", name):
                return super()._open(name, mode)
        key = self._normalize_name(clean_name(name))
        try:
            response: dict[str, Any] = self.bucket.Object(key).get()
        except ClientError as err:
            if _not_found(err):
                raise FileNotFoundError(f"no stored object {name!r}") from None
            raise ObjectStoreError(f"the object store failed to open {name!r}: {err}") from err
        except (BotoCoreError, Boto3Error) as exc:
            raise ObjectStoreError(f"the object store failed to open {name!r}: {exc}") from exc
        return StreamedObject(response["Body"], name=name, size=int(response["ContentLength"]))

    def _save(self, name: str, content: Any) -> str:
        with _failures_as_os_errors("store", name):
            return str(super()._save(name, content))

    def delete(self, name: str) -> None:
        with _failures_as_os_errors("delete", name):
            super().delete(name)

    def exists(self, name: str) -> bool:
        with _failures_as_os_errors("look up", name):
            return bool(super().exists(name))

    def size(self, name: str) -> int:
        with _failures_as_os_errors("measure", name):
            return int(super().size(name))
