"""The board's interval plot and a run's history charts, drawn by :mod:`leaderboard.charts`.

The charts module returns escaped SVG text; a page without it (an older deployment) simply shows
no chart.
"""

from __future__ import annotations

from types import ModuleType

charts: ModuleType | None
try:
    from .. import charts
except ImportError:  # pragma: no cover - the charts module ships with the app
    charts = None


def interval_plot(rows, *, sort: str, metric_label: str) -> str:
    """Points with whiskers for the board's sort metric, in the board's order."""
    if charts is None:
        return ""
    points = []
    for row in rows:
        cell = row.cell(sort)
        if cell.value is None or not cell.has_interval:
            continue
        points.append(
            charts.PlotPoint(
                label=f"{row.name} ({row.team})" if row.team else row.name,
                value=cell.value,
                low=cell.low,
                high=cell.high,
                provisional=row.provisional,
            )
        )
    if not points:
        return ""
    return charts.interval_plot_svg(points, metric_label=metric_label)


def history_chart(estimates) -> str:
    """How one metric's estimate and interval moved across snapshots (x = snapshot version)."""
    if charts is None:
        return ""
    points = [
        charts.HistoryPoint(x=e.snapshot_version, value=e.value, low=e.low, high=e.high)
        for e in estimates
        if e.value is not None
    ]
    if not points:
        return ""
    return charts.history_svg(points)


def pr_curve_chart(data) -> tuple[str, int]:
    """A closed-pool run's stored precision-recall curve (``RunCurve.data``) as SVG, and how many
    of its thresholds it draws; ``("", 0)`` for a curve without points."""
    if charts is None or not isinstance(data, dict):
        return "", 0
    keys = (
        "thresholds",
        "recall",
        "recall_low",
        "recall_high",
        "precision",
        "precision_low",
        "precision_high",
    )
    columns: list[list] = [column if isinstance(column := data.get(k), list) else [] for k in keys]
    n = min(len(c) for c in columns)
    operating = data.get("operating_point")
    points = [
        charts.CurvePoint(*(c[i] for c in columns), operating=i == operating) for i in range(n)
    ]
    drawn = sum(p.recall is not None and p.precision is not None for p in points)
    if not drawn:
        return "", 0
    level = data.get("level")
    label = f"{level * 100:g}%" if isinstance(level, (int, float)) else ""
    return charts.pr_curve_svg(points, level_label=label), drawn
