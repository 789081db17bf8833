"""The organize pages' forms and figures: who may open them, settings through ``update_task``
with field errors (the Settings section, and the whole form posted to the overview as before it
had sections), the dates (the Phases section), budget spent and remaining and cost per run (the
Board section), exports of verified items. The sections themselves, their navigation and the
refusal banner: test_lb_organize_sections.py."""

import csv
import io
import re
import uuid
from datetime import UTC, timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.forms.models import model_to_dict
from django.urls import reverse
from django.utils import timezone

from annotation.models import GoldAnswer, GoldItem
from annotation.services import ask_again, request_verification, submit_judgment
from leaderboard.forms import PHASE_FIELDS as PHASES
from leaderboard.forms import TASK_SETTING_FIELDS
from leaderboard.models import Item, LabelModelFit, Run, Task

from pipeline_support import annotator

pytestmark = pytest.mark.django_db


def settings_data(task, **changes):
    data = {
        k: ("" if v is None else v)
        for k, v in model_to_dict(task, fields=TASK_SETTING_FIELDS).items()
    }
    data.update(changes)
    return data


def test_organize_page_access(client, board_world):
    url = reverse("task_organize", args=["ner"])
    assert client.get(url).status_code == 302
    client.force_login(board_world["alice"])
    assert client.get(url).status_code == 403
    client.force_login(board_world["org"])
    assert client.get(url).status_code == 200
    client.force_login(get_user_model().objects.create_user("staffer", is_staff=True))
    assert client.get(url).status_code == 403  # staff status grants no organizer rights
    client.force_login(get_user_model().objects.create_superuser("root"))
    assert client.get(url).status_code == 200
    assert client.get(reverse("task_organize", args=["nope"])).status_code == 404


def test_budget_counts_judgments_gold_answers_included_and_runs_their_draws(client, board_world):
    task = board_world["task"]
    Task.objects.filter(pk=task.pk).update(label_budget=1000)
    items = list(task.items.order_by("index"))
    # Four items drawn with two judgments each, one further look: 9 judgments asked.
    request_verification(task=task, item_ids=[it.pk for it in items[:4]], judgments=2)
    ask_again(task=task, item_ids=[items[0].pk], seen_version=0)
    ann, other = annotator(task, "ann"), annotator(task, "other")
    for user, item in ((ann, items[0]), (other, items[0]), (ann, items[1])):
        submit_judgment(request_id=item.verification_request.pk, annotator=user, answer="correct")
    # A gold answer is one more judgment asked and in; a "can't tell" on gold is none.
    gold = GoldItem.objects.create(task=task, item=items[5], answer=True)
    GoldAnswer.objects.create(
        gold=gold, annotator=ann, client_id=uuid.uuid4(), answer="incorrect", correct=False
    )
    GoldAnswer.objects.create(
        gold=gold, annotator=other, client_id=uuid.uuid4(), answer="cannot_tell", correct=None
    )
    Run.objects.filter(pk=board_world["runs"]["a1"].pk).update(n_requested=300, n_verified=250)
    Run.objects.filter(pk=board_world["runs"]["b1"].pk).update(n_requested=100, n_verified=100)
    client.force_login(board_world["org"])
    html = client.get(reverse("organize_board", args=["ner"])).content.decode()
    spent = re.search(r'<dd id="budget-spent">(.*?)</dd>', html, re.S).group(1)
    assert spent == (
        "10 judgments asked, gold answers included (1.0%); 4 in; 2 distinct items judged"
    )
    assert '<dd id="budget-remaining">990 judgments</dd>' in html
    assert "75.0%" in html and "25.0%" in html  # of the 400 items the runs drew
    assert "/annotate/ner/queue/" in html
    assert reverse("verified_items_csv", args=["ner"]) in html


def test_settings_save_through_the_service(client, board_world):
    task = board_world["task"]
    client.force_login(board_world["org"])
    response = client.post(
        reverse("task_organize", args=["ner"]),
        settings_data(task, title="New title", label_budget=500, gold_rate=0.1),
    )
    assert response.status_code == 302
    task.refresh_from_db()
    assert (task.title, task.label_budget, task.gold_rate) == ("New title", 500, 0.1)


def test_bad_settings_are_400_with_field_errors_and_nothing_saved(client, board_world):
    task = board_world["task"]
    client.force_login(board_world["org"])
    response = client.post(
        reverse("task_organize", args=["ner"]), settings_data(task, confidence=2.0, title="Changed")
    )
    assert response.status_code == 400
    assert 'class="field has-error"' in response.content.decode()
    response = client.post(
        reverse("task_organize", args=["ner"]), settings_data(task, state="draft")
    )
    assert response.status_code == 400
    assert "the task has runs; close it instead" in response.content.decode()
    task.refresh_from_db()
    assert task.title == "Entity linking" and task.state == "open" and task.confidence == 0.95


def test_verified_items_csv(client, board_world, snapshots):
    now = timezone.now()
    for index in range(3):
        Item.objects.filter(task=board_world["task"], index=index).update(
            verified_at=now + timedelta(seconds=index)
        )
    LabelModelFit.objects.create(
        task=board_world["task"],
        snapshot=snapshots.standard(board_world),
        indices=np.array([0, 1], dtype="<i8").tobytes(),
        values=np.array([0.99, 0.25], dtype="<f8").tobytes(),
        judgments=np.array([1, 3], dtype="<i4").tobytes(),
        says_correct=np.array([1, 1], dtype="<i4").tobytes(),
    )
    url = reverse("verified_items_csv", args=["ner"])
    client.force_login(board_world["alice"])
    assert client.get(url).status_code == 403
    client.force_login(board_world["org"])
    response = client.get(url)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    # Item k2 was judged after the latest estimation: no posterior yet.
    assert [(r["key"], r["posterior"], r["judgments"]) for r in rows] == [
        ("k0", "0.99", "1"),
        ("k1", "0.25", "3"),
        ("k2", "", ""),
    ]


# -- phases: dates in UTC, validated as a whole --------------------------------------------------
def phases_data(task, **changes):
    return {name: value for name, value in settings_data(task, **changes).items() if name in PHASES}


@pytest.mark.parametrize("section", ["organize_phases", "task_organize"])
def test_the_organizer_sets_the_dates_in_utc_or_with_an_offset(client, board_world, section):
    """On the Phases section, or with the whole settings form posted to the overview."""
    task = board_world["task"]
    client.force_login(board_world["org"])
    url = reverse(section, args=["ner"])
    page = client.get(reverse("organize_phases", args=["ner"])).content.decode()
    assert "Submissions close at (UTC)" in page
    assert 'name="title"' not in page  # the other settings are the Settings section's
    data = (phases_data if section == "organize_phases" else settings_data)(
        task,
        submissions_open_at="2026-12-01 09:00",
        submissions_close_at="2026-12-08T12:00:00+02:00",
        reveal_at="2026-12-09 10:00",
        accept_late_runs="",
    )
    response = client.post(url, data)
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "organize_phases" if section == "organize_phases" else "organize_settings", args=["ner"]
    )
    task.refresh_from_db()
    assert f"{task.submissions_open_at.astimezone(UTC):%Y-%m-%d %H:%M}" == "2026-12-01 09:00"
    assert f"{task.submissions_close_at.astimezone(UTC):%Y-%m-%d %H:%M}" == "2026-12-08 10:00"
    assert task.accept_late_runs is False


@pytest.mark.parametrize(
    ("changes", "field_error"),
    [
        (
            {"submissions_open_at": "2026-12-08 10:00", "submissions_close_at": "2026-12-01 10:00"},
            "must be after submissions_open_at",
        ),
        (
            {"submissions_close_at": "2026-12-08 10:00", "reveal_at": "2026-12-07 10:00"},
            "may not be before submissions_close_at",
        ),
        ({"reveal_at": "soon"}, "Enter a valid date/time."),
    ],
)
def test_bad_dates_on_the_organize_page_are_a_400_that_changes_nothing(
    client, board_world, changes, field_error
):
    task = board_world["task"]
    client.force_login(board_world["org"])
    response = client.post(reverse("organize_phases", args=["ner"]), phases_data(task, **changes))
    assert response.status_code == 400
    assert field_error in response.content.decode()
    task.refresh_from_db()
    assert (task.submissions_open_at, task.submissions_close_at, task.reveal_at) == (None,) * 3


def test_a_date_set_to_the_second_survives_saving_other_settings(client, board_world):
    task = board_world["task"]
    close = timezone.now().replace(microsecond=123) + timedelta(days=3)
    Task.objects.filter(pk=task.pk).update(submissions_close_at=close)
    task.refresh_from_db()
    client.force_login(board_world["org"])
    url = reverse("organize_phases", args=["ner"])
    shown = re.search(
        r'name="submissions_close_at" value="([^"]+)"', client.get(url).content.decode()
    )
    assert shown.group(1) == f"{close:%Y-%m-%d %H:%M}"
    data = phases_data(task, reveal_at="2099-01-01 00:00", submissions_close_at=shown.group(1))
    assert client.post(url, data).status_code == 302
    settings_page = reverse("organize_settings", args=["ner"])
    data = {k: v for k, v in settings_data(task, title="Renamed").items() if k not in PHASES}
    assert client.post(settings_page, data).status_code == 302
    # The whole form, as the overview took it before it had sections.
    overview = reverse("task_organize", args=["ner"])
    data = settings_data(task, title="Renamed again", submissions_close_at=shown.group(1))
    assert client.post(overview, data).status_code == 302
    task.refresh_from_db()
    assert (task.title, task.submissions_close_at) == ("Renamed again", close)
