"""``python -m evaluation.simulate`` on a closed pool
(``evaluation.simulation.closed_pool.command``).

Every test runs on a tiny synthetic pool (400 items, 4 systems) written to ``tmp_path``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from closed_pools import synthetic_pool, write_closed_pool

from evaluation.core.closed_pool import CLOSED_POOL_MEASURES
from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulate import main

NAMES = ["a-good", "b-broad", "c-nothing", "d-random"]
KEYS = ("labels_mean", "coverage", "bias", "half_width_median", "mse", "undefined_share")


@pytest.fixture
def pool(tmp_path) -> Path:
    truth, systems = synthetic_pool()
    return write_closed_pool(tmp_path / "tiny", truth, systems)


def _no_nan(token: str):
    raise AssertionError(f"JSON output contains {token}")


def run_json(capsys, pool, *args) -> dict:
    code = main([str(pool), "--json", "--repeats", "3", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""
    (line,) = out.splitlines()
    return json.loads(line, parse_constant=_no_nan)


def run_error(capsys, pool, *args) -> str:
    code = main([str(pool), *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "usage:" in err and "Traceback" not in err
    return err


def test_a_directory_with_items_tsv_runs_closed_pool_campaigns(capsys, pool):
    out = run_json(capsys, pool)
    assert out["kind"] == "closed_pool" and out["design"] == "adaptive"
    assert out["dataset"] == "tiny" and out["system_names"] == NAMES and out["systems"] == 4
    assert out["measures"] == ["precision", "recall", "f1"]
    assert out["budget"] == 2000 and out["budget_scope"] == "task"
    assert out["labels_mean"] == 400.0  # the budget exceeds the pool: every item verified
    for key in KEYS[1:]:
        assert set(out[key]) == {"precision", "recall", "f1"}, key
    assert "per_system" not in out


def test_the_same_directory_without_items_tsv_is_read_as_an_open_world_data_set(capsys, pool):
    (pool / "items.tsv").unlink()
    code = main([str(pool), "--json"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "expected 'key<TAB>score'" in err  # the open-world loader's complaint


def test_json_figures_per_measure_and_per_system(capsys, pool):
    out = run_json(
        capsys, pool, "--budget", "60", "--measures", ",".join(CLOSED_POOL_MEASURES), "--per-system"
    )
    assert out["measures"] == list(CLOSED_POOL_MEASURES) and out["labels_mean"] == 60.0
    for key in KEYS[1:]:
        assert set(out[key]) == set(CLOSED_POOL_MEASURES), key
    for m in CLOSED_POOL_MEASURES:
        assert 0 <= out["coverage"][m] <= 1 - out["undefined_share"][m] + 1e-12
        assert out["coverage_lowest"][m] <= out["coverage"][m]
    rows = out["per_system"]
    assert [r["system"] for r in rows] == NAMES and [r["arrival"] for r in rows] == [1, 2, 3, 4]
    assert rows[2]["true"]["precision"] is None  # the run predicting nothing: 0/0
    assert rows[2]["undefined_share"]["precision"] == 1.0


def test_same_seed_same_output_and_another_seed_differs(capsys, pool):
    args = ("--budget", "50", "--per-system")
    a, b = run_json(capsys, pool, *args), run_json(capsys, pool, *args)
    c = run_json(capsys, pool, *args, "--seed", "9")
    for d in (a, b, c):
        d.pop("seconds")
    assert a == b
    assert a["per_system"] != c["per_system"]


def test_systems_by_number_or_by_name_in_arrival_order(capsys, pool):
    assert run_json(capsys, pool, "--systems", "2")["system_names"] == NAMES[:2]
    out = run_json(capsys, pool, "--systems", "d-random,a-good", "--budget", "10")
    assert out["system_names"] == ["d-random", "a-good"]


def test_ais_published_budget_is_per_run_and_says_so(capsys, pool):
    out = run_json(capsys, pool, "--design", "ais-published", "--budget", "30", "--systems", "2")
    assert out["budget_scope"] == "run" and out["labels_mean"] == 60.0
    code = main([str(pool), "--design", "ais-published", "--budget", "30", "--repeats", "1"])
    text, _ = capsys.readouterr()
    assert code == 0
    assert "budget 30 labels per run (ais-published re-uses no label" in text


def test_annotators_judge_instead_of_the_oracle_and_their_judgments_are_reported(capsys, pool):
    args = ["--budget", "120", "--seed", "4"]
    oracle = run_json(capsys, pool, *args)
    assert "judgments_mean" not in oracle and "annotators" not in oracle
    perfect = run_json(capsys, pool, *args, "--annotators", "1.0x3", "--gold-rate", "0.2")
    assert perfect["annotators"] == "1.0x3" and perfect["gold_rate"] == 0.2
    # Right answers give nearly the oracle's figures: the estimates correct every label for
    # error rates the model estimates (close to, never exactly, 0), and every "yes" is looked
    # at again.
    assert perfect["labels_mean"] == oracle["labels_mean"]
    for m in OPEN_MEASURES:
        assert abs(perfect["bias"][m] - oracle["bias"][m]) < 0.005, m
        assert perfect["mse"][m] <= 1.5 * oracle["mse"][m] + 1e-6, m
        assert perfect["coverage"][m] >= oracle["coverage"][m] - 0.1, m
    assert perfect["judgments_mean"] > perfect["labels_mean"] * 1.2
    noisy = run_json(capsys, pool, *args, "--annotators", "0.7x3")
    assert noisy["labels_mean"] == oracle["labels_mean"]
    assert noisy["mse"]["f1"] > oracle["mse"]["f1"]
    code = main([str(pool), "--repeats", "1", *args, "--annotators", "0.9x3"])
    text, _ = capsys.readouterr()
    assert code == 0
    assert "annotators 0.9x3, gold rate 0.05:" in text and "judgments per repeat" in text


def test_table_output(capsys, pool):
    args = ["--design", "passive", "--budget", "80", "--measures", "f1,mcc"]
    summary = run_json(capsys, pool, *args)
    code = main([str(pool), "--repeats", "3", *args])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("design passive on closed pool tiny: 4 systems arriving in turn")
    assert "budget 80 labels for the whole task, shared by all 4 runs" in lines[1]
    for m in ("f1", "mcc"):
        (row,) = [ln.split() for ln in lines if ln.split()[:1] == [m]]
        assert float(row[1]) == pytest.approx(summary["coverage"][m], abs=5e-4)
        assert float(row[6]) == pytest.approx(summary["mse"][m], rel=5e-3)
        assert float(row[7]) == pytest.approx(summary["undefined_share"][m], abs=5e-4)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reference-size", "10"], "--reference-size applies to open-world data sets"),
        (["--hard-items", "0.1:0.7"], "--hard-items applies to open-world data sets"),
        (["--gold-rate", "0.1"], "--gold-rate applies with --annotators"),
        (["--annotators", "0.9", "--design", "ais-published"], "--annotators applies to the"),
        (["--annotators", "0.9", "--gold-rate", "1"], "--gold-rate must lie in [0, 1)"),
        (["--annotators", "1.5"], "annotator '1.5': rates must lie in [0, 1]"),
        (["--target-half-width", "0.1"], "--target-half-width applies to open-world"),
        (["--design", "published"], "--design published is an open-world design"),
        (["--measures", "f1,f2"], "--measures: a comma list"),
        (["--measures", "f1,f1"], "--measures: a comma list"),
        (["--systems", "nope"], "--systems: tiny has no system nope"),
        (["--systems", "0"], "--systems must be at least 1"),
        (["--budget", "-1"], "--budget must be at least 0"),
        (["--repeats", "0"], "--repeats must be at least 1"),
    ],
)
def test_bad_options_exit_2(capsys, pool, args, message):
    assert message in run_error(capsys, pool, *args)


def test_open_world_refuses_closed_pool_options(capsys):
    slice_dir = Path(__file__).resolve().parents[1] / "data" / "febrl4_slice"
    assert "--measures applies to closed pools" in run_error(capsys, slice_dir, "--measures", "f1")
    err = run_error(capsys, slice_dir, "--design", "passive")
    assert "--design passive is for closed pools" in err
