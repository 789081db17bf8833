"""The worker's loading of an organizer's upload, every kind: the leaderboard app's loaders
(pool, reference sample, reference candidates) and this app's gold items
(``leaderboard.services.organizer_uploads`` has the state machine)."""

from __future__ import annotations

from typing import IO

from leaderboard.models import OrganizerUpload
from leaderboard.services.organizer_uploads import UPLOAD_LOADERS, Loader, Store, load_upload

from .gold import read_gold, store_gold


def _load_gold(upload: OrganizerUpload, stream: IO[bytes], _: IO[bytes] | None) -> Store:
    task = upload.task
    gold = read_gold(stream)

    def store() -> dict[str, int]:
        loaded = store_gold(task=task, gold=gold)
        return {"created": loaded.created, "updated": loaded.updated, "unchanged": loaded.unchanged}

    return store


LOADERS: dict[str, Loader] = {**UPLOAD_LOADERS, OrganizerUpload.Kind.GOLD: _load_gold}


def load_organizer_upload(upload_id: int) -> str:
    """Load organizer upload ``upload_id`` whatever its kind (a worker's job; safe to repeat);
    returns its state."""
    return load_upload(upload_id, loaders=LOADERS)
