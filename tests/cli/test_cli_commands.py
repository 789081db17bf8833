"""The participant CLI against a live server over real HTTP: login, submit, status, wait, scores,
runs, quota, and its errors (bad token, closed task, a window not open yet, rejected file, over
quota, unreachable); runs after the deadline marked."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from leaderboard.models import Run, Task
from leaderboard.services.ingest import ingest_run
from leaderboard_cli import config
from leaderboard_cli.__main__ import main

pytestmark = pytest.mark.django_db(transaction=True)


def worker_validates(sent: list) -> None:
    """What the worker does with the uploads the server received (their messages are recorded)."""
    for name, args in list(sent):
        if name == "evaluation.ingest_run":
            ingest_run(*args)


REPO = Path(__file__).resolve().parents[2]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def logged_in(live_server, world):
    config.save(url=live_server.url, token=world.token)


def test_login_with_a_token_saves_it_privately(live_server, cli_world, capsys):
    code, out, _ = run_cli(capsys, "--url", live_server.url, "login", "--token", cli_world.token)
    assert code == 0 and "logged in" in out and "alice" in out and "Alpha" in out
    path = config.config_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"url": live_server.url, "token": cli_world.token}


def test_login_with_password_makes_a_token_then_replaces_it(live_server, cli_world):
    from leaderboard.models import ApiToken

    ApiToken.objects.filter(user=cli_world.user).delete()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [
        sys.executable,
        "-m",
        "leaderboard_cli",
        "--url",
        live_server.url,
        "login",
        "--username",
        "alice",
        "--password-stdin",
    ]
    first = subprocess.run(
        argv,
        input=f"{cli_world.password}\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    key = json.loads(config.config_path().read_text())["token"]
    assert ApiToken.objects.get(user=cli_world.user).digest == ApiToken.digest_of(key)
    again = subprocess.run(
        argv,
        input=f"{cli_world.password}\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert again.returncode == 0 and "replaced" in again.stderr
    assert ApiToken.objects.get(user=cli_world.user).digest != ApiToken.digest_of(key)
    wrong = subprocess.run(
        argv, input="nope\n", capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert wrong.returncode == 3 and "token rejected" not in wrong.stdout
    assert "wrong username or password" in wrong.stderr


def test_submit_a_valid_file_then_status(live_server, cli_world, client_home, capsys, sent):
    logged_in(live_server, cli_world)
    run_file = client_home / "run.tsv"
    run_file.write_text("a\t0.9\nb\t0.2\nc\t0.5\n")
    code, out, _ = run_cli(
        capsys, "submit", "linkage", str(run_file), "--name", "bm25", "--description", "first try"
    )
    assert code == 0, out
    run = Run.objects.get(name="bm25")
    assert f"run {run.pk} submitted to linkage: received" in out
    worker_validates(sent)
    run.refresh_from_db()
    assert (run.description, run.n_predictions, run.team.name) == ("first try", 3, "Alpha")
    assert ("evaluation.plan_run", [run.pk]) in sent
    code, out, _ = run_cli(capsys, "status")  # the last submitted run
    assert code == 0 and f"run {run.pk} 'bm25' (Alpha, task linkage): {run.state}" in out


@pytest.mark.slow
def test_submit_a_large_file_shows_progress_and_streams(
    live_server, cli_world, client_home, capsys, sent
):
    logged_in(live_server, cli_world)
    run_file = client_home / "big.tsv"
    with run_file.open("w") as out:
        for i in range(120_000):
            out.write(f"item-{i:08d}\t0.5\n")
    assert run_file.stat().st_size > 2 * 1024 * 1024
    code, out, err = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "big")
    assert code == 0, err
    assert "uploading [" in err and "100.0%" in err
    worker_validates(sent)
    assert Run.objects.get(name="big").n_predictions == 120_000


def test_a_rejected_file_prints_problems_with_line_numbers(
    live_server, cli_world, client_home, capsys, sent
):
    logged_in(live_server, cli_world)
    run_file = client_home / "bad.tsv"
    run_file.write_text("a\t0.9\nb\tlots\nc\t0.5\nd\t7\n")
    code, out, _ = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "bad")
    assert code == 0 and "received" in out  # a worker validates it
    worker_validates(sent)
    code, out, err = run_cli(capsys, "wait", "--interval", "1")
    assert code == 4 and "run " in err and ": rejected" in err
    assert "line 2:" in out and "line 4:" in out
    assert not Run.objects.filter(name="bad").exclude(state=Run.State.REJECTED).exists()


@pytest.mark.parametrize(
    ("text", "encoding", "hint"),
    [
        (
            "key,score\na,0.9\nb,0.2\n",
            "utf-8",
            "line 1: this looks like CSV (comma-separated): separate key and score with a tab, "
            "and remove the header line",
        ),
        ("a\t0.9\nb\t0.2\n", "utf-16", "this file is UTF-16 (as Excel saves it): save it as UTF-8"),
    ],
)
def test_a_file_in_the_wrong_format_is_refused_with_its_hint(
    live_server, cli_world, client_home, capsys, sent, text, encoding, hint
):
    logged_in(live_server, cli_world)
    run_file = client_home / "run.csv"
    run_file.write_bytes(text.encode(encoding))
    code, out, err = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "excel")
    assert code == 4 and out == ""
    assert err == f"wrong format: {hint}\n"  # the hint once, on one line
    assert sent == [] and Run.objects.get(name="excel").state == Run.State.REJECTED


def test_wait_shows_how_far_validation_has_got(live_server, cli_world, capsys):
    logged_in(live_server, cli_world)
    run = Run.objects.create(
        task=cli_world.task,
        team=cli_world.team,
        name="big",
        state=Run.State.VALIDATING,
        reason="45% of the file read (90 MiB, 2,250,000 lines)",
    )
    code, _, err = run_cli(capsys, "wait", str(run.pk), "--timeout", "0", "--interval", "1")
    assert code == 8
    assert f"run {run.pk}: validating: 45% of the file read (90 MiB, 2,250,000 lines)" in err


def test_wait_says_why_a_run_is_held(live_server, cli_world, capsys):
    logged_in(live_server, cli_world)
    reason = "held for the organizers: 3 of its 3 keys match no item of the task and look malformed"
    run = Run.objects.create(
        task=cli_world.task, team=cli_world.team, name="glued", state=Run.State.HELD, reason=reason
    )
    code, _, err = run_cli(capsys, "wait", str(run.pk), "--timeout", "0", "--interval", "1")
    assert code == 8 and f"run {run.pk}: held: {reason}" in err


def test_a_bad_token_says_to_log_in_again(live_server, cli_world, capsys):
    config.save(url=live_server.url, token="0" * 40)
    code, _, err = run_cli(capsys, "runs", "linkage")
    assert code == 3 and "token rejected: run `leaderboard login`" in err
    config.save(token=None)
    code, _, err = run_cli(capsys, "status", "1")
    assert code == 3 and "token rejected" in err


def test_a_closed_task_refuses_the_upload(live_server, cli_world, client_home, capsys):
    logged_in(live_server, cli_world)
    run_file = client_home / "run.tsv"
    run_file.write_text("a\n")
    code, _, err = run_cli(capsys, "submit", "finished", str(run_file), "--name", "late")
    assert code == 5 and "task closed" in err and "finished" in err


def test_a_closed_pool_without_its_pool_refuses_the_upload(
    live_server, cli_world, client_home, capsys
):
    Task.objects.filter(pk=cli_world.task.pk).update(kind=Task.Kind.CLOSED_POOL, n_items=0)
    logged_in(live_server, cli_world)
    run_file = client_home / "run.tsv"
    run_file.write_text("a\t0.5\t1\n")
    code, _, err = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "early")
    assert code == 5
    assert (
        "no pool yet: task 'linkage' has no pool yet: its organizers upload it before runs are "
        "accepted; nothing was stored or counted"
    ) in err
    assert not Run.objects.filter(name="early").exists()


def test_an_upload_before_the_window_says_when_it_opens(
    live_server, cli_world, client_home, capsys
):
    opens = timezone.now() + timedelta(hours=3)
    Task.objects.filter(pk=cli_world.task.pk).update(submissions_open_at=opens)
    logged_in(live_server, cli_world)
    run_file = client_home / "run.tsv"
    run_file.write_text("a\t0.5\n")
    code, _, err = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "early")
    assert code == 5
    assert f"not open yet: task 'linkage' accepts runs from {opens:%Y-%m-%d %H:%M} UTC" in err
    assert not Run.objects.filter(name="early").exists()


def test_runs_after_the_deadline_are_marked_in_the_cli(
    live_server, cli_world, client_home, capsys, sent
):
    Task.objects.filter(pk=cli_world.task.pk).update(
        submissions_close_at=timezone.now() - timedelta(hours=1)
    )
    logged_in(live_server, cli_world)
    run_file = client_home / "run.tsv"
    run_file.write_text("a\t0.5\n")
    code, out, _ = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "late")
    assert code == 0, out
    late = Run.objects.get(name="late")
    assert late.after_deadline
    code, out, _ = run_cli(capsys, "status", str(late.pk))
    assert code == 0 and "(after the deadline)" in out
    code, out, _ = run_cli(capsys, "runs", "linkage")
    (line,) = [row for row in out.splitlines() if " late " in row]
    assert line.endswith("(after the deadline)")


def test_over_quota_is_refused_with_the_limit(live_server, cli_world, client_home, capsys):
    logged_in(live_server, cli_world)
    for i in range(2):  # with the scored run: 3 of 3
        Run.objects.create(
            task=cli_world.task, team=cli_world.team, name=f"r{i}", state=Run.State.QUEUED
        )
    run_file = client_home / "run.tsv"
    run_file.write_text("a\n")
    code, _, err = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "more")
    assert code == 5 and "over quota" in err
    code, out, _ = run_cli(capsys, "quota", "linkage")
    assert code == 0 and "Alpha: 0 of 3 left today, 0 of 3 in total" in out


def test_submit_without_a_name_names_the_run_after_its_file_and_withdraw_it(
    live_server, cli_world, client_home, capsys, sent
):
    logged_in(live_server, cli_world)
    run_file = client_home / "cross encoder.tsv"
    run_file.write_text("a\t0.9\n")
    code, out, _ = run_cli(capsys, "submit", "linkage", str(run_file))
    assert code == 0, out
    run = Run.objects.get(name="cross encoder")
    worker_validates(sent)
    code, out, _ = run_cli(capsys, "quota", "linkage")
    assert code == 0 and "linkage: files of at most" in out and "Alpha: 1 of 3 left today" in out
    code, out, _ = run_cli(capsys, "withdraw", str(run.pk))
    assert code == 0 and f"run {run.pk} 'cross encoder' (Alpha, task linkage): withdrawn" in out
    assert "no longer counts against the team's quota" in out
    code, out, _ = run_cli(capsys, "quota", "linkage")
    assert "Alpha: 2 of 3 left today" in out and "(1 refunded)" in out
    code, _, err = run_cli(capsys, "wait", str(run.pk))
    assert code == 9 and "withdrawn" in err
    code, _, err = run_cli(capsys, "withdraw", "999999")
    assert code == 6 and "there is no run 999999" in err


def test_scores_print_the_board_with_intervals(live_server, cli_world, capsys):
    code, out, _ = run_cli(capsys, "--url", live_server.url, "scores", "linkage")
    assert code == 0
    assert "linkage: snapshot 1 (8 labels, 95% intervals" in out
    line = next(row for row in out.splitlines() if "baseline" in row)
    assert "Alpha" in line and line.count("0.618 [0.568, 0.668]") == 3
    code, _, err = run_cli(capsys, "--url", live_server.url, "scores", "finished")
    assert code == 6 and "no published leaderboard" in err


def test_wait_prints_scores_of_a_finished_run_and_times_out_on_a_busy_one(
    live_server, cli_world, capsys
):
    logged_in(live_server, cli_world)
    code, out, _ = run_cli(capsys, "wait", str(cli_world.scored.pk))
    assert code == 0
    assert "8 of 8 items verified" in out
    assert "scores (snapshot 1): precision 0.618 [0.568, 0.668]" in out
    busy = Run.objects.create(
        task=cli_world.task,
        team=cli_world.team,
        name="busy",
        state=Run.State.AWAITING_LABELS,
        n_requested=480,
        n_verified=312,
    )
    code, _, err = run_cli(capsys, "wait", str(busy.pk), "--timeout", "0", "--interval", "1")
    assert code == 8 and "312 of 480 items verified" in err and "still awaiting_labels" in err


def test_runs_lists_the_team_runs(live_server, cli_world, capsys):
    logged_in(live_server, cli_world)
    code, out, _ = run_cli(capsys, "runs", "linkage", "--state", "scored")
    assert code == 0 and "baseline" in out and "8/8" in out
    code, _, err = run_cli(capsys, "runs", "nope")
    assert code == 6 and "there is no task 'nope'" in err


def test_an_unreachable_server_is_reported(cli_world, capsys):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, err = run_cli(capsys, "--url", f"http://127.0.0.1:{port}", "scores", "linkage")
    assert code == 7 and "connection refused" in err


def test_environment_overrides_the_saved_settings(live_server, cli_world, monkeypatch, capsys):
    config.save(url="http://127.0.0.1:9", token="stale")
    monkeypatch.setenv("LEADERBOARD_URL", live_server.url)
    monkeypatch.setenv("LEADERBOARD_TOKEN", cli_world.token)
    code, out, _ = run_cli(capsys, "runs", "linkage")
    assert code == 0 and "baseline" in out


def test_python_dash_m_runs_the_entry_point(live_server, cli_world):
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LEADERBOARD_URL": live_server.url,
        "LEADERBOARD_TOKEN": cli_world.token,
    }
    done = subprocess.run(
        [sys.executable, "-m", "leaderboard_cli", "status", str(cli_world.scored.pk)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "run" in done.stdout and "scored" in done.stdout


def test_status_and_wait_exit_with_the_documented_code_in_every_state(
    live_server, cli_world, capsys
):
    """docs/API.md: 4 for a rejected run, 9 for a failed or withdrawn one, 0 otherwise (status
    shows where a run is, a held one included; wait returns once it is finished)."""
    logged_in(live_server, cli_world)
    run = cli_world.scored
    expected = {
        "received": 0,
        "validating": 0,
        "held": 0,
        "rejected": 4,
        "queued": 0,
        "planning": 0,
        "awaiting_labels": 0,
        "estimating": 0,
        "scored": 0,
        "partial": 0,
        "failed": 9,
        "withdrawn": 9,
    }
    assert set(expected) == set(Run.State.values)
    for state, code in expected.items():
        Run.objects.filter(pk=run.pk).update(state=state)
        status, out, _ = run_cli(capsys, "status", str(run.pk))
        assert (state, status) == (state, code), out
        assert f": {state} (" in out  # the machine state, then what it means
        if state in ("rejected", "failed", "scored", "partial", "withdrawn"):
            waited, _, _ = run_cli(capsys, "wait", str(run.pk), "--interval", "1")
            assert (state, waited) == (state, code)


def test_status_without_a_run_id_and_none_submitted_is_a_usage_error(
    live_server, cli_world, capsys
):
    logged_in(live_server, cli_world)
    code, _, err = run_cli(capsys, "status")
    assert code == 2 and "which run? give its id" in err


def test_scores_print_the_servers_words(live_server, cli_world, capsys):
    """Ranks as the board writes them, what each state means, and recall flagged while the
    reference sample it rests on is empty (the fixture's snapshot has none)."""
    from leaderboard.models import LeaderboardSnapshot

    snapshot = LeaderboardSnapshot.objects.get(task=cli_world.task)
    rows = [{**snapshot.rows[0], "rank": {"f1": {"best": 1, "worst": 3}}, "outcome": "met"}]
    LeaderboardSnapshot.objects.filter(pk=snapshot.pk).update(rows=rows)
    code, out, _ = run_cli(capsys, "--url", live_server.url, "scores", "linkage")
    assert code == 0
    line = next(row for row in out.splitlines() if "baseline" in row)
    assert line.startswith("1\u20133 ")
    assert "precision \u00b10.050, target \u00b10.05: met; recall not settled: no reference" in line
    assert line.count("0.618 [0.568, 0.668]*") == 2  # recall and F1
    assert out.rstrip().endswith(
        "* recall and f1 not settled: no reference sample yet: recall cannot be estimated"
    )
