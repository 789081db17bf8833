"""Faults: the Redis broker crashes mid-flow (SIGKILL, no persistence: queued messages are gone).

While Redis is down, annotators keep answering and a participant submits a run through the
web API (in-process requests, the real views); none of these requests may fail, because the
database is the source of truth: their rows commit, and the message each would send after
commit is logged and dropped (``leaderboard.jobs``). Once Redis is back, the worker reconnects by
itself and the watchdog (``evaluation.services.watchdog``, run here in-process as beat would run
it) re-sends what is owed: runs stuck in ``queued``/``planning``/``estimating``, runs awaiting
labels with nothing pending, and estimations requested but never run. The test then checks that
every run and every answer is there and that the pipeline finishes.

A job is in flight when Redis dies (the worker is held for 3 s inside an estimation's write
transaction by the fault hook in tests/integration/support/worker_tasks.py): it must commit, and
the worker must survive the lost connection and reconnect. Celery 5.7.0 does not: its consumer
closes the broken connection while the job's message is unacknowledged and dies with
``Unrecoverable error: AttributeError("'NoneType' object has no attribute 'hostname'")``, which
is why requirements.txt pins 5.6.3. Should a worker die anyway, the test starts a new one, as a
process supervisor would, checks the rest, and fails at the end with
:class:`WorkerDiedOnBrokerLoss`.

The web requests made while Redis is down also read the cache (DRF's throttles): with
``REDIS_URL`` the cache is Redis too, and ``config.cache.ForgivingRedisCache`` turns the outage
into misses instead of 500s.
"""

from __future__ import annotations

import io
import json
import time
import uuid

import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Assignment, Judgment, VerificationRequest
from annotation.services import answer_assignment, claim_assignments
from config.celery import app
from leaderboard.jobs import enqueue_plan
from leaderboard.models import LeaderboardSnapshot, Run, Task
from leaderboard.services.runs import submit_run

from pipeline_support import annotator, make_team
from worlds import random_runs, truth_world

pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(150),
]

N_ITEMS = 400
FINAL = {Run.State.SCORED, Run.State.PARTIAL}


class WorkerDiedOnBrokerLoss(AssertionError):
    """The worker process exited when the broker connection was lost (instead of reconnecting)."""


class Annotator:
    """An annotator answering the queue, each answer with a fresh client id: through the queue's
    JSON API (``front="http"``, the real views in-process) or the services those views call."""

    def __init__(self, task: Task, truth: dict, user, front: str) -> None:
        self.task, self.truth, self.user, self.front = task, truth, user, front
        self.client = Client()
        self.client.force_login(user)
        self.client_ids: list[str] = []
        self.statuses: list[int] = []

    def _post(self, url: str, body: dict) -> dict:
        response = self.client.post(url, body, content_type="application/json")
        self.statuses.append(response.status_code)
        assert response.status_code in (200, 201), response.content
        return response.json()

    def _claim(self, count: int) -> list[str]:
        if self.front == "http":
            claim = self._post(f"/annotate/api/tasks/{self.task.slug}/claim", {"count": count})
            return [lease["token"] for lease in claim["assignments"]]
        claim = claim_assignments(task=self.task, annotator=self.user, count=count)
        return [str(lease.token) for lease in claim.assignments]

    def _answer(self, token: str, client_id: str, answer: str) -> None:
        if self.front == "http":
            self._post(
                "/annotate/api/answers", {"client_id": client_id, "token": token, "answer": answer}
            )
        else:
            assert answer_assignment(
                annotator=self.user, token=token, client_id=client_id, answer=answer
            ).created

    def answer(self, limit: int) -> int:
        n = 0
        while n < limit:
            # An annotator holds at most ANNOTATION_MAX_CLAIM leases at a time.
            tokens = self._claim(min(settings.ANNOTATION_MAX_CLAIM, limit - n))
            if not tokens:
                break
            for token in tokens:
                item = (
                    Assignment.objects.select_related("request__item").get(token=token).request.item
                )
                client_id = str(uuid.uuid4())
                self._answer(token, client_id, "correct" if self.truth[item.index] else "incorrect")
                self.client_ids.append(client_id)
                n += 1
        return n


def _upload(front: str, task: Task, team, user, upload) -> Run:
    if front == "http":
        participant = Client()
        participant.force_login(user)
        response = participant.post(
            f"/api/tasks/{task.slug}/runs/", {"file": upload, "name": "during-outage"}
        )
        assert response.status_code == 202, response.content
        return Run.objects.get(pk=response.json()["id"])
    return submit_run(task=task, team=team, user=user, upload=upload, name="during-outage")


def _run_file(rng, n: int = 200) -> io.BytesIO:
    keys = rng.choice(N_ITEMS, n, replace=False)
    lines = [f"k{int(k)}\t{rng.random():.4f}" for k in keys]
    upload = io.BytesIO(("\n".join(lines) + "\n").encode())
    upload.name = "outage.tsv"
    return upload


@pytest.mark.parametrize("front", ["services", "http"])
def test_redis_crash_mid_flow_loses_no_run_and_no_answer(
    front, celery_worker_factory, redis_server, settings, tmp_path, wait_for
):
    # Deadlines shortened from 600 s; a slow job on this busy machine must not be failed for
    # it (this test is about losing nothing), hence the high attempt limit.
    settings.PIPELINE_STUCK_SECONDS = 2
    settings.PIPELINE_MAX_ATTEMPTS = 20
    rng = np.random.default_rng(3)
    base = truth_world(
        rng,
        n_items=N_ITEMS,
        p_true=0.7,
        reference=60,
        groups=12,
        slug="outage",
        target_half_width=0.1,
    )
    task, truth = base.task, base.truth
    alice = get_user_model().objects.create_user("alice")
    team = make_team("A", alice)
    runs = random_runs(task, team, rng, n_runs=2, size=220, among=N_ITEMS)
    marker = tmp_path / "in-flight.json"
    worker = celery_worker_factory(
        env={
            "FAULT_PAUSE_AT": "estimate_store",
            "FAULT_MARKER": str(marker),
            "FAULT_PAUSE_SECONDS": "3",
        }
    )
    for run in runs:
        enqueue_plan(run.pk)
    wait_for(
        lambda: all(r.state == Run.State.AWAITING_LABELS for r in Run.objects.filter(task=task)),
        timeout=60,
    )
    ann = Annotator(task, truth, annotator(task), front)
    assert ann.answer(5) == 5
    # The estimation these answers asked for is in flight (paused before its commit).
    wait_for(marker.exists, timeout=30, message="an estimation in flight")

    redis_server.kill()
    down_at = time.monotonic()
    # Answers and an upload while the broker is down: every request succeeds.
    answered_while_down = ann.answer(5) + ann.answer(5)
    outage_run = _upload(front, task, team, alice, _run_file(rng))
    assert outage_run.state == Run.State.RECEIVED  # stored; its message could not be sent
    assert answered_while_down == 10
    redis_server.start()
    down_for = time.monotonic() - down_at
    # The job in flight committed its snapshot, broker or not.
    in_flight = json.loads(marker.read_text())
    wait_for(
        lambda: LeaderboardSnapshot.objects.filter(
            task=task, version=in_flight["version"]
        ).exists(),
        timeout=30,
        message="the in-flight estimation's snapshot",
    )
    # The worker reconnects by itself: it answers a ping through the new Redis.
    survived = (
        wait_for(
            lambda: (
                not worker.running or app.control.ping(destination=[worker.nodename], timeout=0.5)
            ),
            timeout=60,
            message="the worker to reconnect (or die)",
        )
        and worker.running
    )
    if not survived:
        died_log = worker.log_tail(30)
        worker.start()  # as a process supervisor would

    last_watchdog = [0.0]
    watchdog_counts = []

    def settled():
        from evaluation.services import watchdog

        runs = list(Run.objects.filter(task=task))
        pending = VerificationRequest.objects.filter(task=task, state="pending").exists()
        if {r.state for r in runs} <= FINAL | {Run.State.FAILED} and not pending:
            return runs
        if pending:
            ann.answer(5)
        if time.monotonic() - last_watchdog[0] >= 1.0:  # beat, sped up
            watchdog_counts.append(watchdog())
            last_watchdog[0] = time.monotonic()
        return None

    final = wait_for(settled, timeout=100, interval=0.2, message="every run to be final")
    recovered = time.monotonic() - down_at

    assert len(final) == 3 and {r.state for r in final} <= FINAL, [
        (r.name, r.state, r.reason) for r in final
    ]
    outage_run.refresh_from_db()
    assert outage_run.attempts >= 1  # the watchdog sent the message the upload could not
    assert 500 not in ann.statuses
    # Every answer is stored, once.
    stored = Judgment.objects.filter(request__task=task)
    assert sorted(str(c) for c in stored.values_list("client_id", flat=True)) == sorted(
        ann.client_ids
    )
    assert stored.filter(counted=True, seq__isnull=False).count() == len(ann.client_ids)
    # The last snapshot rests on all of them and lists every run in its final state.
    task.refresh_from_db()
    latest = wait_for(
        lambda: (
            LeaderboardSnapshot.objects.filter(task=task, labels_version=task.labels_version)
            .order_by("-version")
            .first()
        ),
        timeout=30,
        message="a snapshot of every answer",
    )
    assert {row["run"] for row in latest.rows} == {r.pk for r in final}
    assert {row["state"] for row in latest.rows} <= {"scored", "partial"}
    sent = {k: sum(c[k] for c in watchdog_counts) for k in ("requeued", "replanned", "estimates")}
    print(
        f"\n[faults] Redis down {down_for:.1f}s; pipeline final {recovered:.1f}s after the "
        f"crash; {len(ann.client_ids)} answers ({answered_while_down} while down); "
        f"watchdog re-sent {sent}; worker survived: {survived}"
    )
    if not survived:
        raise WorkerDiedOnBrokerLoss(f"the worker exited when Redis went away:\n{died_log}")
