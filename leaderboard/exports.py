"""CSV and JSON exports of leaderboard snapshots and of a task's verified items.

Shared by the REST API and the pages. Snapshot rows are passed through as the worker stored them
(a row may carry extra keys, e.g. ``rank``), each with ``after_deadline`` added from its run and
the board's words (:mod:`.board_text`): ``state_text``, each rank's ``text`` and, on an open
task, whether recall and F1 rest on too small a reference sample (``reference_too_small``); the
CSV has one column per metric field, a rank column trio per metric when the rows have ranks, and
those words. Verified items are read with a server-side
iterator so a task with millions of them streams in constant memory, each with the posterior the
latest estimation stored (:class:`~leaderboard.models.LabelModelFit`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np

from site_platform.downloads import csv_cell

from .board_text import RECALL_MEASURES, SnapshotTerms, rank_of, rank_text
from .board_text import snapshot_measures as _measures_of
from .models import Item, LabelModelFit, LeaderboardSnapshot, Run, Task

METRIC_FIELDS = ("value", "low", "high", "labels_used", "method")
ROW_FIELDS = (
    "run",
    "name",
    "team",
    "state",
    "provisional",
    "n_predictions",
    "n_requested",
    "n_verified",
    "after_deadline",
    "state_text",
)
VERIFIED_ITEM_FIELDS = ("key", "posterior", "judgments", "says_correct", "verified_at")
ITEM_CHUNK = 2000


def snapshot_metrics(snapshot: LeaderboardSnapshot) -> tuple[str, ...]:
    """The metrics the snapshot's rows carry: a closed pool's measures, else the three."""
    return _measures_of(snapshot.details)


def _flagged_metrics(snapshot: LeaderboardSnapshot) -> tuple[str, ...]:
    """The measures that rest on the reference sample: recall and F1 of an open task."""
    return tuple(m for m in snapshot_metrics(snapshot) if m in RECALL_MEASURES)


def snapshot_csv_header(snapshot: LeaderboardSnapshot) -> list[str]:
    header = ["version", *ROW_FIELDS]
    for metric in snapshot_metrics(snapshot):
        header += [f"{metric}_{field}" for field in METRIC_FIELDS]
    header += [f"{metric}_reference_too_small" for metric in _flagged_metrics(snapshot)]
    if _has_ranks(snapshot):
        for metric in snapshot_metrics(snapshot):
            header += [f"{metric}_rank", f"{metric}_rank_best", f"{metric}_rank_worst"]
    return header


def _has_ranks(snapshot: LeaderboardSnapshot) -> bool:
    return any(isinstance(row.get("rank"), dict) for row in snapshot.rows or [])


def _rows_marked(snapshot: LeaderboardSnapshot) -> list[dict]:
    """The snapshot's rows as stored, each with ``after_deadline``: whether its run came after
    the task's deadline as it stands now (read from the runs, so a moved deadline shows), and
    the board's words (copies: the stored rows are left as they are)."""
    late = set(
        Run.objects.filter(task_id=snapshot.task_id, after_deadline=True).values_list(
            "pk", flat=True
        )
    )
    terms = SnapshotTerms.of(snapshot.task, snapshot)
    return [
        _with_words({**row, "after_deadline": row.get("run") in late}, terms)
        for row in snapshot.rows or []
        if isinstance(row, dict)
    ]


def _with_words(row: dict, terms: SnapshotTerms) -> dict:
    row["state_text"] = terms.state_text(
        str(row.get("state", "")),
        outcome=row.get("outcome"),
        row=row,
        n_verified=row.get("n_verified"),
        n_requested=row.get("n_requested"),
    )
    if isinstance(row.get("rank"), dict):
        row["rank"] = {
            metric: {**entry, "text": rank_text(*interval)}
            if (interval := rank_of(entry)) is not None
            else entry
            for metric, entry in row["rank"].items()
        }
    if terms.reference is not None:
        for metric in RECALL_MEASURES:
            if isinstance(row.get(metric), dict):
                row[metric] = {**row[metric], "reference_too_small": terms.reference_short(metric)}
    return row


def snapshot_csv_rows(snapshot: LeaderboardSnapshot) -> Iterator[list[str]]:
    """The snapshot as CSV rows (header first), in the stored row order."""
    yield snapshot_csv_header(snapshot)
    ranked = _has_ranks(snapshot)
    metrics = snapshot_metrics(snapshot)
    flagged = _flagged_metrics(snapshot)
    for row in _rows_marked(snapshot):
        cells = [csv_cell(snapshot.version), *(csv_cell(row.get(f)) for f in ROW_FIELDS)]
        for metric in metrics:
            estimate = row.get(metric) or {}
            cells += [csv_cell(estimate.get(field)) for field in METRIC_FIELDS]
        cells += [csv_cell((row.get(m) or {}).get("reference_too_small")) for m in flagged]
        if ranked:
            ranks = row.get("rank") or {}
            for metric in metrics:
                rank = ranks.get(metric) or {}
                cells += [csv_cell(rank.get(key)) for key in ("text", "best", "worst")]
        yield cells


def snapshot_methods(snapshot: LeaderboardSnapshot) -> dict[str, list[str]]:
    """Per metric, the distinct interval methods the rows used (in first-seen order)."""
    metrics = snapshot_metrics(snapshot)
    methods: dict[str, list[str]] = {metric: [] for metric in metrics}
    for row in snapshot.rows or []:
        for metric in metrics:
            method = (row.get(metric) or {}).get("method")
            if method and method not in methods[metric]:
                methods[metric].append(method)
    return methods


def snapshot_json(snapshot: LeaderboardSnapshot) -> dict:
    """The snapshot as a JSON-ready dict: what it rests on (the reference sample recall rests
    on: ``None`` for a closed pool), and its rows as stored, with the board's words."""
    terms = SnapshotTerms.of(snapshot.task, snapshot)
    return {
        "task": snapshot.task.slug,
        "version": snapshot.version,
        "created_at": csv_cell(snapshot.created_at),
        "published": snapshot.published,
        "published_at": snapshot.published_at.isoformat() if snapshot.published_at else None,
        "engine_version": snapshot.engine_version,
        "design": snapshot.design,
        "labels_version": snapshot.labels_version,
        "reference_version": snapshot.reference_version,
        "n_labels": snapshot.n_labels,
        "n_reference": snapshot.n_reference,
        "n_reference_documents": snapshot.n_reference_documents,
        "reference": terms.reference.as_dict() if terms.reference else None,
        "target_half_width": terms.target,
        "confidence": snapshot.confidence,
        "methods": snapshot_methods(snapshot),
        "details": snapshot.details or {},
        "rows": _rows_marked(snapshot),
    }


def verified_items(task: Task) -> Iterator[tuple]:
    """The task's verified items in the order they were first judged, as value tuples
    ``(key, posterior, judgments, says_correct, verified_at)``.

    The posterior (probability that the item is correct, given every answer and the
    annotators' estimated error rates) and the counts are those of the latest estimation:
    ``None`` for an item judged since.
    """
    stored = LabelModelFit.objects.filter(task=task).first()
    if stored is None:
        indices = np.empty(0, np.int64)
    else:
        indices, values, judgments, says_correct = stored.arrays()
    rows = (
        Item.objects.filter(task=task, verified_at__isnull=False)
        .order_by("verified_at", "index")
        .values_list("key", "index", "verified_at")
        .iterator(chunk_size=ITEM_CHUNK)
    )
    for key, index, verified_at in rows:
        at = int(np.searchsorted(indices, index))
        if at < indices.size and indices[at] == index:
            yield (key, float(values[at]), int(judgments[at]), int(says_correct[at]), verified_at)
        else:
            yield key, None, None, None, verified_at


def verified_items_rows(task: Task) -> Iterator[list]:
    """The task's verified items as rows (header first): key, posterior, judgments,
    says_correct, verified_at (a datetime, or ``None``); ``site_platform.downloads.csv_lines``
    writes them as CSV cells. Streams from the database in chunks."""
    yield list(VERIFIED_ITEM_FIELDS)
    for values in verified_items(task):
        yield list(values)


def verified_items_json_chunks(task: Task) -> Iterator[str]:
    """The verified items as one JSON document, ``{"task", "items": [...]}``, in text chunks."""
    yield '{"task": ' + json.dumps(task.slug) + ', "items": ['
    first = True
    for key, posterior, judgments, says_correct, verified_at in verified_items(task):
        item = {
            "key": key,
            "posterior": posterior,
            "judgments": judgments,
            "says_correct": says_correct,
            "verified_at": verified_at.isoformat() if verified_at else None,
        }
        yield ("" if first else ", ") + json.dumps(item)
        first = False
    yield "]}\n"
