"""Answers given in the browser move a run's estimates: real Chromium, real Celery worker, Redis.

A run is planned by the worker, an annotator answers its queue by keyboard, and the worker
re-estimates: a snapshot with the run's precision appears and the run leaves ``awaiting_labels``.
"""

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import Judgment, VerificationRequest
from leaderboard.jobs import enqueue_plan
from leaderboard.models import Estimate, Item, LeaderboardSnapshot, Run

from engine_audit import audit_task
from pipeline_support import add_items, add_run, make_task, make_team

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

N = 10


def test_browser_answers_move_the_runs_estimates(live_server, page, login, wait_for, celery_worker):
    task = make_task(
        slug="live",
        title="Live pairs",
        question="Same person?",
        target_half_width=0.3,
        gold_rate=0.0,
    )
    items = add_items(task, N)
    for item in items:
        Item.objects.filter(pk=item.pk).update(
            payload={
                "left": {"name": f"person {item.index}"},
                "right": {"name": f"person {item.index}"},
            }
        )
    run = add_run(task, make_team("Pipeline Team"), list(range(N)), name="pipeline-run")
    with transaction.atomic():
        enqueue_plan(run.pk)  # sent to the worker when this block commits
    requested = wait_for(
        lambda: VerificationRequest.objects.filter(task=task).count(),
        timeout=60,
        message="the worker to plan the run",
    )
    run.refresh_from_db()
    assert run.state == Run.State.AWAITING_LABELS
    assert not LeaderboardSnapshot.objects.filter(task=task).exists()

    get_user_model().objects.create_user("ann", password="pw")
    task.annotators.add(get_user_model().objects.get(username="ann"))
    login(page, live_server, "ann", "pw")
    page.goto(f"{live_server.url}/annotate/live/")
    truth = {}
    while True:
        page.wait_for_selector(
            "#ann-item[data-token], #ann-screen:not([hidden]):not([data-status=loading])"
        )
        token = page.get_attribute("#ann-item", "data-token")
        if not token:
            break
        shown = page.locator("#ann-item tbody tr td").first.inner_text()
        index = int(re.fullmatch(r"person (\d+)", shown).group(1))
        truth[index] = index % 3 != 0
        page.keyboard.press("y" if truth[index] else "n")
        page.wait_for_function(
            "t => document.getElementById('ann-item').dataset.token !== t", arg=token
        )
        page.wait_for_selector(
            "#ann-item[data-token], #ann-screen:not([hidden]):not([data-status=loading])"
        )
    assert page.get_attribute("#ann-screen", "data-status") == "empty"
    assert len(truth) == requested == N
    wait_for(
        lambda: Judgment.objects.filter(request__task=task).count() == requested,
        message="every answer to arrive",
    )

    def estimated():
        return (
            Estimate.objects.filter(run=run, metric="precision", value__isnull=False)
            .select_related("snapshot")
            .order_by("-snapshot__version")
            .first()
        )

    estimate = wait_for(
        estimated, timeout=90, interval=0.2, message="a snapshot with the run's precision"
    )
    # Every prediction of the run is verified: nothing is left to plan, the run is scored.
    wait_for(
        lambda: Run.objects.get(pk=run.pk).state == Run.State.SCORED,
        timeout=60,
        message="the run to be scored",
    )
    assert Run.objects.get(pk=run.pk).n_verified == requested
    assert estimate.labels_used >= len(truth)
    assert estimate.low <= estimate.value <= estimate.high
    # Every prediction answered once by one annotator: the precision is the share answered
    # "correct" corrected for the annotator's estimated error rates, exactly what the core
    # estimates from the same answers, and its interval holds the share.
    assert audit_task(task)["estimates"] == 3
    latest = Estimate.objects.get(
        run=run,
        metric="precision",
        snapshot=LeaderboardSnapshot.objects.filter(task=task).order_by("-version").first(),
    )
    assert latest.low <= sum(truth.values()) / N <= latest.high
    assert page.js_errors == []
