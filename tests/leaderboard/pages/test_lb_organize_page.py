"""The organizer page: who may open it, settings through ``update_task`` with field errors,
budget spent and remaining, cost per run, exports of verified items."""

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.forms.models import model_to_dict
from django.urls import reverse
from django.utils import timezone

from leaderboard.forms import TASK_SETTING_FIELDS
from leaderboard.models import Item, Run, Task

pytestmark = pytest.mark.django_db


def settings_data(task, **changes):
    data = {k: ("" if v is None else v)
            for k, v in model_to_dict(task, fields=TASK_SETTING_FIELDS).items()}
    data.update(changes)
    return data


def test_organize_page_access(client, board_world):
    url = reverse("task_organize", args=["ner"])
    assert client.get(url).status_code == 302
    client.force_login(board_world["alice"])
    assert client.get(url).status_code == 403
    client.force_login(board_world["org"])
    assert client.get(url).status_code == 200
    staff = get_user_model().objects.create_user("staffer", is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 200
    assert client.get(reverse("task_organize", args=["nope"])).status_code == 404


def test_budget_and_cost_per_run(client, board_world):
    task = board_world["task"]
    Task.objects.filter(pk=task.pk).update(label_budget=1000)
    Run.objects.filter(pk=board_world["runs"]["a1"].pk).update(n_requested=300, n_verified=250)
    Run.objects.filter(pk=board_world["runs"]["b1"].pk).update(n_requested=100, n_verified=100)
    client.force_login(board_world["org"])
    html = client.get(reverse("task_organize", args=["ner"])).content.decode()
    assert "400 items requested for runs (40.0%)" in html
    assert "600 items" in html  # remaining
    assert "75.0%" in html and "25.0%" in html
    assert "/annotate/ner/queue/" in html
    assert reverse("verified_items_csv", args=["ner"]) in html


def test_settings_save_through_the_service(client, board_world):
    task = board_world["task"]
    client.force_login(board_world["org"])
    response = client.post(reverse("task_organize", args=["ner"]),
                           settings_data(task, title="New title", label_budget=500,
                                         gold_rate=0.1))
    assert response.status_code == 302
    task.refresh_from_db()
    assert (task.title, task.label_budget, task.gold_rate) == ("New title", 500, 0.1)


def test_bad_settings_are_400_with_field_errors_and_nothing_saved(client, board_world):
    task = board_world["task"]
    client.force_login(board_world["org"])
    response = client.post(reverse("task_organize", args=["ner"]),
                           settings_data(task, confidence=2.0, title="Changed"))
    assert response.status_code == 400
    assert 'class="field has-error"' in response.content.decode()
    response = client.post(reverse("task_organize", args=["ner"]),
                           settings_data(task, state="draft"))
    assert response.status_code == 400
    assert "the task has runs; close it instead" in response.content.decode()
    task.refresh_from_db()
    assert task.title == "Entity linking" and task.state == "open" and task.confidence == 0.95


def test_verified_items_csv(client, board_world):
    Item.objects.filter(task=board_world["task"], index__in=[0, 1]).update(
        label=True, verified_at=timezone.now(), label_seq=1)
    Item.objects.filter(task=board_world["task"], index=2).update(
        label=False, verified_at=timezone.now(), label_seq=2)
    url = reverse("verified_items_csv", args=["ner"])
    client.force_login(board_world["alice"])
    assert client.get(url).status_code == 403
    client.force_login(board_world["org"])
    response = client.get(url)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["key"], r["label"]) for r in rows] == [("k0", "true"), ("k1", "true"),
                                                      ("k2", "false")]
