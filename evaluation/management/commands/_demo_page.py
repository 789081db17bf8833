"""The demo task's page: its overview, rules and terms (Markdown), and the files participants
download from it (the record pairs without their ids, and a sample run file)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from leaderboard.models import Task, TaskFile, Team
from leaderboard.services.task_files import add_task_file
from leaderboard.services.terms import accept_terms

OVERVIEW = """\
Record linkage on a slice of **Febrl data set 4**: does each predicted pair of records describe
the same person? Four systems from two teams are on the board.

- **Input**: `record-pairs.jsonl` below, one candidate pair per line
  (`{"key", "payload": {"left", "right"}}`), the records without their ids.
- **A run**: one line per pair you predict is a match, `key<TAB>score`, scores in [0, 1]
  (`sample-run.tsv` below shows the format).
- **Scoring**: annotators verify a sample of each run's pairs; precision, recall and F1 come with
  95% confidence intervals, so close runs share a rank range.
"""
RULES = """\
1. One team per person; at most 5 runs per team per day.
2. Use only the data on this page: no other copy of Febrl 4, and no record ids.
3. Describe your method on the run's page (a link to code or a paper is welcome).
"""
TERMS = """\
By submitting, your team agrees that:

- its run names, team name, descriptions and scores are **published** on this board;
- the data is used for this task only and not redistributed.
"""
SETTINGS = {"rules": RULES, "terms": TERMS, "data_access": Task.DataAccess.PUBLIC}
SAMPLE_RUN_LINES = 20


def add_demo_files(task: Task, organizer, data: Path, blind: Callable[[object], object]) -> int:
    """The demo's data files, if the task has none yet: the record pairs as annotators see them
    (``blind``: without the ids that give the answer away) and a sample run file. Returns how
    many were added."""
    if TaskFile.objects.filter(task=task).exists():
        return 0
    pairs = io.StringIO()
    with (data / "items.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                record = json.loads(line)
                payload = blind(record.get("payload"))
                pairs.write(json.dumps({"key": record["key"], "payload": payload}) + "\n")
    sample = (data / "systems" / "svm_dob.tsv").read_text(encoding="utf-8").splitlines()
    files = [
        (
            "record-pairs.jsonl",
            pairs.getvalue(),
            TaskFile.Kind.INPUT_DATA,
            "Record pairs",
            "Every candidate pair of the slice, its records without their ids.",
        ),
        (
            "sample-run.tsv",
            "\n".join(sample[:SAMPLE_RUN_LINES]) + "\n",
            TaskFile.Kind.SAMPLE_RUN,
            "Sample run file",
            f"The first {SAMPLE_RUN_LINES} lines of a real run: key<TAB>score.",
        ),
    ]
    for name, text, kind, title, description in files:
        add_task_file(
            task=task,
            user=organizer,
            upload=io.BytesIO(text.encode()),
            file_name=name,
            kind=kind,
            title=title,
            description=description,
        )
    return len(files)


def accept_demo_terms(task: Task, teams: dict[str, Team], members: dict[str, Any]) -> None:
    """Each demo team accepts the task's terms (its member does), before its runs."""
    if not task.terms:
        return
    for name, team in teams.items():
        accept_terms(task=task, team=team, user=members[name])
