"""Test support for organizers' uploads (gold, pool, reference files), which a worker loads.

A test's transaction never commits, so the message the upload enqueues on commit is never sent:
:func:`load_received` loads what waits, here and now, with the worker's own service, and
:func:`loaded` does it for the upload an API response received and returns its ``GET`` body.
"""

from __future__ import annotations

from annotation.services import load_organizer_upload
from leaderboard.models import OrganizerUpload, Task


def load_received(task: Task | None = None) -> list[OrganizerUpload]:
    """Load every upload (of ``task``) still waiting, oldest first, as the worker would."""
    waiting = OrganizerUpload.objects.filter(
        state__in=(OrganizerUpload.State.RECEIVED, OrganizerUpload.State.PARSING)
    )
    if task is not None:
        waiting = waiting.filter(task=task)
    ids = list(waiting.order_by("pk").values_list("pk", flat=True))
    for upload_id in ids:
        load_organizer_upload(upload_id)
    return list(OrganizerUpload.objects.filter(pk__in=ids).order_by("pk"))


def loaded(client, response) -> dict:
    """The upload an API ``response`` received (``202``), loaded; its ``GET`` body."""
    assert response.status_code == 202, response.content
    load_organizer_upload(response.json()["id"])
    body = client.get(response["Location"])
    assert body.status_code == 200, body.content
    return body.json()
