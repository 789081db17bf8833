"""The management commands' helpers (``site_platform.commands``) and the leaderboard's task
lookup beside them (``leaderboard.management.commands._helpers``)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, get_commands, load_command_class

from leaderboard.ingestion import Problem
from leaderboard.management.commands._helpers import task_named
from site_platform.commands import existing_file, report_problems, users_named
from site_platform.errors import ServiceError

from pipeline_support import make_task


def test_an_existing_file_is_returned(tmp_path):
    file = tmp_path / "run.tsv"
    file.write_text("a\t0.5\n")
    assert existing_file(file) == file


def test_a_missing_file_or_a_directory_is_refused_naming_what_was_looked_for(tmp_path):
    with pytest.raises(CommandError, match=r"^file not found: .*nothing\.tsv$"):
        existing_file(tmp_path / "nothing.tsv")
    with pytest.raises(CommandError, match=r"^gold file not found: "):
        existing_file(tmp_path, "gold file")


@pytest.mark.django_db
def test_users_named_in_the_order_given_and_every_unknown_one_named():
    User = get_user_model()
    ann, org = User.objects.create_user("ann"), User.objects.create_user("org")
    assert users_named(["org", "ann"], "organizer") == [org, ann]
    assert users_named([], "annotator") == []
    with pytest.raises(CommandError, match=r"no user named 'bob', 'eve' \(--annotator\); create"):
        users_named(["bob", "ann", "eve"], "annotator")


def test_problems_are_written_one_a_line_with_how_many_more():
    stream = StringIO()
    problems = [Problem(3, "bad score"), Problem(None, "empty file")]
    report_problems(stream, ServiceError("refused", problems=problems, total=5))
    assert stream.getvalue() == "  line 3: bad score  empty file  ... and 3 more problem(s)"


def test_all_problems_shown_means_no_tail():
    stream = StringIO()
    report_problems(stream, ServiceError("refused", problems=[Problem(1, "x")]))
    assert stream.getvalue() == "  line 1: x"


@pytest.mark.django_db
def test_task_named_finds_the_task_or_says_there_is_none():
    task = make_task(slug="febrl")
    assert task_named("febrl") == task
    with pytest.raises(CommandError, match=r"^no task with slug 'febr'$"):
        task_named("febr")


@pytest.mark.parametrize(
    ("command", "file_help"),
    [
        ("load_gold", "the gold file (UTF-8)"),
        ("load_pool", "the pool's keys"),
        ("load_reference", "the reference sample"),
        ("submit_run", "the run"),
    ],
)
def test_a_command_that_reads_a_file_into_a_task_takes_the_slug_then_the_file(command, file_help):
    parser = load_command_class(get_commands()[command], command).create_parser(
        "manage.py", command
    )
    slug, file = (a for a in parser._actions if a.dest in ("slug", "file"))
    assert (slug.dest, slug.help) == ("slug", "the task's slug")
    assert file.dest == "file" and file.help.startswith(file_help)
    assert (
        parser.parse_args(
            ["ner", "run.tsv"] + (["--team", "t", "--user", "u"] if command == "submit_run" else [])
        ).file.name
        == "run.tsv"
    )
