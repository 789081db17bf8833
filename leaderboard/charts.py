"""Server-side SVG charts: the per-task interval plot, the per-run history band and a closed-pool
run's precision-recall curve.

Pure functions returning SVG text to inline in a page: no scripts, no external fonts, every piece
of text escaped with :func:`html.escape`. Each chart is an accessible image (``role="img"``, an
``aria-label`` and a ``<title>``); class names (``lb-chart``, ``lb-point``, ...) let the site's
stylesheet restyle them, and the inline attributes keep them readable without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any, TypeGuard, cast

__all__ = [
    "CurvePoint",
    "HistoryPoint",
    "PlotPoint",
    "history_svg",
    "interval_plot_svg",
    "pr_curve_svg",
]

_FONT = 'font-family="system-ui, sans-serif"'
_INK = "#1f2933"
_MUTED = "#7b8794"
_ACCENT = "#1f6feb"
_HIGHLIGHT = "#d9480f"
_MAX_LABEL_CHARS = 30


@dataclass(frozen=True)
class PlotPoint:
    """One run's row of the interval plot: a point with whiskers ``[low, high]`` on ``[0, 1]``."""

    label: str
    value: float | None
    low: float | None
    high: float | None
    provisional: bool
    highlight: bool = False


@dataclass(frozen=True)
class HistoryPoint:
    """One snapshot of a run's estimate: ``x`` is the snapshot version (or the labels count)."""

    x: int
    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class CurvePoint:
    """One threshold of a precision-recall curve: recall (x) and precision (y), each with its
    pointwise interval; ``operating`` marks the run's own threshold."""

    threshold: float
    recall: float | None
    recall_low: float | None
    recall_high: float | None
    precision: float | None
    precision_low: float | None
    precision_high: float | None
    operating: bool = False


def _finite(v: Any) -> TypeGuard[float]:  # anything; True for a finite number
    if v is None or isinstance(v, str):
        return False
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _clamp01(v: float) -> float:
    return min(max(float(v), 0.0), 1.0)


def _num(v: float) -> str:
    return f"{v:.1f}"


def _fmt(v) -> str:
    return f"{v:.3f}" if _finite(v) else "n/a"


def _short(label: str) -> str:
    return label if len(label) <= _MAX_LABEL_CHARS else label[: _MAX_LABEL_CHARS - 1] + "\u2026"


def _open(width: float, height: float, label: str, css: str) -> list[str]:
    text = escape(label, quote=True)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lb-chart {css}" role="img" '
        f'width="{_num(width)}" height="{_num(height)}" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" aria-label="{text}">',
        f"<title>{text}</title>",
    ]


def interval_plot_svg(
    points: Sequence[PlotPoint], *, metric_label: str, width: int = 720, row_height: int = 22
) -> str:
    """Points with whiskers per run on a 0-1 axis, one row per run, in the order given.

    Provisional estimates (runs still awaiting answers) are drawn hollow; ``highlight`` rows get
    an accent colour; rows without a finite value read "no estimate" (their bounds, if finite,
    are still drawn faintly). Values outside ``[0, 1]`` are clamped to the axis.
    """
    width = max(int(width), 240)
    row_height = max(int(row_height), 12)
    label_w = min(220.0, width * 0.35)
    left, right = label_w + 8.0, width - 16.0
    top = 30.0
    height = top + max(len(points), 1) * row_height + 8.0
    title = f"{metric_label}: estimate and confidence interval per run"
    out = _open(width, height, title, "lb-interval-plot")
    out.append(f'<g {_FONT} font-size="11" fill="{_INK}">')

    def x_of(v: float) -> float:
        return left + _clamp01(v) * (right - left)

    bottom = height - 8.0
    for k in range(5):
        tick = k / 4
        x = x_of(tick)
        out.append(
            f'<line class="lb-grid" x1="{_num(x)}" y1="{_num(top - 4)}" x2="{_num(x)}" '
            f'y2="{_num(bottom)}" stroke="#e4e7eb" stroke-width="1"/>'
        )
        out.append(
            f'<text class="lb-tick" x="{_num(x)}" y="{_num(top - 10)}" '
            f'text-anchor="middle" fill="{_MUTED}">{tick:g}</text>'
        )
    out.append(
        f'<text x="{_num(left - 8)}" y="{_num(top - 10)}" text-anchor="end" '
        f'font-weight="bold">{escape(metric_label)}</text>'
    )
    if not points:
        out.append(
            f'<text x="{_num(left)}" y="{_num(top + row_height * 0.7)}" '
            f'fill="{_MUTED}">no runs to plot</text>'
        )
    for row, p in enumerate(points):
        y = top + row * row_height + row_height / 2
        colour = _HIGHLIGHT if p.highlight else _ACCENT
        label = str(p.label)
        weight = ' font-weight="bold"' if p.highlight else ""
        state = "provisional" if p.provisional else "final"
        out.append(f'<g class="lb-row lb-{state}">')
        out.append(
            f"<title>{escape(label)}: {_fmt(p.value)} [{_fmt(p.low)}, {_fmt(p.high)}]"
            f"{' (provisional)' if p.provisional else ''}</title>"
        )
        out.append(
            f'<text class="lb-label" x="{_num(left - 8)}" y="{_num(y + 4)}" '
            f'text-anchor="end"{weight}>{escape(_short(label))}</text>'
        )
        if _finite(p.low) and _finite(p.high):
            x1, x2 = x_of(min(p.low, p.high)), x_of(max(p.low, p.high))
            faint = "" if _finite(p.value) else ' stroke-opacity="0.35" stroke-dasharray="3 3"'
            out.append(
                f'<line class="lb-whisker" x1="{_num(x1)}" y1="{_num(y)}" '
                f'x2="{_num(x2)}" y2="{_num(y)}" stroke="{colour}" '
                f'stroke-width="2"{faint}/>'
            )
            for xe in (x1, x2):
                out.append(
                    f'<line class="lb-cap" x1="{_num(xe)}" y1="{_num(y - 4)}" '
                    f'x2="{_num(xe)}" y2="{_num(y + 4)}" stroke="{colour}" '
                    f'stroke-width="1.5"{faint}/>'
                )
        if _finite(p.value):
            fill = "#ffffff" if p.provisional else colour
            out.append(
                f'<circle class="lb-point" cx="{_num(x_of(p.value))}" cy="{_num(y)}" '
                f'r="4.5" fill="{fill}" stroke="{colour}" stroke-width="2"/>'
            )
        else:
            out.append(
                f'<text class="lb-missing" x="{_num(left + 4)}" y="{_num(y + 4)}" '
                f'fill="{_MUTED}" font-style="italic">no estimate</text>'
            )
        out.append("</g>")
    out.append("</g></svg>")
    return "\n".join(out)


def history_svg(points: Sequence[HistoryPoint], *, width: int = 320, height: int = 80) -> str:
    """A small band chart of one run's estimate and interval as answers arrived.

    Points are drawn in order of ``x``; points without a finite value or bounds are skipped. The
    vertical axis spans the band (at least 0.05 wide, within ``[0, 1]``) and is labelled at its
    ends, so a narrowing interval stays visible.
    """
    width = max(int(width), 120)
    height = max(int(height), 48)
    pad_l, pad_r, pad_t, pad_b = 34.0, 8.0, 6.0, 14.0
    usable = sorted(
        (
            p
            for p in points
            if _finite(p.value) and _finite(p.low) and _finite(p.high) and _finite(p.x)
        ),
        key=lambda p: p.x,
    )
    if usable:
        last = usable[-1]
        summary = (
            f"Estimate history over {len(usable)} snapshots: now {_fmt(last.value)} "
            f"[{_fmt(last.low)}, {_fmt(last.high)}]"
        )
    else:
        summary = "Estimate history: no estimate yet"
    out = _open(width, height, summary, "lb-history")
    out.append(f'<g {_FONT} font-size="10" fill="{_INK}">')
    if not usable:
        return _closed_with_note(out, width / 2, height / 2 + 3, "no estimate yet")

    # Every usable point has finite numbers (filtered above).
    lows = [_clamp01(min(cast(float, p.low), cast(float, p.high))) for p in usable]
    highs = [_clamp01(max(cast(float, p.low), cast(float, p.high))) for p in usable]
    values = [_clamp01(cast(float, p.value)) for p in usable]
    y_lo, y_hi = min(lows + values), max(highs + values)
    if y_hi - y_lo < 0.05:
        mid = (y_hi + y_lo) / 2
        y_lo, y_hi = max(0.0, mid - 0.025), min(1.0, mid + 0.025)
        if y_hi - y_lo < 0.05:
            y_lo, y_hi = (0.0, 0.05) if y_lo == 0.0 else (0.95, 1.0)
    x_min, x_max = float(usable[0].x), float(usable[-1].x)
    left, right, top, bottom = pad_l, width - pad_r, pad_t, height - pad_b

    def x_of(x: float) -> float:
        if x_max == x_min:
            return (left + right) / 2
        return left + (float(x) - x_min) / (x_max - x_min) * (right - left)

    def y_of(v: float) -> float:
        return bottom - (v - y_lo) / (y_hi - y_lo) * (bottom - top)

    out.append(
        f'<line x1="{_num(left)}" y1="{_num(top)}" x2="{_num(left)}" '
        f'y2="{_num(bottom)}" stroke="#cbd2d9" stroke-width="1"/>'
    )
    out.append(
        f'<text class="lb-tick" x="{_num(left - 3)}" y="{_num(top + 7)}" '
        f'text-anchor="end" fill="{_MUTED}">{y_hi:.2f}</text>'
    )
    out.append(
        f'<text class="lb-tick" x="{_num(left - 3)}" y="{_num(bottom)}" '
        f'text-anchor="end" fill="{_MUTED}">{y_lo:.2f}</text>'
    )
    out.append(
        f'<text class="lb-tick" x="{_num(left)}" y="{_num(height - 2)}" '
        f'fill="{_MUTED}">{int(x_min)}</text>'
    )
    if x_max != x_min:
        out.append(
            f'<text class="lb-tick" x="{_num(right)}" y="{_num(height - 2)}" '
            f'text-anchor="end" fill="{_MUTED}">{int(x_max)}</text>'
        )
    if len(usable) == 1:
        x = x_of(usable[0].x)
        out.append(
            f'<line class="lb-band" x1="{_num(x)}" y1="{_num(y_of(highs[0]))}" '
            f'x2="{_num(x)}" y2="{_num(y_of(lows[0]))}" stroke="{_ACCENT}" '
            f'stroke-opacity="0.4" stroke-width="6"/>'
        )
    else:
        upper = [f"{_num(x_of(p.x))},{_num(y_of(h))}" for p, h in zip(usable, highs, strict=True)]
        lower = [f"{_num(x_of(p.x))},{_num(y_of(lo))}" for p, lo in zip(usable, lows, strict=True)]
        out.append(
            f'<polygon class="lb-band" points="{" ".join(upper + lower[::-1])}" '
            f'fill="{_ACCENT}" fill-opacity="0.2" stroke="none"/>'
        )
        line = " ".join(
            f"{_num(x_of(p.x))},{_num(y_of(v))}" for p, v in zip(usable, values, strict=True)
        )
        out.append(
            f'<polyline class="lb-line" points="{line}" fill="none" '
            f'stroke="{_ACCENT}" stroke-width="1.5"/>'
        )
    for p, v in zip(usable, values, strict=True):
        out.append(
            f'<circle class="lb-point" cx="{_num(x_of(p.x))}" cy="{_num(y_of(v))}" '
            f'r="2" fill="{_ACCENT}"><title>{int(p.x)}: {_fmt(p.value)} '
            f"[{_fmt(p.low)}, {_fmt(p.high)}]</title></circle>"
        )
    out.append("</g></svg>")
    return "\n".join(out)


def pr_curve_svg(
    points: Sequence[CurvePoint], *, level_label: str = "", width: int = 420, height: int = 320
) -> str:
    """A precision-recall curve on ``[0, 1]^2`` with each point's pointwise intervals as a cross
    (recall horizontally, precision vertically), the points joined in the order given, the run's
    own threshold drawn larger. Points without a finite recall and precision are skipped (a
    threshold no item reaches has no precision).
    """
    width = max(int(width), 200)
    height = max(int(height), 160)
    left, right, top, bottom = 44.0, width - 12.0, 12.0, height - 36.0
    usable = [p for p in points if _finite(p.recall) and _finite(p.precision)]
    summary = f"Estimated precision-recall curve: {len(usable)} thresholds"
    if level_label:
        summary += f", pointwise {level_label} intervals"
    out = _open(width, height, summary, "lb-pr-curve")
    out.append(f'<g {_FONT} font-size="10" fill="{_INK}">')

    def x_of(v: float) -> float:
        return left + _clamp01(v) * (right - left)

    def y_of(v: float) -> float:
        return bottom - _clamp01(v) * (bottom - top)

    for k in range(5):
        tick = k / 4
        x, y = x_of(tick), y_of(tick)
        out.append(
            f'<line class="lb-grid" x1="{_num(x)}" y1="{_num(top)}" x2="{_num(x)}" '
            f'y2="{_num(bottom)}" stroke="#e4e7eb" stroke-width="1"/>'
        )
        out.append(
            f'<line class="lb-grid" x1="{_num(left)}" y1="{_num(y)}" x2="{_num(right)}" '
            f'y2="{_num(y)}" stroke="#e4e7eb" stroke-width="1"/>'
        )
        out.append(
            f'<text class="lb-tick" x="{_num(x)}" y="{_num(bottom + 13)}" '
            f'text-anchor="middle" fill="{_MUTED}">{tick:g}</text>'
        )
        out.append(
            f'<text class="lb-tick" x="{_num(left - 5)}" y="{_num(y + 3)}" '
            f'text-anchor="end" fill="{_MUTED}">{tick:g}</text>'
        )
    out.append(
        f'<text x="{_num((left + right) / 2)}" y="{_num(height - 6)}" text-anchor="middle" '
        f'font-weight="bold">Recall</text>'
    )
    out.append(
        f'<text x="12" y="{_num((top + bottom) / 2)}" text-anchor="middle" font-weight="bold" '
        f'transform="rotate(-90 12 {_num((top + bottom) / 2)})">Precision</text>'
    )
    if not usable:
        return _closed_with_note(out, (left + right) / 2, (top + bottom) / 2, "no curve yet")
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{_num(x_of(cast(float, p.recall)))},"
        f"{_num(y_of(cast(float, p.precision)))}"
        for i, p in enumerate(usable)
    )
    out.append(
        f'<path class="lb-curve" d="{path}" fill="none" stroke="{_ACCENT}" stroke-width="1.5"/>'
    )
    for p in usable:
        x, y = x_of(cast(float, p.recall)), y_of(cast(float, p.precision))
        colour = _HIGHLIGHT if p.operating else _ACCENT
        css = "lb-curve-point lb-operating" if p.operating else "lb-curve-point"
        out.append(f'<g class="{css}">')
        out.append(
            f"<title>threshold {_fmt(p.threshold)}: recall {_fmt(p.recall)} "
            f"[{_fmt(p.recall_low)}, {_fmt(p.recall_high)}], precision {_fmt(p.precision)} "
            f"[{_fmt(p.precision_low)}, {_fmt(p.precision_high)}]"
            f"{' (its own threshold)' if p.operating else ''}</title>"
        )
        if _finite(p.recall_low) and _finite(p.recall_high):
            out.append(
                f'<line class="lb-whisker" x1="{_num(x_of(p.recall_low))}" y1="{_num(y)}" '
                f'x2="{_num(x_of(p.recall_high))}" y2="{_num(y)}" stroke="{colour}" '
                f'stroke-opacity="0.45" stroke-width="1"/>'
            )
        if _finite(p.precision_low) and _finite(p.precision_high):
            out.append(
                f'<line class="lb-whisker" x1="{_num(x)}" y1="{_num(y_of(p.precision_low))}" '
                f'x2="{_num(x)}" y2="{_num(y_of(p.precision_high))}" stroke="{colour}" '
                f'stroke-opacity="0.45" stroke-width="1"/>'
            )
        radius = "4.5" if p.operating else "2.5"
        out.append(
            f'<circle class="lb-point" cx="{_num(x)}" cy="{_num(y)}" r="{radius}" '
            f'fill="{colour}" stroke="{colour}"/>'
        )
        out.append("</g>")
    out.append("</g></svg>")
    return "\n".join(out)


def _closed_with_note(out: list[str], x: float, y: float, note: str) -> str:
    """The chart begun in ``out`` with only ``note`` at ``(x, y)`` (nothing to draw yet)."""
    out.append(
        f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="middle" fill="{_MUTED}">{note}</text>'
    )
    out.append("</g></svg>")
    return "\n".join(out)
