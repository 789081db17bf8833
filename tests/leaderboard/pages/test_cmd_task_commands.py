"""`create_task`, `load_reference` and `submit_run` management commands, incl. their errors."""

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from leaderboard.models import ReferenceItem, Run, Task

from pipeline_support import make_task, make_team, satisfy_checklist

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def sent(sent_messages):
    return sent_messages


def call(name, *args):
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def users():
    User = get_user_model()
    return {n: User.objects.create_user(n) for n in ("org", "ann", "alice")}


# --- create_task --------------------------------------------------------------------------------


def test_create_task_with_all_settings(users):
    out, _ = call(
        "create_task",
        "febrl",
        "--title",
        "Febrl pairs",
        "--question",
        "Same?",
        "--target-half-width",
        "0.04",
        "--confidence",
        "0.9",
        "--budget",
        "500",
        "--judgments-per-item",
        "3",
        "--organizer",
        "org",
        "--annotator",
        "ann",
        "--state",
        "draft",
    )
    task = Task.objects.get(slug="febrl")
    assert (
        task.title,
        task.question,
        task.target_half_width,
        task.confidence,
        task.label_budget,
        task.judgments_per_item,
        task.state,
    ) == ("Febrl pairs", "Same?", 0.04, 0.9, 500, 3, "draft")
    assert list(task.organizers.all()) == [users["org"]]
    assert list(task.annotators.all()) == [users["ann"]]
    assert "created task 'febrl'" in out


def test_create_task_takes_every_setting_of_the_settings_table(users):
    """The options come from the settings table: settings the command never listed by hand
    (gold, phases, teams, design) are set, each read as its page form reads it."""
    call(
        "create_task",
        "full",
        "--title",
        "Full",
        "--label-budget",
        "800",
        "--gold-rate",
        "0.1",
        "--gold-min-answers",
        "4",
        "--annotator-daily-cap",
        "300",
        "--submissions-close-at",
        "2030-01-02T12:00:00Z",
        "--team-approval",
        "--no-accept-late-runs",
        "--allowed-email-domains",
        "uni.example",
        "--design-options",
        '{"min_batch": 32}',
        "--measures",
        '["precision"]',
        "--data-access",
        "public",
    )
    task = Task.objects.get(slug="full")
    assert (task.label_budget, task.gold_rate, task.gold_min_answers) == (800, 0.1, 4)
    assert task.annotator_daily_cap == 300
    assert task.submissions_close_at.isoformat() == "2030-01-02T12:00:00+00:00"
    assert (task.team_approval, task.accept_late_runs) == (True, False)
    assert task.allowed_email_domains == "uni.example"
    assert task.design_options == {"min_batch": 32}
    assert (task.measures, task.data_access) == (["precision"], "public")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gold-rate", "lots"], "--gold-rate: Enter a number."),
        (["--submissions-open-at", "tomorrow"], "--submissions-open-at: Enter a valid date/time."),
        (["--design-options", "{round_size: 4"], "--design-options: Enter a valid JSON."),
        (["--gold-rate", "1.5"], "gold_rate"),
    ],
)
def test_create_task_refuses_a_value_its_form_would_refuse(users, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        call("create_task", "bad", "--title", "Bad", *args)
    assert not Task.objects.filter(slug="bad").exists()


def test_create_task_defaults():
    out, _ = call("create_task", "plain", "--title", "Plain")
    task = Task.objects.get(slug="plain")
    assert task.state == "draft" and task.target_half_width == 0.05 and task.label_budget is None
    assert "then `manage.py open_task plain` lists what it needs and opens it" in out


def test_create_task_open_is_refused_with_what_the_task_needs(users):
    with pytest.raises(CommandError, match="not ready to open \\(Annotators: 0 of the 2"):
        call("create_task", "eager", "--title", "Eager", "--state", "open")
    assert not Task.objects.filter(slug="eager").exists()


# --- open_task ----------------------------------------------------------------------------------


def test_open_task_lists_what_is_missing_and_opens_once_nothing_is(users):
    call("create_task", "t", "--title", "T", "--annotator", "ann", "--measures", "precision")
    out, _ = call("open_task", "t", "--check")
    assert out.splitlines()[:3] == [
        "task 't' (draft): not ready to open",
        "  missing  Annotators: 1 of the 2 annotators needed: each new item gets 1 judgment from "
        "different annotators, and a doubtful answer a further look from another; invite them "
        "(People)",
        "  ok       Reference sample: not needed: the board shows no recall or F1",
    ]
    with pytest.raises(CommandError, match=r"not ready to open .*; nothing was changed"):
        call("open_task", "t")
    task = Task.objects.get(slug="t")
    assert task.state == "draft"
    satisfy_checklist(task)
    out, _ = call("open_task", "t")
    assert "task 't' (draft): ready to open" in out and "task 't' is open: it takes runs" in out
    assert Task.objects.get(slug="t").state == "open"
    assert "already open" in call("open_task", "t")[0]
    with pytest.raises(CommandError, match="no task with slug 'nope'"):
        call("open_task", "nope")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--organizer", "nobody"], "no user named 'nobody'"),
        (["--annotator", "ghost", "--annotator", "ann"], "no user named 'ghost'"),
        (["--confidence", "1.5"], "confidence"),
        (["--target-half-width", "0"], "target_half_width"),
    ],
)
def test_create_task_errors_create_nothing(users, args, message):
    with pytest.raises(CommandError, match=message):
        call("create_task", "bad", "--title", "Bad", *args)
    assert not Task.objects.filter(slug="bad").exists()


def test_create_task_twice_is_a_clear_error(users):
    call("create_task", "dup", "--title", "One")
    with pytest.raises(CommandError, match="already exists"):
        call("create_task", "dup", "--title", "Two")


# --- load_reference -----------------------------------------------------------------------------


def test_load_reference(tmp_path):
    task = make_task(slug="ref")
    path = tmp_path / "ref.tsv"
    path.write_text("k1\tdoc-1\nk2\tdoc-1\nk3\tdoc-2\n")
    out, _ = call("load_reference", "ref", str(path))
    assert "reference sample of 'ref': 3 items in 2 documents (version 1)" in out
    assert ReferenceItem.objects.filter(task=task).count() == 3
    assert set(ReferenceItem.objects.values_list("group", flat=True)) == {"doc-1", "doc-2"}


def test_load_reference_rejected_prints_problems_by_line(tmp_path):
    make_task(slug="ref")
    path = tmp_path / "ref.tsv"
    path.write_text("k1\tdoc\nk1\tdoc\n\n")
    err = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("load_reference", "ref", str(path), stdout=StringIO(), stderr=err)
    assert caught.value.returncode != 0
    assert "line 2" in err.getvalue()
    assert not ReferenceItem.objects.exists()


def test_load_reference_is_refused_while_a_draw_is_verified(tmp_path):
    from leaderboard.models import ReferenceSample

    task = make_task(slug="ref")
    ReferenceSample.objects.create(task=task, seed=1, size=1, documents=["d"], n_documents=1)
    path = tmp_path / "ref.tsv"
    path.write_text("k1\tdoc-1\n")
    with pytest.raises(CommandError, match="is being verified"):
        call("load_reference", "ref", str(path))
    assert not ReferenceItem.objects.exists()


def test_load_reference_unknown_task_or_file(tmp_path):
    with pytest.raises(CommandError, match="no task with slug 'nope'"):
        call("load_reference", "nope", str(tmp_path / "x.tsv"))
    make_task(slug="ref")
    with pytest.raises(CommandError, match="file not found"):
        call("load_reference", "ref", str(tmp_path / "x.tsv"))


# --- submit_run ---------------------------------------------------------------------------------


def test_submit_run(users, tmp_path, sent, django_capture_on_commit_callbacks):
    task = make_task(slug="t")
    make_team("Team Alice", users["alice"])
    path = tmp_path / "run.tsv"
    path.write_text("k1\t0.9\nk2\t0.3\n")
    with django_capture_on_commit_callbacks(execute=True):
        out, _ = call(
            "submit_run",
            "t",
            str(path),
            "--team",
            "Team Alice",
            "--user",
            "alice",
            "--name",
            "first",
        )
    run = Run.objects.get(task=task, name="first")
    assert run.state == "queued" and run.n_predictions == 2 and run.file_name == "run.tsv"
    assert "queued" in out and sent == [("evaluation.plan_run", [run.pk])]


def test_submit_run_rejected_prints_problems(users, tmp_path):
    make_task(slug="t")
    make_team("Team Alice", users["alice"])
    path = tmp_path / "run.tsv"
    path.write_text("k1\t0.9\nk2\tabc\n")
    err = StringIO()
    with pytest.raises(CommandError, match="rejected"):
        call_command(
            "submit_run",
            "t",
            str(path),
            "--team",
            "Team Alice",
            "--user",
            "alice",
            stdout=StringIO(),
            stderr=err,
        )
    assert "line 2" in err.getvalue()


def test_submit_run_held_says_why(users, tmp_path, sent):
    make_task(slug="t")
    make_team("Team Alice", users["alice"])
    path = tmp_path / "run.jsonl"
    path.write_text('{"key": "k1,0.9"}\n{"key": "k2,0.3"}\n')  # a score glued to each key
    out, _ = call("submit_run", "t", str(path), "--team", "Team Alice", "--user", "alice")
    assert ": held, 2 predictions" in out
    assert "held for the organizers: 2 of its 2 keys match no item of the task" in out
    assert sent == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "{file}", "--team", "Team Alice", "--user", "alice"], "no task"),
        (["t", "{file}", "--team", "Nobody", "--user", "alice"], "no team named 'Nobody'"),
        (["t", "{file}", "--team", "Team Alice", "--user", "ghost"], "no user named 'ghost'"),
        (["t", "{file}", "--team", "Team Alice", "--user", "org"], "not a member"),
        (["t", "{missing}", "--team", "Team Alice", "--user", "alice"], "file not found"),
    ],
)
def test_submit_run_errors(users, tmp_path, args, message):
    make_task(slug="t")
    make_team("Team Alice", users["alice"])
    (tmp_path / "run.tsv").write_text("k1\t0.9\n")
    args = [a.format(file=tmp_path / "run.tsv", missing=tmp_path / "none.tsv") for a in args]
    with pytest.raises(CommandError, match=message):
        call("submit_run", *args)


def test_create_a_closed_pool_task_and_load_its_pool(users, tmp_path):
    out, _ = call(
        "create_task", "cp", "--title", "CP", "--kind", "closed_pool", "--measures", "f1, mcc"
    )
    task = Task.objects.get(slug="cp")
    assert (task.kind, task.measures) == ("closed_pool", ["f1", "mcc"])
    keys = tmp_path / "items.tsv"
    keys.write_text("a\nb\n")
    payloads = tmp_path / "items.jsonl"
    payloads.write_text('{"key": "a", "payload": {"text": "A"}}\n')
    out, _ = call("load_pool", "cp", str(keys), "--payloads", str(payloads))
    assert "2 items" in out
    assert task.items.get(key="a").payload == {"text": "A"}
    with pytest.raises(CommandError, match="already has its pool \\(2 items\\)"):
        call("load_pool", "cp", str(keys))


def test_load_pool_prints_problems_by_line(users, tmp_path):
    call("create_task", "cp", "--title", "CP", "--kind", "closed_pool")
    keys = tmp_path / "items.tsv"
    keys.write_text("a\na\n")
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="rejected"):
        call_command("load_pool", "cp", str(keys), stdout=out, stderr=err)
    assert "line 2: duplicate key 'a'" in err.getvalue()
    with pytest.raises(CommandError, match="a closed pool shows only"):
        call("create_task", "cp2", "--title", "CP", "--kind", "closed_pool", "--measures", "f3")
