"""Submitting runs: who may submit what, receiving the upload, and handing it to a worker.

A web request never parses a run: it copies the file to storage (hashing it, with its size and
decompressed size enforced as it streams), then one short transaction locks the task row,
re-checks its state, refuses a file the team already submitted and checks the quota, and records
the run ``received``. A worker validates and stores it (``services.ingest``). A received run
counts against the quota until it is rejected (rejected runs never count).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, TypeVar, cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from site_platform.errors import ServiceError

from .. import jobs, phases
from ..email_domains import matches, parse_domains
from ..ingestion import Problem, Receiver, UploadRejected, human_bytes
from ..kinds import kind_for
from ..models import Run, Task, Team
from ..selectors import (
    Quota,
    annotator_conflicts,
    check_verified_email,
    counted_runs,
    quota_for,
    team_approved,
    teams_of,
    terms_accepted,
    upload_limits,
    verified_email_domains,
)
from .lifecycle import transition_run
from .run_names import MAX_NAME_LENGTH, default_name
from .stored_files import forget_stored, store_upload

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# CharFields: their max_length is set.
MAX_FILE_NAME_LENGTH = cast(int, Run._meta.get_field("file_name").max_length)


class SubmissionError(ServiceError):
    """An upload that was refused; ``code`` says why, ``message`` says it to a person.

    Codes: ``task_closed``, ``no_pool`` (a closed pool whose pool is not uploaded yet),
    ``not_open_yet`` (before the task's submission window),
    ``deadline_passed`` (after it, when the task refuses late runs), ``not_team_member``,
    ``email_domain_blocked`` and ``email_domain_not_allowed`` (the task's email domain policy),
    ``team_not_approved``, ``terms_not_accepted`` (the team has not accepted the task's current
    terms), ``annotator_in_team`` (a member annotates the task, which does not
    allow it), ``over_quota``, ``rejected`` (problems in the file, by line),
    ``too_large``, ``duplicate`` (the team already submitted this file), ``invalid`` (a bad
    request field), ``missing_file``, ``throttled`` (the pages' upload throttle),
    ``wrong_format`` (the file's first lines show CSV, a header line, UTF-16 or UTF-32, or a
    space for a tab: one problem, with its line and what to do). ``run`` is the ``rejected``
    run recorded for a refused file, or for ``duplicate`` the run that has the file.
    """

    statuses = {
        "not_team_member": 403,
        "email_domain_blocked": 403,
        "email_domain_not_allowed": 403,
        "team_not_approved": 403,
        "terms_not_accepted": 403,
        "annotator_in_team": 409,
        "task_closed": 409,
        "no_pool": 409,
        "not_open_yet": 409,
        "deadline_passed": 409,
        "duplicate": 409,
        "too_large": 413,
        "over_quota": 429,
        "throttled": 429,
    }

    def __init__(
        self,
        message: str,
        *,
        code: str,
        problems: list[Problem] | None = None,
        total: int = 0,
        run: Run | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(
            message,
            code=code,
            problems=problems or (),
            total=total,
            headers=headers,
            run=run.pk if run is not None else None,
        )
        self.run = run


def upload_limit(task: Task) -> int:
    """The most bytes (decompressed) an upload to ``task`` may have."""
    return upload_limits(task).max_bytes


# A file has one line per record (a prediction, a pool key, ...); only blank lines at its end may
# come on top (an editor's, a script's), so a file with more lines than the task's records plus
# these is refused as it is received, not after a worker read it: all that stops is one with more
# than this many blank lines at its end, which nobody needs.
TRAILING_BLANK_LINES = 1_000


def line_limit(task: Task) -> tuple[int, str]:
    """The most lines a run (or an organizer's file) of ``task`` may have, and why: its
    ``max_predictions_per_run`` (a closed pool's run scores every pool item, however many),
    plus :data:`TRAILING_BLANK_LINES`."""
    records = kind_for(task).records_per_run(task)
    why = (
        f" (task {task.slug!r} takes at most {records:,} predictions or keys per file, one per "
        f"line, and up to {TRAILING_BLANK_LINES:,} blank lines at its end)"
    )
    return records + TRAILING_BLANK_LINES, why


def check_size(*, task: Task, size: int | None) -> None:
    """Refuse an upload whose size (as received) is already over the task's limit."""
    limit = upload_limit(task)
    if size is not None and size > limit:
        raise SubmissionError(
            f"the file is {human_bytes(size)}, over the limit "
            f"of {human_bytes(limit)} for task {task.slug!r}",
            code="too_large",
        )


ParsedT = TypeVar("ParsedT")


def parse_task_file(
    task: Task, upload: IO[bytes], file_name: str, parser: Callable[..., ParsedT]
) -> ParsedT:
    """``parser``'s reading of an organizer's upload to ``task`` under the task's limits (bytes,
    items), the name from ``file_name`` or the file's own; a refused file raises
    :class:`SubmissionError` (``too_large``, or ``rejected`` with its problems by line)."""
    check_size(task=task, size=getattr(upload, "size", None))
    _rewind(upload)
    try:
        return parser(
            upload,
            file_name=os.path.basename(file_name or getattr(upload, "name", "") or ""),
            max_bytes=upload_limit(task),
            max_items=task.max_predictions_per_run,
        )
    except UploadRejected as exc:
        raise SubmissionError(
            exc.summary, code=exc.code, problems=exc.problems, total=exc.total
        ) from None


def check_open(task: Task, now: datetime | None = None) -> None:
    """Refuse a run the task does not take at ``now``: it is not open, its kind refuses runs
    now (a closed pool without its pool), its submission window has not started, or its deadline
    has passed and it refuses late runs."""
    if task.state != Task.State.OPEN:
        state = "still a draft" if task.state == Task.State.DRAFT else task.state
        raise SubmissionError(
            f"task {task.slug!r} is {state}: it accepts runs only while it is open",
            code="task_closed",
        )
    refused = kind_for(task).runs_refused(task)
    if refused is not None:
        code, message = refused
        raise SubmissionError(message, code=code)
    now = now or timezone.now()
    phase = phases.submission_phase(task, now)
    if phase == "not_open":
        opens = task.submissions_open_at
        assert opens is not None  # "not_open" means a start time is set
        raise SubmissionError(
            f"task {task.slug!r} accepts runs from {_utc(opens)} (in {_in(opens, now)}); "
            "nothing was stored or counted",
            code="not_open_yet",
        )
    if phase == "after_deadline" and not task.accept_late_runs:
        closes = task.submissions_close_at
        assert closes is not None  # "after_deadline" means a deadline is set
        raise SubmissionError(
            f"the submission window of task {task.slug!r} closed at {_utc(closes)} and its "
            "organizers accept no runs after the deadline; nothing was stored or counted",
            code="deadline_passed",
        )


def _utc(moment: datetime) -> str:
    return f"{timezone.localtime(moment, UTC):%Y-%m-%d %H:%M} UTC"


def check_member(*, team: Team, user: User) -> None:
    if not team.members.filter(pk=user.pk).exists():
        raise SubmissionError(f"you are not a member of team {team.name!r}", code="not_team_member")


def check_approved(*, task: Task, team: Team) -> None:
    """Refuse a team an organizer has not approved, on a task that needs approval."""
    if not team_approved(task=task, team=team):
        raise SubmissionError(
            f"team {team.name!r} is not approved for task {task.slug!r} yet: ask to take part "
            "on the task's submit page, and an organizer approves",
            code="team_not_approved",
        )


def check_terms(*, task: Task, team: Team) -> None:
    """Refuse a team that has not accepted the task's current terms (if it has terms)."""
    if not terms_accepted(task=task, team=team):
        raise SubmissionError(
            f"team {team.name!r} has not accepted the current terms of task {task.slug!r}: a "
            f"member accepts them on the task's submit page (/tasks/{task.slug}/submit/) or "
            "through the API (POST /api/tasks/<slug>/terms/); nothing was stored or counted",
            code="terms_not_accepted",
        )


def check_no_annotator(*, task: Task, team: Team) -> None:
    """Refuse a team with a member who annotates the task, unless the task allows it
    (``Task.annotators_may_compete``)."""
    conflicts = annotator_conflicts(task=task, team=team)
    if conflicts:
        names = ", ".join(c.user.get_username() for c in conflicts)
        raise SubmissionError(
            f"team {team.name!r} has a member who annotates task {task.slug!r} ({names}): a "
            "person may not both annotate a task and compete in it (its organizers may allow "
            "it)",
            code="annotator_in_team",
        )


def check_email_domain(*, task: Task, user: User) -> None:
    """Refuse ``user`` if the task's email domain policy shuts them out (their verified
    addresses' domains: one blocked, or none allowed)."""
    allowed = parse_domains(task.allowed_email_domains)
    blocked = parse_domains(task.blocked_email_domains)
    if not allowed and not blocked:
        return
    domains = sorted(verified_email_domains(user))
    for domain in domains:
        if matches(domain, blocked):
            raise SubmissionError(
                f"people with an email address at {domain} may not submit to task {task.slug!r}",
                code="email_domain_blocked",
            )
    if allowed and not any(matches(domain, allowed) for domain in domains):
        raise SubmissionError(
            f"task {task.slug!r} takes runs only from people with a verified email address at "
            f"{', '.join(allowed)}",
            code="email_domain_not_allowed",
        )


def _in(moment: datetime, now: datetime) -> str:
    minutes = max(1, round((moment - now).total_seconds() / 60))
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def check_quota(*, task: Task, team: Team, now: datetime | None = None) -> Quota:
    now = now or timezone.now()
    quota = quota_for(task=task, team=team, now=now)
    if quota.total_exhausted:
        raise SubmissionError(
            f"team {team.name!r} has used all {quota.limit_total} runs allowed per team on task "
            f"{task.slug!r} (rejected and failed runs do not count)",
            code="over_quota",
        )
    if quota.daily_exhausted:
        when = ""
        if quota.next_slot_at is not None:
            when = (
                f"; the next slot frees up at {quota.next_slot_at:%Y-%m-%d %H:%M} UTC (in "
                f"{_in(quota.next_slot_at, now)})"
            )
        raise SubmissionError(
            f"team {team.name!r} has submitted {quota.used_today} runs to task {task.slug!r} in "
            f"the last 24 hours, the limit is {quota.limit_today} per day{when}",
            code="over_quota",
        )
    return quota


def resolve_team(*, user: User, team: str | int | None = None) -> Team:
    """The team ``user`` submits for: ``team`` (an id or a name), or their only team."""
    teams = list(teams_of(user))
    if team not in (None, ""):
        ref = str(team).strip()
        for candidate in teams:
            if candidate.name == ref or (ref.isdigit() and candidate.pk == int(ref)):
                return candidate
        known = Team.objects.filter(name=ref).exists() or (
            ref.isdigit() and Team.objects.filter(pk=int(ref)).exists()
        )
        if known:
            raise SubmissionError(f"you are not a member of team {ref!r}", code="not_team_member")
        raise SubmissionError(f"there is no team {ref!r}", code="invalid")
    if not teams:
        raise SubmissionError(
            "you are in no team: make one (/teams/) or join one by an invitation link",
            code="not_team_member",
        )
    if len(teams) > 1:
        names = ", ".join(repr(t.name) for t in teams)
        raise SubmissionError(
            f"you are in several teams ({names}): say which one "
            "the run is for with the `team` field",
            code="invalid",
        )
    return teams[0]


def _clean_name(name: str) -> str:
    name = (name or "").strip()
    if len(name) > MAX_NAME_LENGTH:
        raise SubmissionError(
            f"the run name is longer than {MAX_NAME_LENGTH} characters", code="invalid"
        )
    return name


def _rewind(upload: IO[bytes]) -> None:
    seekable = getattr(upload, "seekable", None)
    if callable(seekable) and seekable():
        upload.seek(0)


def check_duplicate(*, task: Task, team: Team, sha256: str) -> None:
    """Refuse a file the team already submitted to the task (a run that counts or is pending)."""
    first = counted_runs(task=task, team=team).filter(sha256=sha256).order_by("pk").first()
    if first is not None:
        raise SubmissionError(
            f"this file was already submitted as run {first.pk} ({first.name!r}, "
            f"{first.state}): the same content is not evaluated twice, and nothing "
            "was stored or counted",
            code="duplicate",
            run=first,
        )


def store_task_upload(
    upload: IO[bytes],
    *,
    task: Task,
    directory: str,
    kind: str,
    file_name: str,
    min_lines: int = 0,
    max_line_bytes: int | None = None,
) -> tuple[str, Receiver]:
    """Copy an upload to ``task`` (a run, an organizer's file) to storage under ``directory``
    through a :class:`Receiver`, which refuses it past the task's upload limit, its line limit
    (:func:`line_limit`, or ``min_lines`` if more), a line over ``max_line_bytes``, or when its
    head shows the wrong format for ``kind``; return the stored name and the receiver."""
    max_lines, lines_why = line_limit(task)
    if max_lines < min_lines:
        max_lines, lines_why = min_lines, ""
    return store_upload(
        upload,
        name=f"{directory}/{task.pk}/{uuid.uuid4().hex}.upload",
        max_bytes=upload_limit(task),
        kind=kind,
        file_name=file_name,
        max_lines=max_lines,
        max_line_bytes=max_line_bytes,
        lines_why=lines_why,
    )


def _store(upload: IO[bytes], *, task: Task, file_name: str) -> tuple[str, Receiver]:
    return store_task_upload(
        upload,
        task=task,
        directory=settings.UPLOAD_DIR,
        kind=kind_for(task).run_file.upload,
        file_name=file_name,
    )


def submit_run(
    *,
    task: Task,
    team: Team,
    user: User,
    upload: IO[bytes],
    file_name: str = "",
    name: str = "",
    description: str = "",
    enqueue: bool = True,
) -> Run:
    """Receive a run: store its file and record the run ``received`` for a worker to validate.

    The file is only copied (hashed, its size and decompressed size checked on the way); parsing
    is the worker's (:func:`leaderboard.services.ingest.ingest_run`, sent after commit unless
    ``enqueue`` is false: :func:`leaderboard.services.ingest.submit_and_ingest` validates at
    once). Raises :class:`SubmissionError` if the upload is refused before it is stored.
    """
    name = _clean_name(name)
    file_name = os.path.basename(file_name or getattr(upload, "name", "") or "")
    file_name = file_name[-MAX_FILE_NAME_LENGTH:]
    check_verified_email(user)
    check_open(task)
    check_member(team=team, user=user)
    check_approved(task=task, team=team)
    check_terms(task=task, team=team)
    check_no_annotator(task=task, team=team)
    check_email_domain(task=task, user=user)
    check_quota(task=task, team=team)  # again below, with the task locked
    check_size(task=task, size=getattr(upload, "size", None))
    _rewind(upload)
    fields = {
        "task": task,
        "team": team,
        "submitted_by": user,
        "description": description or "",
        "file_name": file_name,
    }
    try:
        stored, received = _store(upload, task=task, file_name=file_name)
    except UploadRejected as exc:
        with transaction.atomic():
            run = Run(
                name=name or default_name(task=task, team=team, file_name=file_name),
                file_bytes=exc.n_bytes,
                **fields,
            )
            transition_run(run, Run.State.RECEIVED, f"received {file_name or 'an upload'}")
            transition_run(
                run,
                Run.State.REJECTED,
                exc.summary,
                errors=[p.as_dict() for p in exc.problems],
                error_count=exc.total,
            )
        raise SubmissionError(
            exc.summary, code=exc.code, problems=exc.problems, total=exc.total, run=run
        ) from None
    try:
        with transaction.atomic():
            locked = Task.objects.select_for_update().get(pk=task.pk)
            received_at = timezone.now()
            check_open(locked, received_at)
            check_duplicate(task=locked, team=team, sha256=received.content_sha256)
            check_quota(task=locked, team=team)
            run = Run(
                name=name or default_name(task=task, team=team, file_name=file_name),
                file_bytes=received.n_bytes,
                sha256=received.content_sha256,
                upload=stored,
                created_at=received_at,
                after_deadline=phases.is_after_deadline(locked, received_at),
                **fields,
            )
            transition_run(
                run,
                Run.State.RECEIVED,
                f"received {file_name or 'an upload'} "
                f"({human_bytes(received.n_bytes)}); waiting to be validated",
            )
            if enqueue:
                jobs.enqueue_ingest(run.pk)
    except BaseException:
        forget_stored(stored)
        raise
    return run


def submit_upload(
    *,
    task: Task,
    user: User,
    upload: IO[bytes],
    team: str | int | None = None,
    file_name: str = "",
    name: str = "",
    description: str = "",
) -> Run:
    """:func:`submit_run` for a team given by id or name (or the user's only team)."""
    check_open(task)
    return submit_run(
        task=task,
        team=resolve_team(user=user, team=team),
        user=user,
        upload=upload,
        file_name=file_name,
        name=name,
        description=description,
    )
