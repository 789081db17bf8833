"""The checks a task may need before it opens: its checklist is the ones its kind lists
(``leaderboard.kinds``, ``TaskKind.readiness``).

Each need is a :class:`Check` with its state in words, whether it blocks opening and where it is
done (the organize pages' section and anchor, the API's endpoint): an open-world task needs its
annotators and a reference sample (when its board shows recall), a closed pool its pool and the
annotators its further looks need; both their gold items (when the gold rate is above 0) and
their dates (informational). Opening a task that is not ready is refused with this list
(``leaderboard.services.tasks.set_task_state``); the organize page and the task's API show it to
organizers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone

from evaluation.core.closed_pool.label_noise import LOOK_ANNOTATORS

from ..models import ReferenceSample, Task
from .quotas import REFERENCE_MIN_DOCUMENTS, REFERENCE_MIN_ITEMS, reference_size

# Further looks at a doubtful answer come from another annotator than the first: an open-world
# task needs two even at one judgment per item.
OPEN_WORLD_MIN_ANNOTATORS = 2
# The measures of an open-world task that rest on the reference sample.
RECALL_MEASURES = frozenset({"recall", "f1"})


@dataclass(frozen=True)
class Check:
    """One need of a task before it opens: ``state`` says where it stands in words; ``page`` is
    where it is done on the organize pages (a section's page, with its anchor), ``api`` the API's
    endpoint for it (empty: none). A check that does not ``block`` is information only."""

    key: str
    label: str
    ok: bool
    state: str
    blocking: bool
    page: str
    api: str = ""

    @property
    def missing(self) -> bool:
        """Whether this check keeps the task from opening."""
        return self.blocking and not self.ok


@dataclass(frozen=True)
class Readiness:
    """A task's checklist, in the order an organizer works through it."""

    checks: tuple[Check, ...]

    @property
    def ready(self) -> bool:
        return not self.missing

    @property
    def missing(self) -> tuple[Check, ...]:
        """The checks that keep the task from opening."""
        return tuple(check for check in self.checks if check.missing)

    def as_dict(self) -> dict[str, Any]:
        """The checklist as the API shows it (and the refusal to open carries it)."""
        return {
            "ready": self.ready,
            "checks": [{**asdict(check), "missing": check.missing} for check in self.checks],
        }


@dataclass(frozen=True)
class _Need:
    """A check's name, and where it is done: the organize pages' section (its URL name) and
    anchor, the API's URL name."""

    key: str
    label: str
    section: str
    anchor: str
    api_name: str

    def check(self, task: Task, *, ok: bool, state: str, blocking: bool = True) -> Check:
        return Check(
            key=self.key,
            label=self.label,
            ok=ok,
            state=state,
            blocking=blocking,
            page=f"{reverse(self.section, args=[task.slug])}#{self.anchor}",
            api=reverse(f"api:{self.api_name}", args=[task.slug]),
        )


ANNOTATORS = _Need("annotators", "Annotators", "organize_people", "annotators", "task-invitations")
REFERENCE_SAMPLE = _Need(
    "reference_sample",
    "Reference sample",
    "organize_data",
    "reference-sample",
    "task-reference-sample",
)
POOL = _Need("pool", "Pool", "organize_data", "upload-pool", "task-pool")
GOLD = _Need("gold", "Gold items", "organize_data", "upload-gold", "task-gold")
PHASES = _Need("phases", "Dates", "organize_phases", "phases-form", "task-detail")


def _annotators(task: Task, *, needed: int, why: str) -> Check:
    have = task.annotators.count()
    state = f"{have} annotator{pluralize(have)}"
    if have < needed:
        state = f"{have} of the {needed} annotators needed: {why}; invite them (People)"
    return ANNOTATORS.check(task, ok=have >= needed, state=state)


def open_world_annotators(task: Task) -> Check:
    first = task.judgments_per_item
    needed = max(first, OPEN_WORLD_MIN_ANNOTATORS)
    why = (
        f"each new item gets {first} judgment{pluralize(first)} from different annotators, and "
        "a doubtful answer a further look from another"
    )
    return _annotators(task, needed=needed, why=why)


def closed_pool_annotators(task: Task) -> Check:
    needed = max(LOOK_ANNOTATORS, task.judgments_per_item)
    why = (
        f"a closed pool's further looks need {needed} different annotators (with fewer, a wrong "
        "'yes' cannot be checked and recall is biased down)"
    )
    return _annotators(task, needed=needed, why=why)


def reference_sample(task: Task) -> Check:
    """An open-world task's reference sample: at least ``REFERENCE_MIN_ITEMS`` items in
    ``REFERENCE_MIN_DOCUMENTS`` documents when its board shows recall or F1 (else not needed)."""
    if not RECALL_MEASURES & set(task.measures or ()):
        return REFERENCE_SAMPLE.check(
            task, ok=True, state="not needed: the board shows no recall or F1", blocking=False
        )
    size = reference_size(task)
    state = f"{size.summary} (version {size.version})"
    verifying = ReferenceSample.objects.filter(
        task=task, state=ReferenceSample.State.VERIFYING
    ).first()
    if verifying is not None:
        state += (
            f"; a draw is in progress: {verifying.n_resolved} of {verifying.n_candidates} "
            f"candidate{pluralize(verifying.n_candidates)} verified"
        )
    elif not size.enough:
        state += (
            f"; recall needs at least {REFERENCE_MIN_ITEMS} items in {REFERENCE_MIN_DOCUMENTS} "
            "documents: upload candidates and draw documents, or upload a reference sample"
        )
    return REFERENCE_SAMPLE.check(task, ok=size.enough, state=state)


def pool(task: Task) -> Check:
    """A closed pool's items: runs are accepted only once they are uploaded."""
    n = task.n_items
    if task.pool_loading:
        return POOL.check(
            task,
            ok=False,
            state=f"being stored ({n:,} items so far), or an upload stopped half-way: runs are "
            "refused until it is loaded; see Uploads, and upload the pool again if it was rejected",
        )
    if not n:
        return POOL.check(
            task, ok=False, state="not uploaded: upload every item key; runs are refused until then"
        )
    return POOL.check(task, ok=True, state=f"{n:,} item{pluralize(n)}")


def gold_needed(task: Task) -> int:
    """The gold items a task with a gold rate needs: an annotator answers each gold item once
    and is judged after ``gold_min_answers`` gold answers, so with fewer nobody is ever
    checked."""
    return max(1, task.gold_min_answers)


def gold(task: Task) -> Check:
    if task.gold_rate <= 0:
        return GOLD.check(
            task,
            ok=True,
            state="gold rate 0: annotators are not checked against known answers",
            blocking=False,
        )
    # Through the reverse relation: this layer imports nothing of the annotation app.
    have = Task.objects.filter(pk=task.pk).aggregate(n=Count("gold_items"))["n"]
    needed = gold_needed(task)
    state = f"{have} gold item{pluralize(have)}"
    if have < needed:
        state = (
            f"{have} of the {needed} gold items needed: the queue mixes them in at the gold rate "
            f"({task.gold_rate:.0%}) and judges an annotator after {task.gold_min_answers} gold "
            "answers; upload more, or set the gold rate to 0"
        )
    return GOLD.check(task, ok=have >= needed, state=state)


def _utc(moment: datetime) -> str:
    return f"{timezone.localtime(moment, UTC):%Y-%m-%d %H:%M} UTC"


def phases(task: Task, now: datetime | None = None) -> Check:
    """The submission window, for information: a passed deadline is pointed out."""
    now = now or timezone.now()
    opens, closes, reveal = task.submissions_open_at, task.submissions_close_at, task.reveal_at
    ok = True
    if opens is None and closes is None and reveal is None:
        state = "none set: runs are accepted from opening until the task is closed"
    else:
        parts = [f"runs from {_utc(opens) if opens else 'opening'}"]
        if closes is not None:
            parts.append(f"until {_utc(closes)}")
        state = " ".join(parts)
        if reveal is not None:
            state += f"; results revealed {_utc(reveal)}"
        if closes is not None and closes <= now:
            ok = False
            late = "marked after the deadline" if task.accept_late_runs else "refused"
            state += f"; the deadline has passed: runs would be {late}"
    return PHASES.check(task, ok=ok, state=state, blocking=False)
