"""Writes of the public board: hold it, publish snapshots, and edit a run's public details.

Snapshots are immutable once written; the only change a snapshot ever sees is going from held
(``published=False``) to published. The public board shows the latest published snapshot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from ..errors import InvalidFields
from ..models import LeaderboardSnapshot, Run, Task

if TYPE_CHECKING:
    from django.db.models import Field

RUN_DETAIL_FIELDS = ("name", "description", "link")


class RunDetailsError(InvalidFields):
    """Run details that cannot be accepted; ``field_errors`` maps a field to its messages."""


def hold_board(*, task: Task) -> Task:
    """Hold the public board: snapshots written from now on wait until :func:`publish_board`."""
    Task.objects.filter(pk=task.pk).update(board_held=True)
    task.board_held = True
    return task


def publish_board(*, task: Task, release_hold: bool = True) -> LeaderboardSnapshot | None:
    """Publish every held snapshot of ``task`` (the latest becomes the public board).

    With ``release_hold`` (the default) later snapshots are published as they are written;
    without it the board stays held and this is a one-off publication. Idempotent. Returns the
    latest snapshot, or ``None`` when the task has none yet.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Task.objects.select_for_update().get(pk=task.pk)
        if release_hold and locked.board_held:
            Task.objects.filter(pk=task.pk).update(board_held=False)
        LeaderboardSnapshot.objects.filter(task=task, published=False).update(
            published=True, published_at=now
        )
    task.board_held = False if release_hold else task.board_held
    return task.snapshots.order_by("-version").first()


def snapshot_publication(task: Task) -> dict[str, Any]:
    """How a snapshot written now for ``task`` is stored: published unless the board is held."""
    held = Task.objects.filter(pk=task.pk).values_list("board_held", flat=True).first()
    if held:
        return {"published": False, "published_at": None}
    return {"published": True, "published_at": timezone.now()}


def update_run_details(*, run: Run, **fields: Any) -> Run:
    """Change a run's public name, description or link (validated; nothing else is editable)."""
    unknown = sorted(set(fields) - set(RUN_DETAIL_FIELDS))
    if unknown:
        raise RunDetailsError(
            f"not editable: {', '.join(unknown)}", {name: ["cannot be changed"] for name in unknown}
        )
    errors: dict[str, list[str]] = {}
    cleaned = {}
    for name, value in fields.items():
        value = "" if value is None else str(value).strip()
        max_length = cast("Field[Any, Any]", Run._meta.get_field(name)).max_length
        if name == "name" and not value:
            errors.setdefault(name, []).append("a run needs a name")
        if max_length and len(value) > max_length:
            errors.setdefault(name, []).append(f"at most {max_length} characters")
        if name == "description" and len(value) > 5000:
            errors.setdefault(name, []).append("at most 5000 characters")
        if name == "link" and value:
            try:
                URLValidator(schemes=["http", "https"])(value)
            except ValidationError:
                errors.setdefault(name, []).append("must be an http or https URL")
        cleaned[name] = value
    if errors:
        summary = "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items())
        raise RunDetailsError(f"invalid run details ({summary})", errors)
    for name, value in cleaned.items():
        setattr(run, name, value)
    if cleaned:
        run.save(update_fields=list(cleaned))
    return run
