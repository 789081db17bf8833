"""Test support: build tasks and runs directly in the database, and drive the pipeline in-process.

`PipelineDriver` records the messages the services enqueue (``leaderboard.jobs._send``) and runs
them one by one in this process, so service tests are deterministic and need no broker; the
integration suite runs the same services in a real worker over Redis.
"""

from __future__ import annotations

import re
import uuid

import numpy as np
from django.contrib.auth import get_user_model

from annotation.models import VerificationRequest
from annotation.services import (
    answer_assignment,
    claim_assignments,
    load_organizer_upload,
    request_verification,
    submit_judgment,
)
from evaluation import services
from evaluation.core.closed_pool.label_noise import LOOK_ANNOTATORS
from leaderboard.kinds import kind_for
from leaderboard.models import Item, Run, RunPredictions, Task, Team
from leaderboard.services.ingest import ingest_run
from leaderboard.services.invitation_mail import send_invitation_mail
from leaderboard.services.notifications import send_notifications


def make_task(**fields) -> Task:
    fields.setdefault("slug", "t")
    fields.setdefault("title", "T")
    return Task.objects.create(**fields)


def open_unchecked(task: Task) -> Task:
    """Open ``task`` past its readiness checklist: for fixtures that test what an open task does
    with runs, not how a task is set up (``create_task`` makes drafts, and opening checks the
    list: tests/leaderboard/services/test_lb_services_readiness.py)."""
    Task.objects.filter(pk=task.pk).update(state=Task.State.OPEN)
    task.state = Task.State.OPEN
    return task


def add_items(task: Task, n: int) -> list[Item]:
    start = task.n_items
    items = Item.objects.bulk_create(
        [Item(task=task, key=f"k{start + i}", index=start + i) for i in range(n)]
    )
    Task.objects.filter(pk=task.pk).update(n_items=start + n)
    task.refresh_from_db()
    return items


def requested_queue(n: int = 4, judgments: int = 1, **fields) -> tuple[Task, list[Item]]:
    """A task with ``n`` items, each requested for ``judgments`` judgments, and (unless
    ``fields`` say otherwise) no gold item mixed in."""
    fields.setdefault("gold_rate", 0.0)
    task = make_task(judgments_per_item=judgments, **fields)
    items = add_items(task, n)
    request_verification(task=task, item_ids=[it.pk for it in items])
    return task, items


def make_team(name="A", *members) -> Team:
    team = Team.objects.create(name=name)
    team.members.add(*members)
    return team


def add_run(task: Task, team: Team, indices, scores=None, name="run") -> Run:
    indices = np.asarray(indices, dtype=np.int64)
    order = np.argsort(indices)
    indices = indices[order]
    scores = np.ones(indices.size) if scores is None else np.asarray(scores, float)[order]
    run = Run.objects.create(
        task=task, team=team, name=name, state=Run.State.QUEUED, n_predictions=indices.size
    )
    RunPredictions.objects.create(run=run, items=indices.tobytes(), scores=scores.tobytes())
    return run


def settle_runs(
    task: Task, truth: dict[int, bool], user, wait_for, *, timeout: float = 90.0
) -> list[Run]:
    """Answer every pending item (as annotators would) until every run of ``task`` is final
    (with a real worker doing the planning and estimation); returns the runs."""
    final = {Run.State.SCORED, Run.State.PARTIAL, Run.State.FAILED}

    def settled():
        runs = list(Run.objects.filter(task=task))
        if {r.state for r in runs} <= final:
            return runs
        answer_all(task, truth, user)
        return None

    return wait_for(settled, timeout=timeout, interval=0.2, message="every run to be final")


def annotator(task: Task, name="ann"):
    user, _ = get_user_model().objects.get_or_create(username=name)
    task.annotators.add(user)
    return user


def satisfy_checklist(task: Task) -> Task:
    """Give ``task`` what its readiness checklist asks for, as the organizers would: enough
    annotators, a reference sample of the minimum size in as many documents (open world) or a
    pool of ten items (closed pool), and the gold items its gold rate needs."""
    from annotation.models import GoldItem
    from leaderboard.models import ReferenceItem
    from leaderboard.selectors import REFERENCE_MIN_ITEMS
    from leaderboard.selectors.readiness import gold_needed

    missing = {check.key for check in kind_for(task).readiness(task).missing}
    if "annotators" in missing:
        for i in range(max(LOOK_ANNOTATORS, task.judgments_per_item)):
            annotator(task, f"{task.slug}-annotator-{i}")
    if "pool" in missing:
        add_items(task, 10)
    if "reference_sample" in missing:
        items = add_items(task, REFERENCE_MIN_ITEMS)
        ReferenceItem.objects.bulk_create(
            [ReferenceItem(task=task, item=item, group=f"doc-{item.key}") for item in items]
        )
        Task.objects.filter(pk=task.pk).update(reference_version=task.reference_version + 1)
        task.refresh_from_db()
    if "gold" in missing:
        needed = gold_needed(task)
        items = list(Item.objects.filter(task=task).order_by("index")[:needed])
        items += add_items(task, needed - len(items))
        GoldItem.objects.bulk_create(
            [GoldItem(task=task, item=item, answer=i % 2 == 0) for i, item in enumerate(items)]
        )
    assert kind_for(task).readiness(task).ready, kind_for(task).readiness(task).missing
    return task


class PipelineDriver:
    """Collects enqueued pipeline messages and runs them in this process, in order."""

    def __init__(self, monkeypatch):
        self.sent: list[tuple[str, list]] = []
        monkeypatch.setattr(
            "leaderboard.jobs._send",
            lambda name, args, countdown=None: self.sent.append((name, args)),
        )

    def drain(self, limit: int = 1000) -> list[tuple[str, list, object]]:
        """Run queued messages until none is left; returns (name, args, result) of each."""
        done = []
        for _ in range(limit):
            if not self.sent:
                return done
            name, args = self.sent.pop(0)
            fn = {
                "evaluation.ingest_run": ingest_run,
                "evaluation.load_upload": load_organizer_upload,
                "evaluation.plan_run": services.plan_run,
                "evaluation.estimate_task": services.estimate_task,
                "evaluation.send_notifications": send_notifications,
                "evaluation.send_invitation_mail": _send_invitation_mail,
            }[name]
            done.append((name, args, fn(*args)))
        raise AssertionError("pipeline did not settle")


def _send_invitation_mail(kind: str, invitation_id: int, key: str) -> str:
    return send_invitation_mail(kind=kind, invitation_id=invitation_id, key=key)


def answer_all(task: Task, truth: dict[int, bool], user) -> int:
    """Answer every pending request of ``task`` from ``truth`` (item index -> correct) that
    ``user`` has not judged yet (the queue never serves an item twice to one annotator)."""
    n = 0
    pending = (
        VerificationRequest.objects.filter(task=task, state="pending")
        .exclude(judgments__annotator=user, judgments__withdrawn_at=None)
        .select_related("item")
    )
    for req in pending:
        answer = "correct" if truth[req.item.index] else "incorrect"
        submit_judgment(request_id=req.pk, annotator=user, answer=answer)
        n += 1
    return n


def answer_what_is_served(task: Task, people, truth: set[str], rng) -> int:
    """The annotators take turns answering what the queue serves them, as people would (leases,
    gold items mixed in, never an item they judged), each right with their accuracy, until the
    queue has nothing for any of them.

    ``people``: ``(user, accuracy)`` pairs; ``truth``: the keys of the true items; ``rng``: a
    ``random.Random``. Returns the number of answers given.
    """
    n = 0
    waiting = list(people)
    while waiting:
        for user, accuracy in list(waiting):
            claim = claim_assignments(task=task, annotator=user, count=1)
            if not claim.assignments:
                waiting.remove((user, accuracy))
                continue
            lease = claim.assignments[0]
            item = lease.request.item if lease.request_id else lease.gold.item
            right = item.key in truth
            says = right if rng.random() < accuracy else not right
            answer_assignment(
                annotator=user,
                token=lease.token,
                client_id=uuid.uuid4(),
                answer="correct" if says else "incorrect",
            )
            n += 1
    return n


_CLOCK_TIME = re.compile(r"\d{2}:\d{2}:\d{2}[.,]\d+")


def without_clock_times(text: str) -> str:
    """``text`` with every time of day's fractional seconds cut (``12:00:10.941234`` reads
    ``12:00:10``): a response searched for a secret score such as ``0.94`` must not fail on a
    timestamp (a lease's expiry, a snapshot's computed_at) whose seconds happen to spell it."""
    return _CLOCK_TIME.sub(lambda m: m.group(0)[:8], text)
