"""The product's wing of each task kind (``leaderboard.kinds``): one wing per ``Task.Kind``, the
registry the product asks, what each wing says, and the seam itself: outside the wings, product
code names a task's kind only where the issue allows it (the model's choices, the settings
table and the forms that list it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES
from evaluation.core.measures import OPEN_MEASURES
from leaderboard.kinds import KINDS, kind_for
from leaderboard.models import Task
from leaderboard.services.task_validation import task_settings_problems

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_every_task_kind_has_its_wing():
    assert set(KINDS) == set(Task.Kind.values)
    for value in Task.Kind.values:
        assert KINDS[value].value == value
        assert kind_for(Task(kind=value)) is KINDS[value]


@pytest.mark.django_db
def test_a_kind_without_a_wing_reads_as_the_default_and_the_validator_refuses_it():
    task = Task(slug="third", title="T", kind="third", measures=["mcc"])
    assert kind_for(task) is KINDS[Task.Kind.OPEN]
    problems = task_settings_problems(task, validate_unique=False)
    assert "is not a valid choice" in " ".join(problems["kind"])
    assert problems["measures"] == ["'mcc': an open task shows only precision, recall, f1"]


def test_what_the_wings_say_of_their_kind():
    open_world, closed_pool = KINDS[Task.Kind.OPEN], KINDS[Task.Kind.CLOSED_POOL]
    assert (open_world.has_reference_sample, open_world.has_pool) == (True, False)
    assert (closed_pool.has_reference_sample, closed_pool.has_pool) == (False, True)
    assert open_world.uploads == ("reference", "gold")
    assert closed_pool.uploads == ("pool", "gold")
    assert (open_world.run_file.upload, closed_pool.run_file.upload) == ("run", "pool_run")
    assert open_world.measures == OPEN_MEASURES and closed_pool.measures == CLOSED_POOL_MEASURES
    assert not open_world.has_curves and closed_pool.has_curves


def test_a_closed_pool_shows_its_chosen_measures_and_takes_runs_of_its_whole_pool():
    pool = Task(slug="p", kind=Task.Kind.CLOSED_POOL, measures=["mcc"], max_predictions_per_run=5)
    wing = kind_for(pool)
    assert wing.board_measures(pool) == ("mcc",)
    pool.measures = []
    assert wing.board_measures(pool) == OPEN_MEASURES
    pool.n_items = 9
    assert wing.records_per_run(pool) == 9
    pool.pool_loading = True  # its items are being stored: not the pool yet
    code, message = wing.runs_refused(pool)
    assert code == "no_pool"
    assert message.startswith("task 'p' has no pool yet (an upload of it is being stored)")
    pool.pool_loading = False
    assert wing.runs_refused(pool) is None
    task = Task(slug="o", measures=["mcc"], max_predictions_per_run=5, n_items=9)
    assert kind_for(task).board_measures(task) == OPEN_MEASURES
    assert kind_for(task).records_per_run(task) == 5 and kind_for(task).runs_refused(task) is None


# A task's kind named in product code: its attribute, the model's choices, a kind's value.
KIND_NAMED = re.compile(
    r"\b(task|changed|locked)\.kind\b|\bTask\.Kind\.[A-Z_]+|\bKind\.(OPEN|CLOSED_POOL)\b"
    r"|\bkind\s*[!=]=\s*\"(open|closed_pool)\""
)
# Where the product may still name it outside leaderboard/kinds/ (file: lines' text).
ALLOWED = {
    "leaderboard/models/tasks.py": ("default=Kind.OPEN",),  # the model's choices
    "leaderboard/task_settings.py": ("ALL_KINDS =", "kinds=(Task.Kind.CLOSED_POOL.value,)"),
    # The forms list the settings of the task's kind, and its kind's designs (the engine's).
    "leaderboard/forms.py": ("if task.kind in task_settings", "design_names(task.kind)"),
    # A task's kind may not change once it has items: a comparison, not a branch on a kind.
    "leaderboard/services/tasks.py": ('fields["kind"] != task.kind',),
}


def _kind_mentions() -> list[tuple[str, str]]:
    found = []
    for app in ("leaderboard", "annotation"):
        for path in sorted((REPO_ROOT / app).rglob("*")):
            relative = path.relative_to(REPO_ROOT).as_posix()
            if path.suffix not in (".py", ".html") or "/migrations/" in relative:
                continue
            if relative.startswith("leaderboard/kinds/"):
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                if KIND_NAMED.search(line):
                    found.append((relative, line.strip()))
    return found


def test_outside_the_wings_the_product_names_a_task_kind_only_where_allowed():
    stray = [
        (path, line)
        for path, line in _kind_mentions()
        if not any(allowed in line for allowed in ALLOWED.get(path, ()))
    ]
    assert stray == []
    allowed_hits = {
        (path, allowed)
        for path, line in _kind_mentions()
        for allowed in ALLOWED.get(path, ())
        if allowed in line
    }
    assert len(allowed_hits) == sum(map(len, ALLOWED.values()))  # the allow-list is not stale


@pytest.mark.parametrize("template", ["submit.html", "task_overview.html"])
def test_the_pages_take_a_run_files_words_from_the_kind(template):
    text = (REPO_ROOT / "leaderboard/templates/leaderboard" / template).read_text()
    assert "task.kind" not in text and "{{ kind.run_file." in text
