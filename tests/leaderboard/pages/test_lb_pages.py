"""The public and participant pages: task list, leaderboard, run upload, run lists, run detail."""

import gzip

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from leaderboard.models import Estimate, Run, RunEvent, Task
from leaderboard.services.ingest import ingest_run

from pipeline_support import add_items, add_run, make_task, make_team
from worlds import stored_snapshot

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


@pytest.fixture(autouse=True)
def sent(sent_messages):
    return sent_messages


@pytest.fixture
def world():
    User = get_user_model()
    alice, bob, org = (User.objects.create_user(n, password="pw") for n in ("alice", "bob", "org"))
    task = make_task(slug="ner", title="Entity linking", state=Task.State.OPEN)
    task.organizers.add(org)
    add_items(task, 5)
    team_a, team_b = make_team("Team A", alice), make_team("Team B", bob)
    run_a = add_run(task, team_a, [0, 1, 2], name=XSS)
    run_b = add_run(task, team_b, [1, 2, 3], name="bob-run")
    return {
        "task": task,
        "alice": alice,
        "bob": bob,
        "org": org,
        "team_a": team_a,
        "team_b": team_b,
        "run_a": run_a,
        "run_b": run_b,
    }


def metric(value, low, high, labels=40):
    return {"value": value, "low": low, "high": high, "labels_used": labels, "method": "wilson"}


def snapshot(task, runs_f1, version=1, published=True):
    rows = [
        {
            "run": run.pk,
            "name": run.name,
            "team": run.team.name,
            "state": run.state,
            "provisional": run.state != "scored",
            "precision": metric(0.8, 0.7, 0.9),
            "recall": metric(0.6, 0.5, 0.7),
            "f1": metric(f1, None if f1 is None else f1 - 0.05, None if f1 is None else f1 + 0.05),
        }
        for run, f1 in runs_f1
    ]
    snap = stored_snapshot(
        task,
        rows,
        version=version,
        published=published,
        engine_version="x",
        labels_version=1,
        reference_version=1,
        n_labels=40,
        n_reference=12,
    )
    for run, f1 in runs_f1:
        for m, v in (("precision", 0.8), ("recall", 0.6), ("f1", f1)):
            Estimate.objects.create(
                snapshot=snap,
                run=run,
                metric=m,
                value=v,
                low=0.1,
                high=0.95,
                level=0.95,
                labels_used=40,
                method="wilson",
            )
    return snap


# --- home and board -----------------------------------------------------------------------------


def test_home_lists_visible_tasks_with_run_counts(client, world):
    make_task(slug="secret", title="Draft task", state=Task.State.DRAFT)
    html = client.get(reverse("home")).content.decode()
    assert "Entity linking" in html and reverse("task_board", args=["ner"]) in html
    assert "Draft task" not in html
    assert '<td class="num">2</td>' in html
    assert reverse("login") in html


def test_board_empty_state(client, world):
    response = client.get(reverse("task_board", args=["ner"]))
    assert response.status_code == 200
    assert "No results yet" in response.content.decode()


def test_unknown_task_is_a_404_page(client, world):
    response = client.get(reverse("task_board", args=["nope"]))
    assert response.status_code == 404
    assert "Page not found" in response.content.decode()


def test_draft_task_is_hidden_from_the_public(client, world):
    Task.objects.filter(pk=world["task"].pk).update(state=Task.State.DRAFT)
    assert client.get(reverse("task_board", args=["ner"])).status_code == 404
    client.force_login(world["org"])
    assert client.get(reverse("task_board", args=["ner"])).status_code == 200


def test_board_shows_latest_published_snapshot_ranked_by_f1_escaped(client, world):
    snapshot(world["task"], [(world["run_a"], 0.5), (world["run_b"], 0.712)], version=1)
    snapshot(
        world["task"], [(world["run_a"], 0.1), (world["run_b"], 0.2)], version=2, published=False
    )
    html = client.get(reverse("task_board", args=["ner"])).content.decode()
    assert "Snapshot <strong>v1</strong>" in html and "95% confidence" in html
    assert "0.712" in html and "[0.662, 0.762]" in html
    assert html.index("bob-run") < html.index("&lt;script&gt;alert(1)&lt;/script&gt;")
    assert XSS not in html
    assert "provisional" in html and "wilson" in html
    assert '<span class="value">0.100' not in html  # the unpublished v2


def test_board_row_without_f1_comes_last(client, world):
    snapshot(world["task"], [(world["run_b"], None), (world["run_a"], 0.3)])
    html = client.get(reverse("task_board", args=["ner"])).content.decode()
    assert html.index("alert(1)") < html.index("bob-run")
    assert "—" in html


# --- submit -------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["task_board", "task_snapshots", "task_runs", "submit_run"])
def test_every_task_page_shows_its_organizer_the_organizer_tabs(client, world, page):
    url = reverse(page, args=[world["task"].slug])
    organize = reverse("task_organize", args=[world["task"].slug])
    client.force_login(world["org"])
    html = client.get(url).content.decode()
    assert f'href="{organize}"' in html and "All runs" in html
    client.force_login(world["alice"])
    html = client.get(url).content.decode()
    assert f'href="{organize}"' not in html and "My runs" in html


def test_submit_requires_login(client, world):
    response = client.get(reverse("submit_run", args=["ner"]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_submit_form_and_success_redirects_to_the_run(
    client, world, sent, django_capture_on_commit_callbacks
):
    client.force_login(world["alice"])
    page = client.get(reverse("submit_run", args=["ner"]))
    assert page.status_code == 200 and 'name="csrfmiddlewaretoken"' in page.content.decode()
    upload = SimpleUploadedFile("preds.tsv", b"k0\t0.9\nk9\t0.4\n")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("submit_run", args=["ner"]),
            {"file": upload, "name": "my run", "description": "first"},
        )
    run = Run.objects.get(name="my run")
    assert response.status_code == 302
    assert response["Location"] == reverse("run_detail", args=[run.pk])
    assert run.team == world["team_a"] and run.state == "received"
    assert sent == [("evaluation.ingest_run", [run.pk])]
    html = client.get(response["Location"]).content.decode()
    assert 'http-equiv="refresh"' in html and "the file is being validated" in html
    ingest_run(run.pk)  # the worker
    run.refresh_from_db()
    assert run.state == "queued" and run.n_predictions == 2
    assert 'http-equiv="refresh"' not in client.get(response["Location"]).content.decode()


def test_submit_rejected_file_lists_problems_by_line(client, world):
    client.force_login(world["alice"])
    upload = SimpleUploadedFile("bad.tsv", b"k0\t0.9\nk1\tnot-a-number\nk2\t7\n")
    response = client.post(reverse("submit_run", args=["ner"]), {"file": upload, "name": "x"})
    run = Run.objects.get(name="x")
    assert response.status_code == 302 and run.state == "received"
    ingest_run(run.pk)
    html = client.get(response["Location"]).content.decode()
    assert "Rejected" in html or "rejected" in html
    assert "line 2" in html and "line 3" in html
    assert Run.objects.get(name="x").state == "rejected"


def test_page_uploads_share_the_api_upload_throttle(client, world, monkeypatch):
    from django.core.cache import cache
    from rest_framework.test import APIClient
    from rest_framework.throttling import ScopedRateThrottle

    cache.clear()
    monkeypatch.setattr(
        ScopedRateThrottle,
        "THROTTLE_RATES",
        {**ScopedRateThrottle.THROTTLE_RATES, "uploads": "3/hour"},
    )
    client.force_login(world["alice"])
    for i in range(2):
        upload = SimpleUploadedFile("p.tsv", b"k%d\tbad\n" % i)
        assert client.post(reverse("submit_run", args=["ner"]), {"file": upload}).status_code == 302
    api = APIClient()
    api.force_authenticate(world["alice"])
    upload = SimpleUploadedFile("p.tsv", b"k7\t0.5\n")
    assert api.post("/api/tasks/ner/runs/", {"file": upload}, format="multipart").status_code == 202
    n = Run.objects.count()
    upload = SimpleUploadedFile("p.tsv", b"k8\tbad\n")
    response = client.post(reverse("submit_run", args=["ner"]), {"file": upload})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "too many uploads: try again in" in response.content.decode()
    assert Run.objects.count() == n  # nothing stored
    cache.clear()


@pytest.mark.parametrize(
    "again", [b"k0\t0.9\n", gzip.compress(b"k0\t0.9\r\n", mtime=0)], ids=["same", "gzip-crlf"]
)
def test_submit_the_same_file_twice_points_to_the_first_run(client, world, again):
    """The same content again, as it was or gzipped with other line ends."""
    client.force_login(world["alice"])
    for name, data in (("first", b"k0\t0.9\n"), ("again", again)):
        upload = SimpleUploadedFile("p.tsv.gz" if data[:2] == b"\x1f\x8b" else "p.tsv", data)
        response = client.post(reverse("submit_run", args=["ner"]), {"file": upload, "name": name})
    first = Run.objects.get(name="first")
    html = response.content.decode()
    assert response.status_code == 409 and not Run.objects.filter(name="again").exists()
    assert f"already submitted as run {first.pk}" in html
    assert reverse("run_detail", args=[first.pk]) in html


def test_submit_to_closed_task_is_409(client, world):
    Task.objects.filter(pk=world["task"].pk).update(state=Task.State.CLOSED)
    client.force_login(world["alice"])
    upload = SimpleUploadedFile("p.tsv", b"k0\t0.9\n")
    response = client.post(reverse("submit_run", args=["ner"]), {"file": upload})
    assert response.status_code == 409
    assert "accepts runs only while it is open" in response.content.decode()


def test_submit_while_the_object_store_is_down_is_503_with_the_reason(
    client, world, unreachable_object_store
):
    client.force_login(world["alice"])
    runs = Run.objects.count()
    upload = SimpleUploadedFile("p.tsv", b"k0\t0.9\n")
    response = client.post(reverse("submit_run", args=["ner"]), {"file": upload})
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert "the file storage is unavailable" in response.content.decode()
    assert Run.objects.count() == runs  # nothing stored or counted


def test_submit_over_quota_is_429(client, world):
    Task.objects.filter(pk=world["task"].pk).update(max_runs_per_team=1)
    client.force_login(world["alice"])
    upload = SimpleUploadedFile("p.tsv", b"k0\t0.9\n")
    response = client.post(reverse("submit_run", args=["ner"]), {"file": upload})
    assert response.status_code == 429


def test_submit_for_a_team_one_is_not_in_is_refused(client, world):
    client.force_login(world["alice"])
    world["team_b"].members.add(world["alice"])
    world["team_b"].members.remove(world["alice"])
    upload = SimpleUploadedFile("p.tsv", b"k0\t0.9\n")
    response = client.post(
        reverse("submit_run", args=["ner"]), {"file": upload, "team": world["team_b"].pk}
    )
    assert response.status_code == 400  # not a choice of the form
    assert not Run.objects.filter(team=world["team_b"]).exclude(name="bob-run").exists()


def test_user_without_team_gets_403_and_an_explanation(client, world):
    client.force_login(world["org"])
    response = client.get(reverse("submit_run", args=["ner"]))
    assert response.status_code == 403
    assert "not a member of any team" in response.content.decode()


def test_team_select_when_in_several_teams(client, world):
    world["team_b"].members.add(world["alice"])
    client.force_login(world["alice"])
    html = client.get(reverse("submit_run", args=["ner"])).content.decode()
    assert "<select" in html and "Team A" in html and "Team B" in html
    upload = SimpleUploadedFile("p.tsv", b"k0\t0.9\n")
    client.post(
        reverse("submit_run", args=["ner"]),
        {"file": upload, "team": world["team_b"].pk, "name": "via-b"},
    )
    assert Run.objects.get(name="via-b").team == world["team_b"]


# --- runs list and run detail -------------------------------------------------------------------


def test_runs_page_shows_own_team_only_and_progress(client, world):
    Run.objects.filter(pk=world["run_a"].pk).update(
        n_requested=480, n_verified=312, reason="waiting for labels"
    )
    client.force_login(world["alice"])
    html = client.get(reverse("task_runs", args=["ner"])).content.decode()
    assert "312 of 480 items verified" in html and "waiting for labels" in html
    assert "&lt;script&gt;" in html and XSS not in html
    assert "bob-run" not in html


def test_runs_page_shows_all_runs_to_organizers(client, world):
    client.force_login(world["org"])
    html = client.get(reverse("task_runs", args=["ner"])).content.decode()
    assert "bob-run" in html and "alert(1)" in html and "All runs" in html


def test_runs_page_requires_login(client, world):
    assert client.get(reverse("task_runs", args=["ner"])).status_code == 302


def test_run_detail_permissions(client, world):
    url = reverse("run_detail", args=[world["run_a"].pk])
    assert client.get(url).status_code == 302  # anonymous: log in first
    client.force_login(world["bob"])
    assert client.get(url).status_code == 404  # another team
    client.force_login(world["org"])
    assert client.get(url).status_code == 200
    client.force_login(world["alice"])
    assert client.get(url).status_code == 200
    client.force_login(get_user_model().objects.create_user("staff", is_staff=True))
    assert client.get(url).status_code == 404  # staff status grants no organizer rights
    client.force_login(get_user_model().objects.create_superuser("root"))
    assert client.get(url).status_code == 200
    assert client.get(reverse("run_detail", args=[99999])).status_code == 404


def test_run_detail_shows_events_problems_and_published_estimates(client, world):
    run = world["run_a"]
    RunEvent.objects.create(run=run, state="queued", reason="3 predictions")
    Run.objects.filter(pk=run.pk).update(
        errors=[{"line": 7, "message": "score <b>x</b> is not a number"}], error_count=1
    )
    snapshot(world["task"], [(run, 0.55)], version=1)
    snapshot(world["task"], [(run, 0.25)], version=2, published=False)
    client.force_login(world["alice"])
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "3 predictions" in html
    assert "line 7" in html and "score &lt;b&gt;x&lt;/b&gt;" in html
    assert "Snapshot v1" in html and "0.550" in html and "0.250" not in html
    assert XSS not in html
    client.force_login(world["org"])
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "Snapshot v2" in html and "(not published)" in html


def test_rejected_upload_appears_on_the_run_page(client, world):
    client.force_login(world["alice"])
    upload = SimpleUploadedFile("bad.tsv", b"k0\tnope\n")
    client.post(reverse("submit_run", args=["ner"]), {"file": upload, "name": "broken"})
    run = Run.objects.get(name="broken")
    ingest_run(run.pk)
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "rejected" in html and "line 1" in html


# --- login --------------------------------------------------------------------------------------


def test_login_page_and_logout(client, world):
    page = client.get(reverse("login"))
    assert page.status_code == 200 and 'name="csrfmiddlewaretoken"' in page.content.decode()
    response = client.post(reverse("login"), {"login": "alice", "password": "pw"})
    assert response.status_code == 302
    html = client.get(reverse("home")).content.decode()
    assert "Log out" in html and "alice" in html
    response = client.post(reverse("account_logout"))
    assert response.status_code in (200, 302)
    assert "Log in" in client.get(reverse("home")).content.decode()


def test_bad_login_shows_an_error(client, world):
    response = client.post(reverse("login"), {"login": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "not correct" in response.content.decode()


def test_several_teams_need_a_choice(client, world):
    world["team_b"].members.add(world["alice"])
    client.force_login(world["alice"])
    upload = SimpleUploadedFile("p.tsv", b"k0\t0.9\n")
    response = client.post(reverse("submit_run", args=["ner"]), {"file": upload})
    assert response.status_code == 400
    assert "Choose the team" in response.content.decode()


def test_forms_need_the_csrf_token(world):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(world["alice"])
    upload = SimpleUploadedFile("p.tsv", b"k0\t0.9\n")
    response = client.post(reverse("submit_run", args=["ner"]), {"file": upload})
    assert response.status_code == 403
    assert not Run.objects.filter(file_name="p.tsv").exists()


def test_submit_to_unknown_task_is_404(client, world):
    client.force_login(world["alice"])
    assert client.get(reverse("submit_run", args=["nope"])).status_code == 404
    assert client.get(reverse("task_runs", args=["nope"])).status_code == 404
