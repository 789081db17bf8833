"""`manage.py demo --no-serve` sets up the demo task from the febrl4 slice, idempotently; the
process supervisor behind `manage.py demo` stops its children."""

import json
import sys
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from seeded_campaigns import DEMO_ANSWERS, demo_campaign, demo_true_scores, snapshot_intervals

from evaluation.management.commands._demo_processes import Child, Supervisor
from evaluation.management.commands.demo import (
    REFERENCE_SIZE,
    RUNS,
    TASK_SLUG,
    Command,
    blind_payload,
)
from leaderboard import selectors
from leaderboard.kinds import kind_for
from leaderboard.models import Item, ReferenceItem, Run, Task

# How many of the demo board's intervals (after its 150 answers and at the end: 24) may miss
# their run's true score. Measured over 35 seeded campaigns with the queue's shuffled serving
# order (`STUDY_SEEDS=50 python -m pytest -p tests.conftest bench/serving_order_study.py -k demo`
# then `python bench/serving_order_study.py --power demo=8`; docs/BENCHMARKS.md): coverage
# 98.8% and 97.9%, 0.40 misses per campaign (variance 1.01: misses cluster, intervals share
# answers and the reference sample); a beta-binomial fitted to it exceeds 8 with probability
# <= 0.001. A bias of 0.05 on every estimate makes 29 (+) to 34 (-) of the 35 campaigns miss more.
DEMO_MISSES_ALLOWED = 8

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def sent(sent_messages):
    return sent_messages


def demo() -> str:
    out = StringIO()
    call_command("demo", "--no-serve", stdout=out, stderr=StringIO())
    return out.getvalue()


def test_demo_sets_up_task_items_reference_and_runs(django_capture_on_commit_callbacks, sent):
    with django_capture_on_commit_callbacks(execute=True):
        out = demo()
    task = Task.objects.get(slug=TASK_SLUG)
    assert task.state == "open" and task.n_items == 2872
    assert Item.objects.filter(task=task, payload__isnull=True).count() == 0
    payload = Item.objects.get(task=task, key="rec-0-org|rec-0-dup-0").payload
    assert payload["left"]["surname"] == "dent" and "id" not in payload["left"]
    refs = ReferenceItem.objects.filter(task=task)
    assert refs.count() == REFERENCE_SIZE
    assert all(r.group == r.item.key for r in refs.select_related("item"))
    runs = Run.objects.filter(task=task)
    assert sorted(runs.values_list("name", flat=True)) == sorted(r[3] for r in RUNS)
    assert set(runs.values_list("state", flat=True)) == {"queued"}
    assert {r.team.name for r in runs} == {"Team Alice", "Team Bob"}
    assert sorted(sent) == sorted(("evaluation.plan_run", [r.pk]) for r in runs)
    assert set(task.annotators.values_list("username", flat=True)) == {"annotator", "annotator2"}
    assert kind_for(task).readiness(task).ready and "febrl-demo opened" in out
    assert set(task.organizers.values_list("username", flat=True)) == {"organizer"}
    assert authenticate(username="alice", password="alice-demo") is not None
    assert get_user_model().objects.get(username="admin").is_superuser
    assert "alice-demo" in out and "Not serving" in out


def test_the_demo_task_has_a_page_with_rules_terms_and_data_files(client):
    from django.core.files.storage import default_storage

    from leaderboard.models import TaskFile, TermsAcceptance

    demo()
    task = Task.objects.get(slug=TASK_SLUG)
    assert task.rules and task.terms and task.data_access == "public"
    files = {f.file_name: f for f in TaskFile.objects.filter(task=task)}
    assert set(files) == {"record-pairs.jsonl", "sample-run.tsv"}
    with default_storage.open(files["record-pairs.jsonl"].stored) as f:
        first = json.loads(f.readline())
    assert first["key"] == "rec-0-org|rec-0-dup-0" and "id" not in first["payload"]["left"]
    accepted = TermsAcceptance.objects.filter(task=task).values_list("team__name", flat=True)
    assert sorted(accepted) == ["Team Alice", "Team Bob"]
    overview = client.get(f"/tasks/{TASK_SLUG}/overview/").content.decode()
    assert "Sample run file" in overview and f"/files/{files['sample-run.tsv'].pk}/" in overview
    download = client.get(f"/tasks/{TASK_SLUG}/files/{files['sample-run.tsv'].pk}/")
    assert download.status_code == 200  # the demo's files are public
    demo()  # idempotent: no second copy
    assert TaskFile.objects.filter(task=task).count() == 2


def test_demo_is_idempotent():
    demo()
    task = Task.objects.get(slug=TASK_SLUG)
    before = (
        task.n_items,
        task.reference_version,
        Run.objects.count(),
        ReferenceItem.objects.count(),
        get_user_model().objects.count(),
    )
    demo()
    task.refresh_from_db()
    assert (
        task.n_items,
        task.reference_version,
        Run.objects.count(),
        ReferenceItem.objects.count(),
        get_user_model().objects.count(),
    ) == before


def test_the_demo_organizer_is_a_task_creator_who_works_from_the_console(settings):
    settings.TASK_CREATION = "role"
    demo()
    organizer = get_user_model().objects.get(username="organizer")
    assert selectors.can_create_tasks(organizer)
    assert organizer.has_perm("leaderboard.add_task")  # the role, not only staff
    client = Client()
    client.force_login(organizer)
    assert client.get("/tasks/new/").status_code == 200
    assert client.get(f"/tasks/{TASK_SLUG}/organize/").status_code == 200


def test_the_banner_gives_the_sign_up_address_the_console_and_where_mail_goes():
    banner = Command()._banner("127.0.0.1", 8000)
    assert "http://127.0.0.1:8000/accounts/signup/" in banner
    assert f"http://127.0.0.1:8000/tasks/{TASK_SLUG}/organize/" in banner
    assert "http://127.0.0.1:8000/tasks/new/" in banner
    assert "printed in this terminal" in banner


def test_the_demo_mail_backend_is_the_console_without_an_smtp_host():
    from config.settings import email_config_from_env

    assert email_config_from_env({})["EMAIL_BACKEND"].endswith("console.EmailBackend")


def test_demo_keeps_existing_passwords():
    user = get_user_model().objects.create_user("alice", password="own-secret")
    demo()
    user.refresh_from_db()
    assert user.check_password("own-secret")


def test_demo_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="demo data missing"):
        call_command("demo", "--no-serve", "--data", str(tmp_path), stdout=StringIO())


def test_blind_payload_drops_record_ids_only():
    pair = {"left": {"id": "rec-1-org", "a": 1}, "right": {"id": "rec-1-dup-0", "a": 2}}
    assert blind_payload(pair) == {"left": {"a": 1}, "right": {"a": 2}}
    assert blind_payload({"text": "x"}) == {"text": "x"}


def test_supervisor_reports_a_dead_essential_child_and_stops_the_others(tmp_path):
    lines = []
    supervisor = Supervisor(cwd=tmp_path, write=lines.append)
    sleeper = supervisor.start(
        Child(
            "sleeper",
            [sys.executable, "-c", "import time; time.sleep(60)"],
            tmp_path / "sleeper.log",
        )
    )
    supervisor.start(
        Child(
            "crasher",
            [sys.executable, "-c", "print('boom'); raise SystemExit(3)"],
            tmp_path / "crasher.log",
        )
    )
    assert supervisor.watch(poll=0.05) == 1
    assert "crasher exited with code 3" in lines[0] and "boom" in lines[0]
    supervisor.stop_all(timeout=10)
    assert sleeper.proc.poll() is not None


def test_a_child_whose_output_goes_to_the_terminal_logs_only_its_errors(tmp_path, capfd):
    """The web server's standard output (the console mail backend's mails) reaches the
    terminal; its standard error (server messages, requests) stays in its log."""
    supervisor = Supervisor(cwd=tmp_path, write=lambda _: None)
    child = supervisor.start(
        Child(
            "web",
            [
                sys.executable,
                "-c",
                "import sys; print('a mail'); print('a request', file=sys.stderr)",
            ],
            tmp_path / "web.log",
            stdout_to_terminal=True,
        )
    )
    assert child.process.wait(timeout=30) == 0
    assert "a mail" in capfd.readouterr().out
    header, *logged = (tmp_path / "web.log").read_text().strip().splitlines()
    assert header.startswith("=====") and logged == ["a request"]


def test_the_web_servers_request_log_is_not_its_standard_output(tmp_path):
    from evaluation.management.commands._demo_processes import web_command

    argv = web_command("127.0.0.1", 8000, access_log=tmp_path / "web.log")
    if "gunicorn" in argv:
        assert argv[argv.index("--access-logfile") + 1] == str(tmp_path / "web.log")
    assert "-" not in argv


def test_supervisor_stops_on_request(tmp_path):
    supervisor = Supervisor(cwd=tmp_path, write=lambda _: None)
    child = supervisor.start(
        Child("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "s.log")
    )
    supervisor.request_stop()
    assert supervisor.watch(poll=0.05) == 0
    supervisor.stop_all(timeout=10)
    assert child.proc.returncode is not None


@pytest.mark.slow
# Ids from 1, as in a fresh `make run`: the queue's mix of gold items is seeded by annotator id,
# so the answers (and the board) are the demo's own, whatever ran before in this process.
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_demos_intervals_cover_the_slices_true_scores(monkeypatch):
    """The demo answers with simulated annotators who are wrong 5% of the time: its board must
    still tell the truth. Driven in-process (planning, answering, estimating) as ``make run``
    does: the first ``DEMO_ANSWERS`` answers, then on until every run is final.

    Its 95% intervals must hold the runs' true scores on the slice, as 95% intervals do: nearly
    all of them, not every one on one seed (which answers the campaign gets depends on the
    queue's serving order, shuffled per round: issue 29, N4); at most DEMO_MISSES_ALLOWED,
    set from the measured coverage."""
    from pipeline_support import PipelineDriver

    played = demo_campaign(PipelineDriver(monkeypatch))
    truth = demo_true_scores()
    assert played.shown.details["label_model"]["judgments"] == DEMO_ANSWERS
    shown = snapshot_intervals(played.shown, truth)
    last = snapshot_intervals(played.last, truth)
    assert {r["state"] for r in played.last.rows} <= {"scored", "partial"}
    assert len(shown) >= 4 and len(last) == 3 * len(RUNS)
    missed = [i for i in shown + last if not i.covers]
    assert len(missed) <= DEMO_MISSES_ALLOWED, missed
    board = Client().get(f"/tasks/{TASK_SLUG}/").content.decode()
    assert board.count("Labels corrected for annotator error") == 1


def test_the_demo_serves_with_threaded_workers():
    """A request holds one thread, not a whole worker (two slow clients stalled the sync demo),
    and only once its head has arrived (slow heads held every thread of gthread: issue 29, F14;
    tests/config/test_web_worker.py runs the server)."""
    from gunicorn.util import load_class
    from gunicorn.workers.gthread import ThreadWorker

    from config.web_worker import HeadFirstThreadWorker
    from evaluation.management.commands._demo_processes import web_command

    argv = web_command("127.0.0.1", 8000)
    if "gunicorn" not in argv:
        pytest.skip("gunicorn is not installed: runserver serves the demo")
    worker = load_class(argv[argv.index("--worker-class") + 1])
    assert worker is HeadFirstThreadWorker and issubclass(worker, ThreadWorker)
    assert int(argv[argv.index("--threads") + 1]) >= 8


def test_the_demo_worker_runs_the_beat_schedule():
    from evaluation.management.commands._demo_processes import worker_command

    argv = worker_command()
    assert argv[argv.index("celery") :][:6] == [
        "celery",
        "-A",
        "config",
        "--quiet",
        "worker",
        "-B",
    ]


def test_the_demo_worker_prints_its_mail_with_links_to_the_demo(tmp_path, monkeypatch):
    from evaluation.management.commands._demo_processes import DemoProcesses

    monkeypatch.delenv("SITE_URL", raising=False)
    processes = DemoProcesses(
        base_dir=tmp_path, host="127.0.0.1", port=8123, stdout=None, stderr=None
    )
    env = processes.env()
    assert env["CELERY_WORKER_REDIRECT_STDOUTS"] == "0"
    assert env["SITE_URL"] == "http://127.0.0.1:8123"
    monkeypatch.setenv("SITE_URL", "https://board.example.org")
    assert processes.env()["SITE_URL"] == "https://board.example.org"
