"""Where received files live: the filesystem by default, an S3-compatible bucket with
``S3_BUCKET`` (``config/storage.py``). The bucket tests run against a real server
(``s3_bucket``: SeaweedFS, tests/support/object_store.py)."""

from __future__ import annotations

import io
import os

import pytest
from django.conf import settings
from django.core.files.storage import default_storage

from config.settings import storage_config_from_env
from config.storage import ObjectStorage, ObjectStoreError, StreamedObject
from leaderboard.ingestion import UploadRejected
from leaderboard.services.stored_files import store_upload
from site_platform.errors import StorageUnavailable

BUCKET_ENV = {
    "S3_BUCKET": "leaderboard-files",
    "S3_ENDPOINT_URL": "http://objects.internal:9000",
    "S3_REGION": "eu-west-1",
    "S3_ACCESS_KEY_ID": "key-id",
    "S3_SECRET_ACCESS_KEY": "secret",
    "S3_PREFIX": "/prod/",
}


@pytest.mark.parametrize("env", [{}, {"S3_BUCKET": " "}])
def test_without_a_bucket_files_stay_on_the_filesystem(env: dict[str, str]) -> None:
    assert storage_config_from_env(env) == {
        "BACKEND": "django.core.files.storage.FileSystemStorage"
    }


def test_a_bucket_puts_them_in_the_object_store() -> None:
    config = storage_config_from_env(BUCKET_ENV)
    assert config["BACKEND"] == "config.storage.ObjectStorage"
    storage = ObjectStorage(**config["OPTIONS"])  # no request is made before a file is used
    assert (storage.bucket_name, storage.location) == ("leaderboard-files", "prod")
    assert storage.endpoint_url == "http://objects.internal:9000"
    assert storage.region_name == "eu-west-1"
    assert (storage.access_key, storage.secret_key) == ("key-id", "secret")
    assert storage.client_config.s3 == {"addressing_style": "path"}
    # Never replaces a stored file, never public.
    assert storage.file_overwrite is False and storage.default_acl is None


def test_without_keys_boto3_finds_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_S3_ACCESS_KEY_ID", "from-the-environment")
    env = {"S3_BUCKET": "leaderboard-files"}
    options = storage_config_from_env(env)["OPTIONS"]
    assert "access_key" not in options and "endpoint_url" not in options
    storage = ObjectStorage(**options)
    assert storage.access_key == "from-the-environment"
    assert storage.client_config.s3 == {"addressing_style": "auto"}


def test_the_tests_use_the_filesystem_whatever_the_environment_says() -> None:
    assert settings.STORAGES["default"]["BACKEND"].endswith("FileSystemStorage")


def test_an_object_store_that_is_down_is_an_os_error_never_a_missing_file(
    unreachable_object_store,
) -> None:
    with pytest.raises(StorageUnavailable) as refused:
        store_upload(io.BytesIO(b"k\t1\n"), name="received-runs/7/c.upload", max_bytes=10)
    assert refused.value.http_status == 503 and refused.value.headers == {"Retry-After": "5"}
    assert isinstance(refused.value.__cause__, ObjectStoreError)
    with pytest.raises(ObjectStoreError) as failed:  # not FileNotFoundError: not "lost"
        default_storage.open("received-runs/7/c.upload", "rb")
    assert not isinstance(failed.value, FileNotFoundError)
    with pytest.raises(OSError):
        default_storage.delete("received-runs/7/c.upload")


# --- against a real S3-compatible server ---------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_stored_file_streams_back_and_is_deleted(s3_bucket) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    name, received = store_upload(
        io.BytesIO(data), name="received-runs/7/a.upload", max_bytes=len(data), inflate=False
    )
    assert name == "received-runs/7/a.upload" and received.n_bytes == len(data)
    assert s3_bucket.keys() == [name] and s3_bucket.read(name) == data

    with default_storage.open(name, "rb") as stream:
        assert isinstance(stream, StreamedObject) and not stream.seekable()
        assert stream.size == len(data)
        chunks = iter(lambda: stream.read(1024 * 1024), b"")
        assert b"".join(chunks) == data

    # A second file under the same name never replaces the first.
    again, _ = store_upload(io.BytesIO(b"other"), name=name, max_bytes=10, inflate=False)
    assert again != name and s3_bucket.read(name) == data

    default_storage.delete(name)
    default_storage.delete(again)
    assert s3_bucket.keys() == []
    with pytest.raises(FileNotFoundError):
        default_storage.open(name, "rb")
    default_storage.delete(name)  # deleting twice is no error (retried clean-ups)


@pytest.mark.timeout(120)
def test_an_upload_over_its_limit_leaves_nothing_in_the_bucket(s3_bucket) -> None:
    # Larger than boto3's multipart threshold (8 MiB): the limit is passed mid-way through a
    # multipart upload, which must be abandoned, not completed with what was read.
    data = b"k\t0.5\n" * (3 * 1024 * 1024)
    with pytest.raises(UploadRejected) as refused:
        store_upload(io.BytesIO(data), name="received-runs/7/b.upload", max_bytes=12 * 2**20)
    assert refused.value.code == "too_large"
    assert s3_bucket.keys() == []
    pending = s3_bucket.client.list_multipart_uploads(Bucket=s3_bucket.name)
    assert pending.get("Uploads", []) == []
