"""Fallible annotators answering through the annotation service, with a real worker and Redis.

Three annotators, 97%, 90% and 60% accurate, take items from the queue as people would (leases,
gold items mixed in) and answer them; the worker plans, asks further looks where answers are
doubtful, re-estimates and plans again until every run is final. The final intervals must hold
the runs' true scores (jointly: Bonferroni intervals at family level 99.9%), the annotator who is
right only 60% of the time must be found out (estimated the least accurate, below 0.85, the good
one above it), and the stored history must replay in the core exactly
(tests/support/engine_audit.py).
"""

import io
import random
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from annotation.services import load_gold
from evaluation.core.measures import OPEN_MEASURES
from leaderboard.models import LabelModelFit, LeaderboardSnapshot, Run
from leaderboard.services.ingest import submit_and_ingest
from leaderboard.services.reference import upload_reference
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from engine_audit import audit_task, replay_task
from pipeline_support import answer_what_is_served, open_unchecked

pytestmark = [
    pytest.mark.integration,
    # Its claims fail in 1 of 2,000 campaigns simulated (bench/annotator_error_claims.py; at the
    # levels 99% and 0.9 / 0.75 they failed in 2.2%, and once in CI): it runs once per
    # `make test`, not again on PostgreSQL, where it would check nothing statistical anew.
    pytest.mark.statistical,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(600),
]

SLICE = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice"
SYSTEMS = ("ecm_dob.tsv", "rule_names90_sn_surname.tsv", "rule_all45_postcode.tsv")
ACCURACY = {"good": 0.97, "fair": 0.9, "poor": 0.6}


def _truth() -> set[str]:
    return {line.strip() for line in (SLICE / "truth.tsv").read_text().splitlines() if line}


def _true_scores(truth: set[str]) -> dict[str, tuple[float, float, float]]:
    scores = {}
    for name in SYSTEMS:
        keys = [
            line.split("\t")[0]
            for line in (SLICE / "systems" / name).read_text().splitlines()
            if line
        ]
        hits = sum(k in truth for k in keys)
        p, r = hits / len(keys), hits / len(truth)
        scores[name.removesuffix(".tsv")] = (p, r, 2 * p * r / (p + r))
    return scores


class _Unsettled(list):
    """The runs' (name, state, reason) while some run is still in the pipeline: falsy, so that
    ``wait_for`` goes on polling and, on a timeout, names where each run stopped."""

    def __bool__(self) -> bool:
        return False


def test_fallible_annotators_are_corrected_for_and_the_poor_one_found_out(celery_worker, wait_for):
    users = get_user_model().objects
    organizer = users.create_user("org", password="x")
    alice = users.create_user("alice")
    people = {name: users.create_user(name) for name in ACCURACY}
    task = open_unchecked(
        create_task(
            slug="febrl",
            title="Febrl slice",
            organizers=[organizer],
            target_half_width=0.05,
            gold_rate=0.2,
        )
    )
    task.annotators.add(*people.values())
    truth = _truth()
    keys = sorted(random.Random(4).sample(sorted(truth), 150))
    reference = io.BytesIO(("\n".join(f"{k}\t{k.split('|')[0]}" for k in keys) + "\n").encode())
    assert upload_reference(task=task, user=organizer, upload=reference) == 150
    team = create_team(name="A", members=[alice])
    for name in SYSTEMS:
        with open(SLICE / "systems" / name, "rb") as fh:
            submit_and_ingest(
                task=task,
                team=team,
                user=alice,
                upload=fh,
                file_name=name,
                name=name.removesuffix(".tsv"),
            )
    items = sorted(task.items.values_list("key", flat=True))
    pick = random.Random(5)
    gold = [f"{k}\tcorrect" for k in pick.sample([k for k in items if k in truth], 30)] + [
        f"{k}\tincorrect" for k in pick.sample([k for k in items if k not in truth], 30)
    ]
    assert load_gold(task=task, lines=gold).created == 60
    rng = random.Random(6)

    def settled():
        states = list(Run.objects.filter(task=task).values_list("name", "state", "reason"))
        if {state for _, state, _ in states} <= {"scored", "partial", "failed"}:
            return True
        answer_what_is_served(
            task, [(people[name], ACCURACY[name]) for name in ACCURACY], truth, rng
        )
        return _Unsettled(states)

    wait_for(settled, timeout=540, interval=0.3, message="every run to reach a final state")
    final = {run.name: run for run in Run.objects.filter(task=task)}
    assert {run.state for run in final.values()} <= {"scored", "partial"}, [
        (run.name, run.state, run.reason) for run in final.values()
    ]
    snapshot = wait_for(
        lambda: LeaderboardSnapshot.objects.filter(
            task=task, labels_version=task.__class__.objects.get(pk=task.pk).labels_version
        ).first(),
        message="a snapshot of the last answers",
    )
    # Nine 95% intervals all covering is a 1-in-5 failure by design (which answers reach the
    # worker first depends on timing, so no seed fixes it): the claim checked here is the joint
    # one, every true score inside its Bonferroni interval at family level 99.9%, on the state
    # the snapshot rests on. Coverage at the nominal level is measured by the seeded simulations
    # (tests/evaluation/core/test_core_annotator_campaigns.py).
    runs, design, state = replay_task(task, snapshot.labels_version, until=snapshot.created_at)
    joint = design.estimate(state, level=1 - 0.001 / 9)
    expected = _true_scores(truth)
    for run, result in zip(runs, joint, strict=True):
        for metric, value in zip(OPEN_MEASURES, expected[run.name], strict=True):
            cell = getattr(result, metric)
            assert cell.low - 1e-9 <= value <= cell.high + 1e-9, (run.name, metric, value, cell)
    fit = wait_for(
        lambda: LabelModelFit.objects.filter(task=task, snapshot=snapshot).first(),
        message="the annotator model fitted for that snapshot",
    )
    estimated = {a["annotator"]: a for a in fit.annotators}
    accuracy = {
        name: (estimated[person.pk]["sensitivity"][0] + estimated[person.pk]["specificity"][0]) / 2
        for name, person in people.items()
    }
    # Found out: the least accurate of the three, and clearly so (true 0.6, the good one 0.97).
    assert accuracy["poor"] < min(accuracy["good"], accuracy["fair"]), accuracy
    assert accuracy["poor"] < 0.85 < accuracy["good"], accuracy
    assert audit_task(task)["estimates"] == 9
