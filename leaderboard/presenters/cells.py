"""One run's measures as the pages show them: a value with its interval, and a rank interval.

Shared by the board (:mod:`.board`) and the run pages (:mod:`.runs`); text only, no queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation.core.closed_pool import f_beta_label

from ..board_text import rank_of, rank_text
from ..models import Task

__all__ = ["METRIC_LABELS", "MetricCell", "RankInterval", "metric_labels", "ordinal"]

METRIC_LABELS = {
    "precision": "Precision",
    "recall": "Recall",
    "f1": "F1",
    "accuracy": "Accuracy",
    "balanced_accuracy": "Balanced accuracy",
    "mcc": "MCC",
    "fbeta": "F\u03b2",  # a task's own label names its beta: metric_labels
}
MINUS = "\u2212"


def metric_labels(task: Task) -> dict[str, str]:
    """Every metric's name on ``task``'s pages: F-beta as ``F0.5``, ``F2``, ... (its beta)."""
    return {**METRIC_LABELS, "fbeta": f_beta_label(task.f_beta)}


def _fmt(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


@dataclass(frozen=True)
class MetricCell:
    """One metric of one run: value, interval ends, labels used; shown as ``0.712 +0.041 / -0.058``.

    The page prints a real minus sign (U+2212) in the lower distance.
    """

    value: float | None
    low: float | None
    high: float | None
    labels_used: int | None
    method: str
    # Why the value is not to be read as settled (recall on too small a reference sample), or "".
    note: str = ""

    @classmethod
    def from_row(cls, data, note: str = "") -> MetricCell:
        data = data if isinstance(data, dict) else {}
        return cls(
            value=data.get("value"),
            low=data.get("low"),
            high=data.get("high"),
            labels_used=data.get("labels_used"),
            method=str(data.get("method") or ""),
            note=note,
        )

    @property
    def value_text(self) -> str:
        return _fmt(self.value)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def plus_text(self) -> str:
        if self.value is None or self.high is None:
            return ""
        return f"+{max(0.0, self.high - self.value):.3f}"

    @property
    def minus_text(self) -> str:
        if self.value is None or self.low is None:
            return ""
        return f"{MINUS}{max(0.0, self.value - self.low):.3f}"

    @property
    def interval_text(self) -> str:
        if not self.has_interval:
            return ""
        return f"[{_fmt(self.low)}, {_fmt(self.high)}]"

    @property
    def text(self) -> str:
        if self.value is None or not self.has_interval:
            return self.value_text
        return f"{self.value_text} {self.plus_text} / {self.minus_text}"


@dataclass(frozen=True)
class RankInterval:
    """Where a run may rank: ``best`` = 1 + runs significantly better, ``worst`` likewise."""

    best: int
    worst: int

    @classmethod
    def from_row(cls, data) -> RankInterval | None:
        interval = rank_of(data)
        return None if interval is None else cls(*interval)

    @property
    def text(self) -> str:
        """``"3"`` or ``"2\u20135"``: :func:`leaderboard.board_text.rank_text`, as everywhere."""
        return rank_text(self.best, self.worst)

    @property
    def title(self) -> str:
        if self.best == self.worst:
            return f"ranks {ordinal(self.best)}"
        return f"tied: could rank anywhere from {ordinal(self.best)} to {ordinal(self.worst)}"
