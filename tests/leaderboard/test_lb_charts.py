"""The SVG charts are well-formed, escaped, accessible and keep every mark inside the picture."""

import math
import re
import xml.etree.ElementTree as ET

import pytest

from leaderboard.charts import (
    CurvePoint,
    HistoryPoint,
    PlotPoint,
    history_svg,
    interval_plot_svg,
    pr_curve_svg,
)

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script> & \'quoted\' "run"'


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == NS + "svg"
    assert root.get("role") == "img"
    assert root.get("aria-label")
    assert root.find(NS + "title") is not None and root.find(NS + "title").text
    return root


def size(root):
    return float(root.get("width")), float(root.get("height"))


def assert_inside(root):
    """Every coordinate of every mark lies within the viewBox."""
    width, height = size(root)
    assert root.get("viewBox") == f"0 0 {width:.1f} {height:.1f}"
    seen = 0
    for el in root.iter():
        for attr in ("x", "x1", "x2", "cx"):
            if el.get(attr) is not None:
                assert -0.01 <= float(el.get(attr)) <= width + 0.01, (el.tag, attr, el.attrib)
                seen += 1
        for attr in ("y", "y1", "y2", "cy"):
            if el.get(attr) is not None:
                assert -0.01 <= float(el.get(attr)) <= height + 0.01, (el.tag, attr, el.attrib)
                seen += 1
        if el.get("points"):
            for pair in el.get("points").split():
                x, y = map(float, pair.split(","))
                assert 0 <= x <= width and 0 <= y <= height
                seen += 1
    assert seen > 0


def texts(root):
    return ["".join(el.itertext()) for el in root.iter(NS + "text")]


def circles(root):
    return list(root.iter(NS + "circle"))


def test_interval_plot_draws_a_point_and_whiskers_per_run():
    points = [
        PlotPoint("alpha", 0.71, 0.65, 0.75, provisional=False),
        PlotPoint("beta", 0.30, 0.10, 0.52, provisional=True),
        PlotPoint("gamma", 0.5, 0.4, 0.6, provisional=False, highlight=True),
    ]
    root = parse(interval_plot_svg(points, metric_label="Precision"))
    assert_inside(root)
    dots = circles(root)
    assert len(dots) == 3
    # Positions follow the values on the axis: alpha right of gamma right of beta.
    cx = [float(c.get("cx")) for c in dots]
    assert cx[1] < cx[2] < cx[0]
    # Provisional points are hollow; final points are filled with their stroke colour.
    assert dots[1].get("fill") == "#ffffff"
    assert dots[0].get("fill") == dots[0].get("stroke")
    assert dots[2].get("stroke") != dots[0].get("stroke")  # highlighted row stands out
    whiskers = [el for el in root.iter(NS + "line") if el.get("class") == "lb-whisker"]
    assert len(whiskers) == 3
    # The whisker of alpha spans [0.65, 0.75] on the same scale as its point.
    left, right = float(whiskers[0].get("x1")), float(whiskers[0].get("x2"))
    assert left < cx[0] < right
    assert (cx[0] - left) > (right - cx[0])  # 0.71 +0.04/-0.06: asymmetric as given
    t = texts(root)
    assert "Precision" in t and "alpha" in t and {"0", "0.5", "1"} <= set(t)
    assert "Precision" in root.get("aria-label")


def test_interval_plot_escapes_hostile_labels():
    svg = interval_plot_svg(
        [PlotPoint(HOSTILE, 0.5, 0.4, 0.6, provisional=False)], metric_label="F1 <b>&</b>"
    )
    assert "<script" not in svg and "<b>" not in svg
    root = parse(svg)
    assert any("<script>" in s for s in texts(root))  # shown literally, not executed
    assert "F1 <b>&</b>" in texts(root)
    assert "F1 <b>&</b>" in root.get("aria-label")
    row_titles = ["".join(el.itertext()) for el in root.iter(NS + "title")]
    assert any(HOSTILE in s for s in row_titles)  # the full label, not the shortened one


def test_interval_plot_handles_empty_input():
    root = parse(interval_plot_svg([], metric_label="Recall"))
    assert_inside(root)
    assert "no runs to plot" in texts(root)
    assert circles(root) == []


@pytest.mark.parametrize("value", [None, math.nan])
def test_interval_plot_marks_rows_without_an_estimate(value):
    points = [
        PlotPoint("no-value", value, None, None, provisional=True),
        PlotPoint("bounds-only", value, 0.2, 0.9, provisional=False),
        PlotPoint("ok", 0.4, 0.3, 0.5, provisional=False),
    ]
    root = parse(interval_plot_svg(points, metric_label="Recall"))
    assert_inside(root)
    assert texts(root).count("no estimate") == 2
    assert len(circles(root)) == 1


def test_interval_plot_clamps_out_of_range_values_to_the_axis():
    points = [
        PlotPoint("over", 1.3, 1.1, 2.0, provisional=False),
        PlotPoint("under", -0.2, -1.0, math.inf, provisional=False),
    ]
    root = parse(interval_plot_svg(points, metric_label="P", width=300, row_height=14))
    assert_inside(root)


def test_interval_plot_shortens_long_labels_but_keeps_them_in_the_tooltip():
    long = "x" * 200
    root = parse(interval_plot_svg([PlotPoint(long, 0.5, 0.4, 0.6, False)], metric_label="P"))
    label = next(s for s in texts(root) if s.startswith("xxx"))
    assert len(label) < 40
    assert any(long in "".join(el.itertext()) for el in root.iter(NS + "title"))


def test_history_draws_a_band_that_narrows():
    points = [
        HistoryPoint(3, 0.7, 0.55, 0.85),
        HistoryPoint(1, 0.6, 0.2, 0.95),
        HistoryPoint(7, 0.72, 0.68, 0.76),
    ]
    root = parse(history_svg(points))
    assert_inside(root)
    band = root.find(f".//{NS}polygon")
    coords = [tuple(map(float, p.split(","))) for p in band.get("points").split()]
    assert len(coords) == 6
    upper, lower = coords[:3], coords[3:][::-1]
    xs = [x for x, _ in upper]
    assert xs == sorted(xs)  # drawn in order of x, not of input
    heights = [lo[1] - up[1] for up, lo in zip(upper, lower, strict=True)]  # SVG y grows downwards
    assert heights[0] > heights[1] > heights[2] > 0
    assert "now 0.720 [0.680, 0.760]" in root.get("aria-label")
    assert len(circles(root)) == 3


@pytest.mark.parametrize(
    "points", [[], [HistoryPoint(1, None, None, None)], [HistoryPoint(1, math.nan, 0.0, 1.0)]]
)
def test_history_without_estimates_says_so(points):
    root = parse(history_svg(points))
    assert "no estimate yet" in texts(root)
    assert circles(root) == []


def test_history_handles_one_point_and_a_collapsed_interval():
    root = parse(history_svg([HistoryPoint(5, 1.0, 1.0, 1.0)], width=100, height=30))
    assert_inside(root)
    assert len(circles(root)) == 1
    root = parse(history_svg([HistoryPoint(1, 0.0, 0.0, 0.0), HistoryPoint(2, 0.0, 0.0, 0.0)]))
    assert_inside(root)


def test_history_skips_unusable_points_and_escapes_nothing_hostile():
    svg = history_svg(
        [
            HistoryPoint(1, 0.5, math.nan, 0.6),
            HistoryPoint(2, 0.5, 0.4, 0.6),
            HistoryPoint(3, 0.55, 0.45, 0.62),
        ]
    )
    root = parse(svg)
    assert_inside(root)
    assert len(circles(root)) == 2
    assert not re.search(r"nan|inf", svg.replace("font", ""))


def test_the_pr_curve_draws_finite_points_inside_with_the_operating_point_marked():
    points = [
        CurvePoint(0.0, 1.0, 0.9, 1.0, 0.05, 0.02, 0.08),
        CurvePoint(0.4, 0.7, 0.6, 0.8, 0.5, 0.4, 0.6, operating=True),
        CurvePoint(0.9, 0.2, 0.1, 0.3, None, 0.0, 1.0),  # no item reaches it: skipped
        CurvePoint(0.95, 0.1, -0.2, 1.4, 0.9, math.nan, 0.95),  # out-of-range bounds clamped
    ]
    svg = pr_curve_svg(points, level_label="95%")
    root = parse(svg)
    assert_inside(root)
    assert len(root.findall(f".//{NS}circle")) == 3
    assert "pointwise 95% intervals" in root.get("aria-label")
    operating = [g for g in root.iter(NS + "g") if "lb-operating" in (g.get("class") or "")]
    assert len(operating) == 1 and "threshold 0.400" in operating[0].find(NS + "title").text
    assert "M" in root.find(f".//{NS}path").get("d")


def test_a_pr_curve_without_points_says_so():
    root = parse(pr_curve_svg([CurvePoint(0.5, None, None, None, None, None, None)]))
    assert "no curve yet" in ET.tostring(root, encoding="unicode")
    assert root.find(f".//{NS}circle") is None
