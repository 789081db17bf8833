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

import gzip
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, cast

from django.db import IntegrityError, transaction
from django.db.models import IntegerField
from django.utils import timezone

from leaderboard.ingestion import SNIFF_BYTES, Problem, sniff_head
from leaderboard.ingestion.fields import _shown
from leaderboard.ingestion.reading import _GZIP_MAGIC as GZIP_MAGIC
from leaderboard.models import Item, Task
from leaderboard.selectors import is_organizer
from leaderboard.services.reference_candidates import recheck_reference_sample
from leaderboard.services.runs import check_size
from site_platform.errors import ServiceError
from site_platform.prepared import PreparedQuery, Slot

from ..models import AnnotatorPause, Assignment, GoldAnswer, GoldItem
from .errors import JudgmentError
from .judgments import lock_annotator, revoke_leases

if TYPE_CHECKING:
    from django.contrib.auth.models import User

GOLD_ANSWERS = {"correct": True, "incorrect": False}


GOLD_MAX_PROBLEMS = 50  # problems kept of a refused file (all are counted)
LOOKUP_CHUNK = 500  # keys per ``key IN (...)`` query (well under every backend's limit)


class GoldFileError(ServiceError):
    """A gold file with problems, each with its line (``problems``: the first
    :data:`GOLD_MAX_PROBLEMS`; ``total`` counts them all); ``errors`` are the same as text
    (``line 4: ...``), for the command line."""

    code = "rejected"

    def __init__(
        self,
        problems: Iterable[Problem] | Iterable[str],
        *,
        code: str = "rejected",
        total: int = 0,
    ):
        found = [p if isinstance(p, Problem) else Problem(None, p) for p in problems]
        self.errors = [str(p) for p in found]
        total = max(total, len(found))
        if code == "wrong_format" or total == 1:
            message = "\n".join(self.errors)
        else:
            message = f"rejected: {total:,} problems (first: {self.errors[0]})"
        super().__init__(message, problems=found, code=code, total=total)


@dataclass(frozen=True)
class GoldLoad:
    created: int
    updated: int
    unchanged: int


@dataclass(frozen=True)
class GoldLines:
    """A gold file read line by line: the known answer of each key and the line that gave it,
    and the first problems of its lines (``n_problems`` counts them all)."""

    wanted: dict[str, bool]
    lines: dict[str, int]
    problems: list[Problem]
    n_problems: int


def read_gold_lines(lines: Iterable[str]) -> GoldLines:
    """Check ``key<TAB>correct|incorrect`` lines (blank lines and ``#`` comments skipped): a bad
    answer, a key twice, a NUL byte are problems with their line; keys are not looked up."""
    problems: list[Problem] = []
    n_problems = 0
    wanted: dict[str, bool] = {}  # key -> the known answer
    seen: dict[str, int] = {}  # key -> line number
    for number, raw in enumerate(lines, start=1):
        problem = None
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("\t")
        if "\x00" in line:  # no database can hold it in a key
            problem = "contains a NUL byte"
        elif len(parts) != 2:
            problem = f"expected key<TAB>correct|incorrect, got {len(parts)} field(s)"
        elif not parts[0].strip():
            problem = "empty key"
        elif parts[1].strip().lower() not in GOLD_ANSWERS:
            problem = f"answer must be 'correct' or 'incorrect', got {_shown(parts[1])}"
        elif parts[0] in seen:
            problem = f"key {_shown(parts[0])} already given on line {seen[parts[0]]}"
        if problem is not None:
            n_problems += 1
            if len(problems) < GOLD_MAX_PROBLEMS:
                problems.append(Problem(number, problem))
            continue
        seen[parts[0]] = number
        wanted[parts[0]] = GOLD_ANSWERS[parts[1].strip().lower()]
    return GoldLines(wanted=wanted, lines=seen, problems=problems, n_problems=n_problems)


def _item_ids(task: Task, keys: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(keys), LOOKUP_CHUNK):
        chunk = keys[start : start + LOOKUP_CHUNK]
        found.update(Item.objects.filter(task=task, key__in=chunk).values_list("key", "pk"))
    return found


def store_gold(*, task: Task, gold: GoldLines) -> GoldLoad:
    """Load read gold lines as gold items of ``task`` (all or nothing): a key with no item of
    the task is a problem of its line, and any problem raises :class:`GoldFileError` with the
    first ones by line. A key loaded earlier with another answer gets the new answer."""
    items = _item_ids(task, list(gold.wanted))
    unknown = [
        Problem(gold.lines[key], f"no item with key {_shown(key)} in task {task.slug}")
        for key in gold.wanted
        if key not in items
    ]
    total = gold.n_problems + len(unknown)
    if total:
        first = sorted([*gold.problems, *unknown[:GOLD_MAX_PROBLEMS]], key=lambda p: p.line or 0)
        raise GoldFileError(first[:GOLD_MAX_PROBLEMS], total=total)
    created = updated = unchanged = 0
    with transaction.atomic():
        ids = list(items.values())
        existing = {
            g.item_id: g
            for start in range(0, len(ids), LOOKUP_CHUNK)
            for g in GoldItem.objects.filter(
                task=task, item_id__in=ids[start : start + LOOKUP_CHUNK]
            )
        }
        new = []
        for key, known in gold.wanted.items():
            current = existing.get(items[key])
            if current is None:
                new.append(GoldItem(task=task, item_id=items[key], answer=known))
            elif current.answer != known:
                GoldItem.objects.filter(pk=current.pk).update(answer=known)
                updated += 1
            else:
                unchanged += 1
        GoldItem.objects.bulk_create(new, batch_size=2000)
        created = len(new)
        if created or updated:
            # A known answer on a reference candidate settles its label.
            recheck_reference_sample(task)
    return GoldLoad(created=created, updated=updated, unchanged=unchanged)


def load_gold(*, task: Task, lines: Iterable[str]) -> GoldLoad:
    """Load ``key<TAB>correct|incorrect`` lines as gold items of ``task`` (all or nothing).

    Blank lines and lines starting with ``#`` are skipped. Every problem is counted and the
    first ones reported with their line numbers (unknown key, bad answer, a key twice). Loading
    the same file again changes nothing; a key loaded earlier with another answer gets the new
    answer.
    """
    return store_gold(task=task, gold=read_gold_lines(lines))


def read_gold(upload: IO[bytes]) -> GoldLines:
    """Read an uploaded gold file: UTF-8 text (a BOM is skipped; gzip data is read
    decompressed) of ``key<TAB>correct|incorrect`` lines. A file in the wrong format (CSV, a
    header line, UTF-16) raises :class:`GoldFileError` (``wrong_format``) with one hint, a line
    that is not UTF-8 or corrupt gzip data ``rejected``."""
    seekable = getattr(upload, "seekable", None)
    if callable(seekable) and seekable():
        upload.seek(0)
        if upload.read(len(GZIP_MAGIC)) == GZIP_MAGIC:
            upload.seek(0)
            upload = cast(IO[bytes], gzip.GzipFile(fileobj=upload, mode="rb"))
        upload.seek(0)
        # A file in the wrong format (CSV, a header line, UTF-16) gets one hint, not a problem
        # on every line: the uploads' one sniffer, on the file's head.
        try:
            head = upload.read(SNIFF_BYTES)
        except (OSError, EOFError, zlib.error):
            head = b""  # corrupt gzip data: said below, with its line
        problem = sniff_head(
            head,
            kind="gold",
            file_name=getattr(upload, "name", "") or "",
            complete=len(head) < SNIFF_BYTES,
        )
        if problem is not None:
            raise GoldFileError([problem], code="wrong_format")
        upload.seek(0)
    return read_gold_lines(_text_lines(upload))


def upload_gold(*, task: Task, upload: IO[bytes]) -> GoldLoad:
    """Load the gold items of an uploaded file here and now (the command line, tests; web
    requests go through ``leaderboard.services.organizer_uploads``), all or nothing as
    :func:`load_gold`.

    Permission (organizers of the task) is checked by the caller. Raises
    :class:`~leaderboard.services.runs.SubmissionError` (``too_large``) for a file over the
    task's upload limit and :class:`GoldFileError` for a file with problems (a line that is not
    UTF-8 among them; ``wrong_format`` with one hint for CSV, a header line, UTF-16); nothing is
    stored then.
    """
    check_size(task=task, size=getattr(upload, "size", None))
    return store_gold(task=task, gold=read_gold(upload))


def _text_lines(upload: IO[bytes]) -> Iterator[str]:
    number = 0
    try:
        for number, raw in enumerate(upload, start=1):  # number: read after the loop too
            try:
                yield raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise GoldFileError(
                    [Problem(number, f"is not UTF-8 text (byte {exc.start + 1} of the line)")]
                ) from None
    except (OSError, EOFError, zlib.error):  # gzip data cut short or corrupt
        raise GoldFileError(
            [Problem(number + 1, "the gzip data is corrupt or cut short here")]
        ) from None


def open_pause(*, task: Task, annotator: User) -> AnnotatorPause | None:
    """The annotator's open pause on the task (every claim and answer asks: compiled once)."""
    found = _OPEN_PAUSE.instances(task=task.pk, annotator=annotator.pk)
    return cast(AnnotatorPause, found[0]) if found else None


_OPEN_PAUSE = PreparedQuery(
    lambda: AnnotatorPause.objects.filter(
        task_id=Slot("task", IntegerField()),
        annotator_id=Slot("annotator", IntegerField()),
        lifted_at=None,
    ).order_by("pk")[:1]
)


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
            revoke_leases(Assignment.objects.filter(task=task, annotator=annotator))
            return pause
    except IntegrityError:
        return open_pause(task=task, annotator=annotator)


def unpause_annotator(*, task: Task, annotator: User, by: User | None = None) -> bool:
    """Lift ``annotator``'s pause (an organizer's decision); returns whether one was open.

    Their accuracy is judged afresh on gold answers given after this moment.
    """
    if by is not None and not is_organizer(task=task, user=by):
        raise JudgmentError("only an organizer of the task may lift a pause", code="not_organizer")
    lifted = bool(
        AnnotatorPause.objects.filter(task=task, annotator=annotator, lifted_at=None).update(
            lifted_at=timezone.now(), lifted_by=by
        )
    )
    if lifted:
        recheck_reference_sample(task)  # its doubtful candidates may get their looks now
    return lifted
