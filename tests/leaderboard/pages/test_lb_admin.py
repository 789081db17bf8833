"""Every model's admin list and change page renders; organizers see only their tasks; the packed
predictions are shown as sizes, never as bytes."""

import io
import uuid
from datetime import timedelta

import numpy as np
import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from annotation.models import (
    AnnotatorPause,
    Assignment,
    GoldAnswer,
    GoldItem,
    Judgment,
    VerificationRequest,
)
from annotation.services import request_verification, submit_judgment
from evaluation.models import Draw, Look, PlanRound, PoolSamplingRecord
from leaderboard.models import (
    ApiToken,
    Estimate,
    LabelModelFit,
    LeaderboardSnapshot,
    Notification,
    PoolRunOutputs,
    ReferenceCandidate,
    ReferenceItem,
    ReferenceSample,
    RunCurve,
    RunEvent,
    Task,
)
from leaderboard.services.notifications import set_mail_preferences
from leaderboard.services.organizer_uploads import receive_upload
from leaderboard.services.task_files import add_task_file
from leaderboard.services.task_roles import invite_to_task
from leaderboard.services.tasks import update_task
from leaderboard.services.teams import invite_to_team, request_approval
from leaderboard.services.terms import accept_terms
from leaderboard.services.tokens import create_token

from pipeline_support import add_items, add_run, annotator, make_task, make_team
from worlds import stored_snapshot

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("sent_messages")]

# The task form's kind, measures, data access and quality-control fields (the checkbox
# ``board_held`` is left unticked).
MORE_SETTINGS = {
    "kind": "open",
    "measures": '["precision", "recall", "f1"]',
    "f_beta": 1.0,
    "data_access": "terms_accepted",
    "annotator_daily_cap": "",
    "gold_rate": 0.05,
    "gold_min_accuracy": 0.7,
    "gold_min_answers": 10,
}


@pytest.fixture
def data():
    task = make_task(slug="adm", title="Admin task")
    items = add_items(task, 4)
    team = make_team("Team X")
    run = add_run(task, team, [0, 1, 2], scores=[0.9, 0.5, 0.1], name="run-x")
    RunEvent.objects.create(run=run, state="queued", reason="ok")
    PoolRunOutputs.objects.create(
        run=run,
        scores=np.array([0.9, 0.5, 0.1, 0.0], "<f8").tobytes(),
        labels=np.array([1, 1, 0, 0], np.uint8).tobytes(),
    )
    ReferenceItem.objects.create(task=task, item=items[0], group="g")
    ReferenceCandidate.objects.create(task=task, item=items[0], document="g")
    ReferenceSample.objects.create(task=task, seed=1, size=1, documents=["g"], n_documents=1)
    plan = PlanRound.objects.create(
        task=task, run=run, round=1, status="sample", engine_version="t"
    )
    Draw.objects.create(plan_round=plan, item=items[1], inclusion=0.5)
    PoolSamplingRecord.objects.create(
        task=task, inclusion=np.array([0.1, 0.5, 0.1, 0.1], "<f8").tobytes(), rounds=1
    )
    request_verification(task=task, item_ids=[items[1].pk])
    submit_judgment(
        request_id=VerificationRequest.objects.get().pk, annotator=annotator(task), answer="correct"
    )
    snap = stored_snapshot(
        task,
        engine_version="t",
        labels_version=1,
        reference_version=1,
        n_labels=1,
        n_reference=1,
    )
    Estimate.objects.create(
        snapshot=snap,
        run=run,
        metric="f1",
        value=0.5,
        low=0.4,
        high=0.6,
        level=0.95,
        labels_used=1,
        method="m",
    )
    RunCurve.objects.create(snapshot=snap, run=run, data={"thresholds": [0.5]})
    Look.objects.create(plan_round=plan, item=items[1])
    LabelModelFit.objects.create(
        task=task,
        snapshot=snap,
        indices=np.array([1], "<i8").tobytes(),
        values=np.array([0.97], "<f8").tobytes(),
        judgments=np.array([1], "<i4").tobytes(),
        says_correct=np.array([1], "<i4").tobytes(),
        annotators=[
            {
                "annotator": 1,
                "sensitivity": [0.9, 0.8, 0.95],
                "specificity": [0.9, 0.8, 0.95],
                "judgments": 1,
                "gold_judgments": 1,
                "weight": 2.2,
            }
        ],
    )
    gold = GoldItem.objects.create(task=task, item=items[3], answer=True)
    user = annotator(task)
    lease = Assignment.objects.create(
        task=task, annotator=user, gold=gold, expires_at=timezone.now()
    )
    GoldAnswer.objects.create(
        gold=gold,
        annotator=user,
        assignment=lease,
        client_id=uuid.uuid4(),
        answer="correct",
        correct=True,
    )
    AnnotatorPause.objects.create(task=task, annotator=user, reason="review")
    create_token(user=user)
    team.members.add(user)
    invite_to_team(team=team, by=user)
    invite_to_task(task=task, role="annotator", by=user)
    approval = request_approval(task=task, team=team, by=user)
    Notification.objects.create(kind="team_request", recipient=user, approval=approval)
    set_mail_preferences(user=user, run_finished=False)
    update_task(task=task, terms="Terms.")
    accept_terms(task=task, team=team, user=user)
    add_task_file(task=task, user=user, upload=io.BytesIO(b"a\n"), file_name="a.tsv")
    former = get_user_model().objects.create_user("former")
    team.members.add(former)
    team.members.remove(former)  # a TeamDeparture
    receive_upload(
        task=task, user=user, kind="gold", upload=io.BytesIO(b"k0\tcorrect\n"), file_name="g.tsv"
    )
    return task


def test_every_registered_model_has_working_list_and_change_pages(client, data):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    ours = [
        m
        for app in ("leaderboard", "annotation", "evaluation")
        for m in apps.get_app_config(app).get_models()
    ]
    assert not [m for m in ours if m not in admin.site._registry], "models without an admin"
    for model in ours:
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        response = client.get(reverse(f"{prefix}_changelist"))
        assert response.status_code == 200, model
        obj = model.objects.first()
        assert obj is not None, model
        response = client.get(reverse(f"{prefix}_change", args=[obj.pk]))
        assert response.status_code == 200, model


def test_predictions_admin_shows_sizes_not_bytes(client, data):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    html = client.get(reverse("admin:leaderboard_runpredictions_changelist")).content.decode()
    assert ">24<" in html  # 3 int64 indices, 3 float64 scores
    raw = np.array([0.9], dtype=np.float64).tobytes()
    assert repr(raw) not in html


def test_organizer_sees_only_their_tasks(client, data):
    other = make_task(slug="other", title="Other task")
    assert other.pk
    org = get_user_model().objects.create_user("org", is_staff=True)
    org.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["view_task", "change_task", "add_task", "view_run", "view_judgment"]
        )
    )
    data.organizers.add(org)
    client.force_login(org)
    html = client.get(reverse("admin:leaderboard_task_changelist")).content.decode()
    assert "Admin task" in html and "Other task" not in html
    assert client.get(reverse("admin:leaderboard_task_change", args=[other.pk])).status_code in (
        302,
        404,
    )
    assert client.get(reverse("admin:annotation_judgment_changelist")).status_code == 200
    response = client.post(
        reverse("admin:leaderboard_task_add"),
        {
            "slug": "mine",
            "title": "Mine",
            "description": "",
            "state": "draft",
            "question": "Q?",
            "display_template": "",
            "judgments_per_item": 1,
            "label_budget": "",
            "target_half_width": 0.05,
            "confidence": 0.95,
            "design": "default",
            "design_options": "{}",
            "max_runs_per_team": 20,
            "max_runs_per_team_per_day": 5,
            "max_upload_bytes": 1000,
            "max_predictions_per_run": 1000,
            **MORE_SETTINGS,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Task.objects.get(slug="mine").organizers.filter(pk=org.pk).exists()
    assert Judgment.objects.count() == 1


def task_add_form(**changes):
    """The admin's add-task form of a draft task "d", with ``changes``."""
    form = {
        "slug": "d",
        "title": "D",
        "description": "",
        "state": "draft",
        "question": "Q?",
        "display_template": "",
        "judgments_per_item": 1,
        "label_budget": "",
        "target_half_width": 0.05,
        "confidence": 0.95,
        "design": "default",
        "design_options": "{}",
        "max_runs_per_team": 20,
        "max_runs_per_team_per_day": 5,
        "max_upload_bytes": 1000,
        "max_predictions_per_run": 1000,
        **MORE_SETTINGS,
    }
    return {**form, **changes}


def test_task_admin_validates_the_design_and_freezes_it_once_runs_exist(client, data):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    form = task_add_form(state="open", design="nonsense")
    response = client.post(reverse("admin:leaderboard_task_add"), form)
    assert response.status_code == 200 and "unknown design" in response.content.decode()
    assert not Task.objects.filter(slug="d").exists()
    html = client.get(reverse("admin:leaderboard_task_change", args=[data.pk])).content.decode()
    assert 'name="design"' not in html  # read-only: the task has runs


def test_task_admin_refuses_design_options_nested_too_deeply_to_decode(client):
    # json.loads raises RecursionError there, which Django's JSON form field let through (a 500).
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    form = task_add_form(design_options="[" * 5000 + "]" * 5000)
    response = client.post(reverse("admin:leaderboard_task_add"), form)
    assert response.status_code == 200 and "is nested too deeply" in response.content.decode()
    assert not Task.objects.filter(slug="d").exists()


def test_publishing_a_snapshot_in_the_admin_stamps_published_at(client, data):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    snap = LeaderboardSnapshot.objects.get()
    LeaderboardSnapshot.objects.filter(pk=snap.pk).update(published=False, published_at=None)
    url = reverse("admin:leaderboard_leaderboardsnapshot_change", args=[snap.pk])
    estimate = Estimate.objects.get()
    inline = {
        "estimates-TOTAL_FORMS": 1,
        "estimates-INITIAL_FORMS": 1,
        "estimates-MIN_NUM_FORMS": 0,
        "estimates-MAX_NUM_FORMS": 1000,
        "estimates-0-id": estimate.pk,
        "estimates-0-snapshot": snap.pk,
    }
    response = client.post(url, {"published": "on", **inline})
    assert response.status_code == 302, response.content.decode()[:2000]
    snap.refresh_from_db()
    assert snap.published and snap.published_at is not None
    stamped = snap.published_at
    client.post(url, {"published": "on", **inline})
    snap.refresh_from_db()
    assert snap.published_at == stamped  # publishing again keeps the first time
    client.post(url, inline)
    snap.refresh_from_db()
    assert not snap.published and snap.published_at is None


def test_task_admin_edits_quality_control_and_hold(client, data):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    html = client.get(reverse("admin:leaderboard_task_change", args=[data.pk])).content.decode()
    for name in ("gold_rate", "gold_min_accuracy", "annotator_daily_cap", "board_held"):
        assert f'name="{name}"' in html
    html = client.get(
        reverse("admin:leaderboard_run_change", args=[data.runs.first().pk])
    ).content.decode()
    assert 'name="link"' in html


def test_api_tokens_are_listed_without_their_digest_and_cannot_be_added(client, data):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    token = ApiToken.objects.get()
    for url in (
        reverse("admin:leaderboard_apitoken_changelist"),
        reverse("admin:leaderboard_apitoken_change", args=[token.pk]),
    ):
        html = client.get(url).content.decode()
        assert token.user.get_username() in html and token.digest not in html
    assert client.get(reverse("admin:leaderboard_apitoken_add")).status_code == 403


def _task_form(task, **changes) -> dict:
    """The change form of ``task`` as the admin posts it (dates split into day and time)."""
    form = {
        "slug": task.slug,
        "title": task.title,
        "description": "",
        "state": task.state,
        "question": task.question,
        "display_template": "",
        "judgments_per_item": 1,
        "label_budget": "",
        "target_half_width": 0.05,
        "confidence": 0.95,
        "max_runs_per_team": 20,
        "max_runs_per_team_per_day": 5,
        "max_upload_bytes": 1000,
        "max_predictions_per_run": 1000,
        "accept_late_runs": "on",
        **MORE_SETTINGS,
    }
    for name in ("submissions_open_at", "submissions_close_at", "reveal_at"):
        day, _, time = changes.pop(name, " ").partition(" ")
        form[f"{name}_0"], form[f"{name}_1"] = day, time
    return {**form, **changes}


def test_task_admin_validates_the_dates_and_marks_runs_after_a_moved_deadline(client, data):
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    url = reverse("admin:leaderboard_task_change", args=[data.pk])
    html = client.get(url).content.decode()
    assert "Phases" in html and 'name="submissions_close_at_0"' in html
    response = client.post(
        url,
        _task_form(data, submissions_close_at="2026-12-08 10:00", reveal_at="2026-12-07 10:00"),
    )
    assert response.status_code == 200
    assert "may not be before submissions_close_at" in response.content.decode()
    data.refresh_from_db()
    assert data.submissions_close_at is None
    run = data.runs.get()
    moment = run.created_at - timedelta(minutes=1)
    response = client.post(url, _task_form(data, submissions_close_at=f"{moment:%Y-%m-%d %H:%M}"))
    assert response.status_code == 302, response.content.decode()[:3000]
    run.refresh_from_db()
    assert run.after_deadline is True


def test_task_admin_opens_a_task_only_when_its_checklist_is_complete(client, data):
    from django.forms.models import model_to_dict

    from pipeline_support import satisfy_checklist

    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    add = client.get(reverse("admin:leaderboard_task_add")).content.decode()
    assert '<option value="draft" selected>' in add  # a new task starts as a draft
    draft = make_task(slug="draft", title="Draft", state=Task.State.DRAFT)
    url = reverse("admin:leaderboard_task_change", args=[draft.pk])
    form = {
        k: ("" if v is None else v)
        for k, v in model_to_dict(draft).items()
        if k not in ("organizers", "annotators", "id") and not k.endswith("_applied_for")
    }
    form.update(state="open", design_options="{}", measures='["precision", "recall", "f1"]')
    response = client.post(url, form)
    assert response.status_code == 200
    assert "not ready to open: Annotators: 0 of the 2" in response.content.decode()
    assert Task.objects.get(pk=draft.pk).state == Task.State.DRAFT
    # Given what its checklist asks (the form sends the annotators again, as the admin shows
    # them), it opens.
    satisfy_checklist(draft)
    response = client.post(
        url, {**form, "annotators": list(draft.annotators.values_list("pk", flat=True))}
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Task.objects.get(pk=draft.pk).state == Task.State.OPEN


def test_task_admin_creates_a_task_as_a_draft_as_the_service_does(client, data):
    # A new task has none of what opening needs: the service refuses to create it open, and so
    # does the admin (it used to accept it, its model's default state being open).
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    form = {**_task_form(Task(slug="fresh", title="Fresh", state="open")), "design": "default"}
    response = client.post(reverse("admin:leaderboard_task_add"), form)
    assert response.status_code == 200
    assert "a new task starts as a draft" in response.content.decode()
    assert not Task.objects.filter(slug="fresh").exists()
    response = client.post(reverse("admin:leaderboard_task_add"), {**form, "state": "draft"})
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Task.objects.get(slug="fresh").state == Task.State.DRAFT


def test_packed_arrays_are_shown_by_their_size_and_never_loaded(client, data):
    root = get_user_model().objects.create_superuser("root", password="x")
    client.force_login(root)
    record = PoolSamplingRecord.objects.get()
    html = client.get(
        reverse("admin:evaluation_poolsamplingrecord_change", args=[record.pk])
    ).content.decode()
    assert ">32<" in html  # 4 float64 inclusion probabilities
    assert 'name="inclusion"' not in html
    request = RequestFactory().get("/")
    request.user = root
    rows = admin.site._registry[PoolSamplingRecord].get_queryset(request)
    assert rows.query.deferred_loading == ({"inclusion"}, True)
