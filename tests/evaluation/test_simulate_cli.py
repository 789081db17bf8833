"""Tests for the ``python -m evaluation.simulate`` command line (``evaluation.simulate.main``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.results import Plan
from evaluation.core.state import TaskState
from evaluation.simulate import main
from evaluation.simulation.annotators import AnnotatorPanel
from evaluation.simulation.datasets import load_dataset
from evaluation.simulation.open_world.campaigns import simulate
from evaluation.simulation.open_world.rank_report import OpenWorldRanks

SLICE = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice"
SYSTEM_NAMES = sorted(p.stem for p in (SLICE / "systems").glob("*.tsv"))
N_SYSTEMS = len(SYSTEM_NAMES)  # 55
KEYS = (
    "design",
    "dataset",
    "systems",
    "repeats",
    "seed",
    "target_half_width",
    "confidence",
    "reference_size",
    "labels_mean",
    "labels_sd",
    "target_met",
    "coverage",
    "half_width_median",
    "bias",
    "seconds",
)
SMALL = ["--systems", "8", "--repeats", "2"]


def _no_nan(token: str):
    raise AssertionError(f"JSON output contains {token}")


def run_json(capsys, *args) -> dict:
    code = main([str(SLICE), "--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    lines = out.splitlines()
    assert len(lines) == 1
    assert out.endswith("\n")
    return json.loads(lines[0], parse_constant=_no_nan)


def run_error(capsys, argv) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert "error:" in err
    return err


def make_dataset(
    root: Path, systems: dict[str, str], truth: str = "a\nb\nc\n", items: list[str] | None = None
) -> Path:
    ds = root / "ds"
    (ds / "systems").mkdir(parents=True)
    (ds / "truth.tsv").write_text(truth)
    for name, text in systems.items():
        (ds / "systems" / f"{name}.tsv").write_text(text)
    if items is not None:
        (ds / "items.jsonl").write_text("".join(json.dumps({"key": k}) + "\n" for k in items))
    return ds


# --------------------------------------------------------------------------- --json


@pytest.mark.parametrize("design", ["default", "published"])
def test_json_has_every_key_with_sane_values(capsys, design):
    out = run_json(capsys, *SMALL, "--seed", "3", "--design", design)
    for key in KEYS:
        assert key in out, key
    assert "per_system" not in out
    assert out["design"] == design
    assert out["dataset"] == "febrl4_slice"
    assert out["systems"] == 8 and out["repeats"] == 2 and out["seed"] == 3
    assert out["target_half_width"] == 0.05
    assert out["confidence"] == 0.95
    assert out["reference_size"] == 300
    # two repeats, each an integer number of distinct labels (at most the 2,872 items):
    # mean +- sd / sqrt(2) are those two integers
    mean, sd = out["labels_mean"], out["labels_sd"]
    assert isinstance(mean, float) and isinstance(sd, float)
    assert 0 < mean <= 2872 and sd >= 0
    lo, hi = mean - sd / math.sqrt(2), mean + sd / math.sqrt(2)
    assert lo == pytest.approx(round(lo), abs=1e-6) and hi == pytest.approx(round(hi), abs=1e-6)
    assert 1 <= round(lo) <= round(hi) <= 2872
    # 8 systems x 2 repeats = 16 cells: shares are multiples of 1/16
    cells = 16
    assert 0 <= out["target_met"] <= 1
    assert out["target_met"] * cells == pytest.approx(round(out["target_met"] * cells))
    for block in ("coverage", "half_width_median", "bias"):
        assert set(out[block]) >= set(OPEN_MEASURES), block
        for m in OPEN_MEASURES:
            assert isinstance(out[block][m], float), (block, m)
    for m in OPEN_MEASURES:
        c = out["coverage"][m]
        assert 0 <= c <= 1 and c * cells == pytest.approx(round(c * cells))
        assert 0 <= out["half_width_median"][m] <= 0.5
        assert -1 <= out["bias"][m] <= 1
    # the design plans until the precision half-width meets the target (unlimited budget)
    assert out["half_width_median"]["precision"] <= 0.05
    if design == "default":
        assert out["target_met"] == 1.0
    assert isinstance(out["seconds"], float) and 0 <= out["seconds"] < 60


def test_json_matches_the_library_summary(capsys):
    out = run_json(
        capsys,
        *SMALL,
        "--seed",
        "5",
        "--target-half-width",
        "0.08",
        "--confidence",
        "0.9",
        "--reference-size",
        "120",
        "--interval",
        "jeffreys",
    )
    summary = simulate(
        load_dataset(SLICE),
        design="default",
        systems=8,
        repeats=2,
        seed=5,
        target_half_width=0.08,
        confidence=0.9,
        reference_size=120,
        design_options={"interval": "jeffreys"},
        ranker=OpenWorldRanks("paired", 0.9),
    ).as_dict()
    summary.pop("per_system")
    summary.pop("seconds")
    out.pop("seconds")
    assert json.loads(json.dumps(summary)) == out
    assert out["target_half_width"] == 0.08 and out["confidence"] == 0.9
    assert out["reference_size"] == 120


def test_same_seed_same_output_and_different_seed_differs(capsys):
    a = run_json(capsys, *SMALL, "--seed", "3")
    b = run_json(capsys, *SMALL, "--seed", "3")
    c = run_json(capsys, *SMALL, "--seed", "4")
    a.pop("seconds")
    b.pop("seconds")
    assert a == b
    # seeds 3 and 4 draw different systems (186.0 vs 236.5 labels per repeat when written)
    assert c["labels_mean"] != a["labels_mean"]


def test_json_per_system(capsys):
    out = run_json(capsys, *SMALL, "--seed", "3", "--per-system")
    rows = out["per_system"]
    assert rows and {r["system"] for r in rows} <= set(SYSTEM_NAMES)
    assert sum(r["cells"] for r in rows) == 16
    assert [r["system"] for r in rows] == sorted(r["system"] for r in rows)


def test_more_systems_than_exist_uses_all_of_them(capsys):
    out = run_json(capsys, "--systems", "1000", "--repeats", "1", "--design", "published")
    assert out["systems"] == N_SYSTEMS == 55


def test_more_systems_than_exist_uses_all_of_them_default_design(capsys):
    out = run_json(capsys, "--systems", "1000", "--repeats", "1", "--design", "default")
    assert out["systems"] == N_SYSTEMS


@pytest.mark.parametrize("design", ["default", "published"])
def test_reference_size_zero(capsys, design):
    out = run_json(capsys, *SMALL, "--seed", "3", "--reference-size", "0", "--design", design)
    assert out["reference_size"] == 0
    # recall is not identifiable: no point estimate (bias null), but an honest interval
    assert out["bias"]["recall"] is None
    assert out["bias"]["precision"] is not None
    assert isinstance(out["coverage"]["recall"], float)
    assert out["coverage"]["recall"] == 1.0
    assert 0 < out["half_width_median"]["recall"] <= 0.5


@pytest.mark.slow
def test_module_entry_point_runs_in_a_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "evaluation.simulate", str(SLICE), "--json", *SMALL, "--seed", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    out = json.loads(lines[0], parse_constant=_no_nan)
    assert out["systems"] == 8 and out["design"] == "default" and out["seed"] == 3


# --------------------------------------------------------------------------- table


def test_table_output(capsys):
    summary = run_json(capsys, *SMALL, "--seed", "3")
    code = main([str(SLICE), *SMALL, "--seed", "3"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("design default on febrl4_slice: 8 systems x 2 repeats (seed 3)")
    assert f"labels per repeat: {summary['labels_mean']:.1f} (sd {summary['labels_sd']:.1f})" in out
    for m in OPEN_MEASURES:
        rows = [ln for ln in lines if ln.split() and ln.split()[0] == m]
        assert len(rows) == 1, m
        fields = rows[0].split()
        assert len(fields) == 5  # metric coverage half-width bias se
        assert float(fields[1]) == pytest.approx(summary["coverage"][m], abs=5e-4)
        assert float(fields[2]) == pytest.approx(summary["half_width_median"][m], abs=5e-5)
        assert float(fields[3]) == pytest.approx(summary["bias"][m], abs=5e-5)
    assert not any(ln.split() and ln.split()[0] in SYSTEM_NAMES for ln in lines)


def test_table_per_system_adds_system_rows(capsys):
    code = main([str(SLICE), *SMALL, "--seed", "3", "--per-system"])
    out, _ = capsys.readouterr()
    assert code == 0
    lines = out.splitlines()
    system_rows = [ln for ln in lines if ln.split() and ln.split()[0] in SYSTEM_NAMES]
    assert 8 <= len(system_rows) <= 16  # 8 distinct systems per repeat, 2 repeats
    assert sum(int(r.split()[1]) for r in system_rows) == 16  # cells
    assert any(ln.startswith("system") for ln in lines)


# --------------------------------------------------------------------------- errors


def test_missing_directory(capsys, tmp_path):
    err = run_error(capsys, [tmp_path / "nope", "--json"])
    assert "does not exist" in err and "nope" in err


def test_bad_score_names_file_and_line(capsys, tmp_path):
    ds = make_dataset(tmp_path, {"s1": "a\t0.9\nb\t0.8\nc\tzero\n"})
    err = run_error(capsys, [ds, "--json"])
    assert "systems/s1.tsv:3" in err
    assert "not a number" in err


def test_score_outside_unit_interval(capsys, tmp_path):
    ds = make_dataset(tmp_path, {"s1": "a\t0.9\nb\t1.5\nc\t-0.1\n"})
    err = run_error(capsys, [ds])
    assert "systems/s1.tsv:2" in err and "systems/s1.tsv:3" in err
    assert "outside [0, 1]" in err


def test_empty_system_file(capsys, tmp_path):
    ds = make_dataset(tmp_path, {"s1": "a\t0.9\n", "s2": ""})
    err = run_error(capsys, [ds])
    assert "systems/s2.tsv" in err and "empty" in err


def test_unknown_key(capsys, tmp_path):
    ds = make_dataset(tmp_path, {"s1": "a\t0.9\nzz\t0.3\n"}, items=["a", "b", "c"])
    err = run_error(capsys, [ds])
    assert "items.jsonl" in err and "unknown key" in err and "'zz'" in err


def test_valid_tmp_dataset_runs(capsys, tmp_path):
    # control for the error tests above: the same layout without the defect works
    ds = make_dataset(
        tmp_path,
        {"s1": "a\t0.9\nb\t0.8\nc\t0.2\nd\t0.1\n", "s2": "a\nd\n"},
        items=["a", "b", "c", "d"],
    )
    code = main([str(ds), "--json", "--repeats", "2", "--reference-size", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["systems"] == 2 and data["dataset"] == "ds"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repeats", "0"], "--repeats"),
        (["--target-half-width", "0.7"], "--target-half-width"),
        (["--target-half-width", "0"], "--target-half-width"),
        (["--confidence", "1.5"], "--confidence"),
        (["--confidence", "0"], "--confidence"),
        (["--systems", "0"], "--systems"),
        (["--reference-size", "-1"], "--reference-size"),
        (["--budget", "-5"], "--budget"),
        (["--interval", "jeffreys", "--design", "published"], "--interval"),
        (["--annotators", "0.95y"], "--annotators: annotator '0.95y'"),
        (["--annotators", "1.2"], "rates must lie in [0, 1]"),
        (["--annotators", "0.9x0"], "N >= 1"),
        (["--gold-rate", "1"], "--gold-rate"),
        (["--hard-items", "0.1:0.7"], "--hard-items needs --annotators"),
        (["--annotators", "0.9", "--hard-items", "0.1"], "SHARE:ACCURACY"),
        (["--annotators", "0.9", "--hard-items", "a:b"], "SHARE:ACCURACY"),
        (["--annotators", "0.9", "--hard-items", "1.5:0.7"], "the share must lie in (0, 1)"),
    ],
)
def test_bad_options_exit_2(capsys, args, message):
    err = run_error(capsys, [SLICE, "--json", *args])
    assert message in err
    assert "usage:" in err


@pytest.mark.parametrize(
    "args", [["--design", "bogus"], ["--interval", "wald"], ["--repeats", "two"], []]
)
def test_argparse_errors_exit_2(capsys, args):
    argv = [*([] if not args else [str(SLICE)]), *args]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    _, err = capsys.readouterr()
    assert "usage:" in err and "error:" in err
    assert "Traceback" not in err
    if args[:1] == ["--design"]:
        assert "invalid choice: 'bogus'" in err


# --------------------------------------------------------------------------- --annotators


def test_without_annotators_no_judgment_keys_appear(capsys):
    out = run_json(capsys, *SMALL)
    for key in ("annotators", "judgments_mean", "coverage_at_stop", "gold_rate"):
        assert key not in out


def test_annotators_report_judgments_and_coverage_at_stop(capsys):
    out = run_json(
        capsys, *SMALL, "--seed", "4", "--annotators", "0.95x2,0.5", "--gold-rate", "0.1"
    )
    assert out["annotators"] == "0.95x2,0.5" and out["gold_rate"] == 0.1
    # Every judgment counts, gold included; at least one per verified item.
    assert out["judgments_mean"] >= out["labels_mean"] > 0
    assert 0 < out["gold_judgments_mean"] < out["judgments_mean"]
    for block in ("coverage_at_stop", "bias_at_stop"):
        assert set(out[block]) == set(OPEN_MEASURES)
    for m in OPEN_MEASURES:
        assert 0 <= out["coverage_at_stop"][m] <= 1


def test_annotator_table_shows_judgments_and_stop_columns(capsys):
    code = main([str(SLICE), *SMALL, "--annotators", "0.9x3"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "annotators 0.9x3, gold rate 0.05: judgments per repeat" in out
    assert "cov. at stop" in out


@pytest.mark.slow
def test_hard_items_make_every_annotator_err_more_on_them_and_are_reported(capsys):
    base = run_json(capsys, *SMALL, "--seed", "4", "--annotators", "0.95x3")
    hard = run_json(
        capsys, *SMALL, "--seed", "4", "--annotators", "0.95x3", "--hard-items", "0.3:0.5"
    )
    assert "hard_items" not in base
    assert hard["hard_items"] == {"share": 0.3, "accuracy": 0.5}
    # Correlated errors the model assumes away: the estimates move away from the truth.
    err = sum(abs(hard["bias"][m]) for m in OPEN_MEASURES)
    assert err > sum(abs(base["bias"][m]) for m in OPEN_MEASURES)


def test_hard_items_cap_each_annotators_accuracy_and_spare_gold():
    truth = np.array([True, False] * 100)
    hard = np.ones(200, bool)
    hard[150:190] = False
    gold = np.arange(190, 200)
    panel = AnnotatorPanel(
        ((1.0, 1.0),), truth, gold, 0.5, 1, np.random.default_rng(0), hard=hard, hard_accuracy=0.5
    )
    state = TaskState(200)
    panel.answer(state, Plan(0, 1, np.arange(190), "sample", 0.0, 0.0))
    items = state.judgments.items
    right = state.judgments.says_correct == truth[items]
    assert panel.gold_judgments == 10
    assert right[items >= 150].all()  # a perfect annotator, on easy and on gold items
    assert 0.35 < right[items < 150].mean() < 0.65
