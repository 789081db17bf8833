"""Gold items and the pauses they lead to.

Organizers load gold items (items with a known answer) from a file; the queue mixes them in at
``task.gold_rate``. A gold item's label is its known answer; the answers annotators give on it
measure them: the engine's annotator model fits each one's sensitivity and specificity to them,
and this module pauses the inaccurate. An annotator with at least ``task.gold_min_answers`` gold
answers (since their last pause was lifted) and an accuracy below ``task.gold_min_accuracy`` is
paused for the task until an organizer lifts the pause. "Can't tell" on a gold item is neither
right nor wrong: it is left out of the accuracy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.errors import ServiceError
from leaderboard.models import Item, Task
from leaderboard.selectors import is_organizer

from ..models import AnnotatorPause, Assignment, GoldAnswer, GoldItem
from .errors import JudgmentError
from .judgments import lock_annotator

if TYPE_CHECKING:
    from django.contrib.auth.models import User

GOLD_ANSWERS = {"correct": True, "incorrect": False}


class GoldFileError(ServiceError):
    """A gold file with problems; ``errors`` lists them with their line numbers."""

    code = "rejected"

    def __init__(self, errors: list[str]):
        super().__init__(
            "\n".join(errors), problems=[{"line": None, "message": error} for error in errors]
        )
        self.errors = errors


@dataclass(frozen=True)
class GoldLoad:
    created: int
    updated: int
    unchanged: int


def load_gold(*, task: Task, lines: Iterable[str]) -> GoldLoad:
    """Load ``key<TAB>correct|incorrect`` lines as gold items of ``task`` (all or nothing).

    Blank lines and lines starting with ``#`` are skipped. Every problem is reported with its
    line number (unknown key, bad answer, a key twice). Loading the same file again changes
    nothing; a key loaded earlier with another answer gets the new answer.
    """
    errors: list[str] = []
    wanted: dict[str, bool] = {}  # key -> the known answer
    seen: dict[str, int] = {}  # key -> line number
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            errors.append(
                f"line {number}: expected key<TAB>correct|incorrect, got {len(parts)} field(s)"
            )
            continue
        key, answer = parts[0], parts[1].strip().lower()
        if not key.strip():
            errors.append(f"line {number}: empty key")
            continue
        if answer not in GOLD_ANSWERS:
            errors.append(
                f"line {number}: answer must be 'correct' or 'incorrect', got {parts[1]!r}"
            )
            continue
        if key in seen:
            errors.append(f"line {number}: key {key!r} already given on line {seen[key]}")
            continue
        seen[key] = number
        wanted[key] = GOLD_ANSWERS[answer]
    items = dict(Item.objects.filter(task=task, key__in=list(wanted)).values_list("key", "pk"))
    errors.extend(
        f"line {seen[key]}: no item with key {key!r} in task {task.slug}"
        for key in wanted
        if key not in items
    )
    if errors:
        raise GoldFileError(sorted(errors, key=lambda e: int(e.split(":")[0].split()[1])))
    created = updated = unchanged = 0
    with transaction.atomic():
        existing = {
            g.item_id: g for g in GoldItem.objects.filter(task=task, item_id__in=items.values())
        }
        new = []
        for key, known in wanted.items():
            gold = existing.get(items[key])
            if gold is None:
                new.append(GoldItem(task=task, item_id=items[key], answer=known))
            elif gold.answer != known:
                GoldItem.objects.filter(pk=gold.pk).update(answer=known)
                updated += 1
            else:
                unchanged += 1
        GoldItem.objects.bulk_create(new, batch_size=2000)
        created = len(new)
    return GoldLoad(created=created, updated=updated, unchanged=unchanged)


def open_pause(*, task: Task, annotator: User) -> AnnotatorPause | None:
    return AnnotatorPause.objects.filter(task=task, annotator=annotator, lifted_at=None).first()


def gold_record(*, task: Task, annotator: User) -> tuple[int, int]:
    """(gold answers judged right, gold answers with a verdict) since the last lifted pause."""
    since = (
        AnnotatorPause.objects.filter(task=task, annotator=annotator)
        .exclude(lifted_at=None)
        .order_by("-lifted_at")
        .values_list("lifted_at", flat=True)
        .first()
    )
    answers = GoldAnswer.objects.filter(
        gold__task=task, annotator=annotator, withdrawn_at=None, correct__isnull=False, late=False
    )
    if since is not None:
        answers = answers.filter(created_at__gt=since)
    verdicts = cast("list[bool]", list(answers.values_list("correct", flat=True)))  # not null
    return sum(verdicts), len(verdicts)


def evaluate_pause(*, task: Task, annotator: User) -> AnnotatorPause | None:
    """Pause ``annotator`` if their gold accuracy is judged and too low; returns the pause."""
    right, total = gold_record(task=task, annotator=annotator)
    if total < max(1, task.gold_min_answers) or right / total >= task.gold_min_accuracy:
        return None
    reason = (
        f"gold accuracy {right / total:.2f} over {total} gold answers is below "
        f"{task.gold_min_accuracy:.2f}"
    )
    return pause_annotator(task=task, annotator=annotator, reason=reason)


def pause_annotator(*, task: Task, annotator: User, reason: str) -> AnnotatorPause | None:
    """Pause ``annotator`` for ``task`` (idempotent: an open pause is kept as it is) and revoke
    their leases on it: answers given on them later are kept but never counted.

    Returns the open pause: ``None`` only if a concurrent pause won the race and was lifted
    before it could be read."""
    existing = open_pause(task=task, annotator=annotator)
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            # After their claims and answers in flight, before any that follow.
            lock_annotator(task.pk, annotator.pk)
            pause = AnnotatorPause.objects.create(
                task=task, annotator=annotator, reason=reason[:300]
            )
            Assignment.objects.filter(
                task=task, annotator=annotator, state=Assignment.State.ACTIVE
            ).update(state=Assignment.State.REVOKED)
            return pause
    except IntegrityError:
        return open_pause(task=task, annotator=annotator)


def unpause_annotator(*, task: Task, annotator: User, by: User | None = None) -> bool:
    """Lift ``annotator``'s pause (an organizer's decision); returns whether one was open.

    Their accuracy is judged afresh on gold answers given after this moment.
    """
    if by is not None and not is_organizer(task=task, user=by):
        raise JudgmentError("only an organizer of the task may lift a pause", "not_organizer")
    return bool(
        AnnotatorPause.objects.filter(task=task, annotator=annotator, lifted_at=None).update(
            lifted_at=timezone.now(), lifted_by=by
        )
    )
