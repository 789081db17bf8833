"""The CLI and a task's page over real HTTP: its terms printed and accepted for the team (a run
refused before says how), its data files listed and downloaded with their SHA-256 checked."""

from __future__ import annotations

import hashlib
import io

import pytest

from leaderboard.models import TermsAcceptance
from leaderboard.services.task_files import add_task_file
from leaderboard.services.tasks import update_task
from leaderboard_cli import config
from leaderboard_cli.__main__ import main

pytestmark = pytest.mark.django_db(transaction=True)

TERMS = "# Terms\n\nRuns are published."


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def with_terms(cli_world, live_server):
    update_task(task=cli_world.task, terms=TERMS)
    config.save(url=live_server.url, token=cli_world.token)
    return cli_world


def test_a_refused_run_says_how_to_accept_and_terms_accept_does(with_terms, client_home, capsys):
    run_file = client_home / "run.tsv"
    run_file.write_text("a\t0.5\n")
    code, _, err = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "first")
    assert code == 5 and "terms not accepted" in err
    assert "leaderboard terms TASK --accept" in err
    code, out, _ = run_cli(capsys, "terms", "linkage")
    assert code == 0 and "Runs are published." in out and "Alpha: not accepted" in out
    assert not TermsAcceptance.objects.exists()
    code, out, _ = run_cli(capsys, "terms", "linkage", "--accept")
    assert code == 0 and "Alpha accepted the terms of linkage" in out
    assert TermsAcceptance.objects.get().accepted_by == with_terms.user
    code, _, _ = run_cli(capsys, "submit", "linkage", str(run_file), "--name", "first")
    assert code == 0


def test_a_task_without_terms_says_so(cli_world, live_server, capsys):
    config.save(url=live_server.url, token=cli_world.token)
    code, out, _ = run_cli(capsys, "terms", "linkage", "--accept")
    assert code == 0 and "has no terms" in out


def test_files_are_listed_and_downloaded_checked(with_terms, client_home, capsys, monkeypatch):
    body = b"key\tpayload\n" * 1000
    added = add_task_file(
        task=with_terms.task,
        user=with_terms.user,
        upload=io.BytesIO(body),
        file_name="pairs.tsv",
        title="Record pairs",
    )
    code, out, _ = run_cli(capsys, "files", "linkage")
    assert code == 0 and "pairs.tsv" in out and added.sha256[:16] in out
    assert "you may not download them yet" in out and "accept" in out
    monkeypatch.chdir(client_home)
    code, _, err = run_cli(capsys, "download", "linkage", str(added.pk))
    assert code == 5 and "accept" in err and not (client_home / "pairs.tsv").exists()
    run_cli(capsys, "terms", "linkage", "--accept")
    code, out, _ = run_cli(capsys, "download", "linkage", str(added.pk))
    assert code == 0 and "(as listed)" in out
    assert (client_home / "pairs.tsv").read_bytes() == body
    target = client_home / "copy.tsv"
    code, _, _ = run_cli(capsys, "download", "linkage", str(added.pk), "-o", str(target))
    assert code == 0 and hashlib.sha256(target.read_bytes()).hexdigest() == added.sha256


def test_an_unknown_file_is_not_found(with_terms, capsys):
    code, _, _ = run_cli(capsys, "download", "linkage", "999999")
    assert code == 6
