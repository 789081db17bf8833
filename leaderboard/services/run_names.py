"""A run's name when its team gives none: the file's stem, unique among the team's runs."""

from __future__ import annotations

import os
from typing import cast

from ..models import Run, Task, Team

MAX_NAME_LENGTH = cast(int, Run._meta.get_field("name").max_length)  # a CharField's is set

# Extensions a run file's name ends with, taken off its stem (a gzipped file's two).
RUN_FILE_EXTENSIONS = (".tsv", ".jsonl", ".json", ".txt", ".tab", ".csv")


def default_name(*, task: Task, team: Team, file_name: str) -> str:
    """A run's name when none is given: the file name's stem (``bm25 v2`` for
    ``bm25 v2.tsv.gz``), tidied (control characters out, spaces collapsed), made unique among
    the team's runs on the task (``bm25 v2-2``, ...); ``run-N`` for a file without a name."""
    names = set(Run.objects.filter(task=task, team=team).values_list("name", flat=True))
    stem = _file_stem(file_name)
    if not stem:
        n = len(names) + 1
        while f"run-{n}" in names:
            n += 1
        return f"run-{n}"
    name, n = stem[:MAX_NAME_LENGTH], 1
    while name in names:
        n += 1
        suffix = f"-{n}"
        name = stem[: MAX_NAME_LENGTH - len(suffix)] + suffix
    return name


def _file_stem(file_name: str) -> str:
    stem = os.path.basename(file_name or "")
    if stem.lower().endswith(".gz"):
        stem = stem[:-3]
    for extension in RUN_FILE_EXTENSIONS:
        if stem.lower().endswith(extension):
            stem = stem[: -len(extension)]
            break
    printable = "".join(c if c.isprintable() else " " for c in stem)
    return " ".join(printable.split())
