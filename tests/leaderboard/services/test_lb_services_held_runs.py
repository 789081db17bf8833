"""Runs held for the organizers: a validated run of an open task most of whose keys match no item
and look malformed is held (not queued, no items, its file kept, its quota slot held); an
organizer releases it (queued as usual) or rejects it (no quota). Real febrl4 first runs are never
held."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from evaluation.kinds.engine_rows import ENGINE_STATES
from evaluation.services import watchdog
from leaderboard.models import Item, Run, RunEvent, RunPredictions, Task
from leaderboard.selectors import held_runs, quota_for, run_for
from leaderboard.services.held_runs import HeldRunError, reject_held_run, release_run
from leaderboard.services.ingest import ingest_run, submit_and_ingest
from leaderboard.services.pool import upload_pool
from leaderboard.services.reference import upload_reference
from leaderboard.services.runs import SubmissionError, submit_run
from leaderboard.services.tasks import create_task
from leaderboard.services.teams import create_team

from pipeline_support import open_unchecked

pytestmark = pytest.mark.django_db

SLICE = Path(__file__).resolve().parents[2] / "data" / "febrl4_slice"
TRUTH = SLICE.joinpath("truth.tsv").read_text().split()
SYSTEMS = sorted(SLICE.joinpath("systems").glob("*.tsv"))
SYSTEM = SLICE / "systems" / "ecm_given.tsv"
# The keys (a CSV file read as keys alone), in JSON Lines: the sniffer lets JSON through.
JUNK = "".join(
    json.dumps({"key": f"{line.replace(chr(9), ',')}", "score": 0.5}) + "\n"
    for line in SYSTEM.read_text().splitlines()
)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture(autouse=True)
def committed(monkeypatch):
    """Every on-commit callback (a message sent, a file deleted) runs at once, as after a real
    commit: these tests follow what each step sends."""
    monkeypatch.setattr("django.db.transaction.on_commit", lambda func, *a, **k: func())


@pytest.fixture
def febrl(task, organizer):
    """The task with a reference sample of 30 true febrl4 pairs (its only items)."""
    lines = "".join(f"{key}\tdoc-{key.split('-')[1]}\n" for key in TRUTH[:30])
    upload_reference(task=task, user=organizer, upload=upload(lines, "ref.tsv"))
    return task


def upload(data: str | bytes, name: str = "run.tsv") -> io.BytesIO:
    stream = io.BytesIO(data.encode() if isinstance(data, str) else data)
    stream.name = name
    return stream


def submitted(task, team, user, data, name="run.jsonl") -> Run:
    return submit_and_ingest(task=task, team=team, user=user, upload=upload(data, name))


def held(febrl, team, participant) -> Run:
    run = submitted(febrl, team, participant, JUNK)
    assert run.state == Run.State.HELD
    return run


# -- held, or not ------------------------------------------------------------------------------
@pytest.mark.parametrize("system", SYSTEMS, ids=lambda p: p.stem)
def test_a_real_first_run_is_queued_not_held(febrl, team, participant, sent_jobs, system):
    run = submitted(febrl, team, participant, system.read_text(), "run.tsv")
    assert run.state == Run.State.QUEUED, run.reason
    assert ("evaluation.plan_run", [run.pk]) in sent_jobs


def test_a_first_run_on_a_task_without_items_is_queued(task, team, participant, sent_jobs):
    assert submitted(task, team, participant, SYSTEM.read_text(), "run.tsv").state == "queued"


def test_a_junk_run_is_held_with_why_and_nothing_of_it_stored(febrl, team, participant, sent_jobs):
    n_items = Item.objects.filter(task=febrl).count()
    run = held(febrl, team, participant)
    assert run.reason.startswith(
        "held for the organizers: 272 of its 272 keys match no item of the task and look "
        "malformed: 272 end in a separator and a number (',1.0000', ',0.9999'), 272 "
        "contain a comma (no item key does). An organizer releases it (it is then evaluated) or "
        "rejects it (it then uses no quota)"
    ), run.reason
    assert run.errors[0] == {
        "line": 1,
        "message": "key 'rec-298-org|rec-298-dup-0,1.0000' matches no item and looks malformed: "
        "ends in ',1.0000' and contains a comma",
    }
    assert len(run.errors) == 10 and run.error_count == 272 and run.n_predictions == 272
    # Not planned, no items or predictions, not among the engine's runs; the file kept.
    assert sent_jobs == [] and not RunPredictions.objects.filter(run=run).exists()
    assert Item.objects.filter(task=febrl).count() == n_items and run.n_new_items == 0
    assert run.state not in ENGINE_STATES and default_storage.exists(run.upload)
    assert list(held_runs(febrl)) == [run]
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received",
        "validating",
        "held",
    ]
    # It holds its quota slot, and the same file cannot be sent again meanwhile.
    assert quota_for(task=febrl, team=team).used_total == 1
    with pytest.raises(SubmissionError) as info:
        submit_run(task=febrl, team=team, user=participant, upload=upload(JUNK, "again.jsonl"))
    assert info.value.code == "duplicate" and "('run', held)" in info.value.message


def test_the_team_sees_why_its_run_is_held(febrl, team, participant, organizer):
    run = held(febrl, team, participant)
    seen = run_for(run_id=run.pk, user=participant)
    assert seen.state == "held" and seen.reason == run.reason
    other = create_team(name="Other", members=[organizer.__class__.objects.create(username="o")])
    assert run_for(run_id=run.pk, user=other.members.get()) is None


def test_a_space_glued_score_in_a_tsv_is_held(febrl, team, participant):
    data = "".join(
        f"{line.replace(chr(9), ' ')}\t0.5\n" for line in SYSTEM.read_text().split("\n")[:50]
    )
    run = submitted(febrl, team, participant, data, "run.tsv")
    assert (
        run.state == Run.State.HELD and "end in a separator and a number (' 1.0000'" in run.reason
    )


def test_a_run_most_of_whose_keys_are_fine_is_queued(febrl, team, participant):
    lines = SYSTEM.read_text().splitlines()
    keys = [line.split("\t")[0] for line in lines]
    data = "".join(
        json.dumps({"key": f"{k},0.5" if i % 3 == 0 else k}) + "\n" for i, k in enumerate(keys)
    )
    assert submitted(febrl, team, participant, data).state == Run.State.QUEUED


def test_closed_pool_runs_are_never_screened(organizer, team, participant):
    pool = open_unchecked(
        create_task(slug="pool", title="Pool", kind=Task.Kind.CLOSED_POOL, organizers=[organizer])
    )
    upload_pool(task=pool, user=organizer, upload=upload("a,0.5\nb,0.5\n"))
    run = submitted(pool, team, participant, "a,0.5\t0.5\t1\nb,0.5\t0.5\t0\n", "run.tsv")
    assert run.state == Run.State.QUEUED


def test_a_retried_validation_leaves_a_held_run_as_it_is(febrl, team, participant, sent_jobs):
    run = held(febrl, team, participant)
    events = RunEvent.objects.filter(run=run).count()
    assert ingest_run(run.pk) == Run.State.HELD
    assert RunEvent.objects.filter(run=run).count() == events and sent_jobs == []


def test_the_watchdog_leaves_a_held_run_alone(febrl, team, participant, settings, sent_jobs):
    run = held(febrl, team, participant)
    old = timezone.now() - timedelta(seconds=settings.PIPELINE_STUCK_SECONDS * 100)
    Run.objects.filter(pk=run.pk).update(state_changed_at=old, created_at=old)
    assert not any(watchdog().values())
    run.refresh_from_db()
    assert run.state == Run.State.HELD and run.attempts == 0 and sent_jobs == []


# -- release -------------------------------------------------------------------------------------
def test_a_released_run_is_validated_again_and_queued(
    febrl, team, participant, organizer, sent_jobs
):
    run = held(febrl, team, participant)
    stored = run.upload
    release_run(run=run)
    assert run.state == Run.State.RECEIVED
    assert run.reason == "released by the organizers; waiting to be validated again"
    assert sent_jobs == [("evaluation.ingest_run", [run.pk])]
    assert ingest_run(run.pk) == Run.State.QUEUED  # not held again
    run.refresh_from_db()
    assert run.n_predictions == 272 and run.n_new_items == 272 and run.errors == []
    assert ("evaluation.plan_run", [run.pk]) in sent_jobs
    assert Item.objects.filter(task=febrl, key="rec-298-org|rec-298-dup-0,1.0000").exists()
    assert quota_for(task=febrl, team=team).used_total == 1
    assert list(RunEvent.objects.filter(run=run).values_list("state", flat=True)) == [
        "received",
        "validating",
        "held",
        "received",
        "validating",
        "queued",
    ]
    assert list(held_runs(febrl)) == []
    # Released twice, or its validation message delivered twice: nothing more happens.
    release_run(run=run)
    assert ingest_run(run.pk) == Run.State.QUEUED
    assert run.state == Run.State.QUEUED and sent_jobs.names().count("evaluation.ingest_run") == 1
    assert not default_storage.exists(stored)  # deleted once queued (on commit)


def test_only_a_held_run_can_be_released_or_rejected(febrl, team, participant, organizer):
    run = submitted(febrl, team, participant, SYSTEM.read_text(), "run.tsv")
    for action in (release_run, reject_held_run):
        with pytest.raises(HeldRunError) as info:
            action(run=run)
        assert (info.value.code, info.value.http_status) == ("not_held", 409)
        assert info.value.message.startswith(f"run {run.pk} is queued, not held")
    released = held(febrl, team, participant)
    release_run(run=released)
    with pytest.raises(HeldRunError):
        reject_held_run(run=released)  # released: no longer held
    run.refresh_from_db()
    assert run.state == Run.State.QUEUED


# -- reject --------------------------------------------------------------------------------------
def test_a_rejected_held_run_uses_no_quota(febrl, team, participant, organizer, sent_jobs):
    run = held(febrl, team, participant)
    stored = run.upload
    reject_held_run(run=run)
    assert run.state == Run.State.REJECTED and run.upload == ""
    assert run.reason == (
        "rejected by the organizers: most of its keys match no item of the task and look "
        "malformed (examples by line below); it uses no quota"
    )
    assert len(run.errors) == 10  # the examples stay for the team
    assert quota_for(task=febrl, team=team).used_total == 0
    assert not default_storage.exists(stored) and sent_jobs == []
    reject_held_run(run=run)  # again: nothing changes
    assert RunEvent.objects.filter(run=run, state="rejected").count() == 1
    # The team may now send the file again (it is held again, as it is the same junk).
    again = submitted(febrl, team, participant, JUNK)
    assert again.state == Run.State.HELD
