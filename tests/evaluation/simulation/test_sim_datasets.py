"""Tests for evaluation.simulation.datasets: loading and validating a data set directory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evaluation.simulation.datasets import Dataset, DatasetError, load_dataset

SLICE = Path(__file__).resolve().parents[2] / "data" / "febrl4_slice"


def make(
    root: Path,
    truth: str | bytes = "a\nb\n",
    systems: dict[str, str | bytes] | None = None,
    items: str | bytes | list[str] | None = None,
) -> Path:
    """Write a data set under ``root/ds``; ``items`` as a key list writes a valid items.jsonl."""
    ds = root / "ds"
    (ds / "systems").mkdir(parents=True)
    (ds / "truth.tsv").write_bytes(truth.encode() if isinstance(truth, str) else truth)
    if systems is None:
        systems = {"s1": "a\t0.9\nc\t0.2\n"}
    for name, text in systems.items():
        data = text.encode() if isinstance(text, str) else text
        (ds / "systems" / f"{name}.tsv").write_bytes(data)
    if isinstance(items, list):
        items = "".join(
            json.dumps({"key": k, "payload": {"x": i}}) + "\n" for i, k in enumerate(items)
        )
    if items is not None:
        (ds / "items.jsonl").write_bytes(items.encode() if isinstance(items, str) else items)
    return ds


def error(ds: Path, **kwargs) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        load_dataset(ds, **kwargs)
    return info.value


# --------------------------------------------------------------------------- valid data


def test_valid_dataset_maps_keys_truth_and_scores(tmp_path):
    ds = make(
        tmp_path,
        truth="k|2\nk 1\nlonely\n",
        systems={"zeta": "k 1\t0.25\nx\t1\n", "alpha": "k|2\t0.5\nk 1\t0\n"},
        items=["k 1", "k|2", "lonely", "x", "extra item is fine"],
    )
    d = load_dataset(ds)
    assert isinstance(d, Dataset)
    assert d.name == "ds"
    assert d.path == str(ds)  # as given
    assert d.keys.tolist() == ["k 1", "k|2", "lonely", "x"]  # sorted, distinct
    assert d.truth.tolist() == [True, True, True, False]
    assert d.n_truth == 3
    assert [s.name for s in d.systems] == ["alpha", "zeta"]
    alpha, zeta = d.systems
    assert d.keys[alpha.items].tolist() == ["k|2", "k 1"]  # file order
    assert alpha.scores.tolist() == [0.5, 0.0]
    assert d.keys[zeta.items].tolist() == ["k 1", "x"]
    assert zeta.scores.tolist() == [0.25, 1.0]
    assert alpha.items.dtype == np.int64 and alpha.scores.dtype == np.float64


def test_truth_keys_predicted_by_no_system_are_kept(tmp_path):
    ds = make(tmp_path, truth="a\nb\nc\nd\n", systems={"s": "a\t0.9\nz\t0.1\n"})
    d = load_dataset(ds)
    assert d.keys.tolist() == ["a", "b", "c", "d", "z"]
    assert d.n_truth == 4
    assert int(d.truth.sum()) == 4
    assert d.truth[d.systems[0].items].tolist() == [True, False]
    # recall of the only system is 1/4, not 1/1
    assert d.truth[d.systems[0].items].sum() / d.n_truth == 0.25


def test_key_only_line_gets_score_one(tmp_path):
    ds = make(tmp_path, systems={"s": "a\nb\t0.3\nc\n"})
    d = load_dataset(ds)
    assert d.systems[0].scores.tolist() == [1.0, 0.3, 1.0]
    assert d.keys[d.systems[0].items].tolist() == ["a", "b", "c"]


def test_crlf_files_load_like_lf_files(tmp_path):
    ds = make(
        tmp_path,
        truth="a\r\nb\r\n",
        systems={"s": "a\t0.5\r\nc\r\nb\t1\r\n"},
        items=b'{"key": "a"}\r\n{"key": "b"}\r\n{"key": "c"}\r\n',
    )
    d = load_dataset(ds)
    assert d.keys.tolist() == ["a", "b", "c"]
    assert d.systems[0].scores.tolist() == [0.5, 1.0, 1.0]
    assert d.n_truth == 2


def test_missing_final_newline_and_bom_are_fine(tmp_path):
    ds = make(tmp_path, truth="\ufeffa\nb", systems={"s": "\ufeffa\t0.5\nb\t0.25"})
    d = load_dataset(ds)
    assert d.keys.tolist() == ["a", "b"]
    assert d.systems[0].scores.tolist() == [0.5, 0.25]


def test_items_jsonl_absent_is_skipped_and_check_items_false_skips_it(tmp_path):
    ds = make(tmp_path)  # no items.jsonl
    assert load_dataset(ds).keys.tolist() == ["a", "b", "c"]
    (ds / "items.jsonl").write_text("not json\n")
    assert load_dataset(ds, check_items=False).keys.tolist() == ["a", "b", "c"]
    assert "items.jsonl:1" in str(error(ds))


def test_arrays_are_read_only(tmp_path):
    d = load_dataset(make(tmp_path))
    with pytest.raises(ValueError):
        d.truth[0] = False
    with pytest.raises(ValueError):
        d.systems[0].scores[0] = 0.0


# --------------------------------------------------------------------------- structure


def test_missing_path(tmp_path):
    e = error(tmp_path / "nope")
    assert "does not exist" in str(e) and "nope" in str(e)


def test_path_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    assert "not a directory" in str(error(f))


def test_truth_missing(tmp_path):
    ds = make(tmp_path)
    (ds / "truth.tsv").unlink()
    e = error(ds)
    assert "truth.tsv is missing" in str(e)
    assert e.path == str(ds / "truth.tsv")


def test_systems_dir_missing(tmp_path):
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "truth.tsv").write_text("a\n")
    assert "systems/ is missing" in str(error(ds))


def test_systems_dir_without_tsv(tmp_path):
    ds = make(tmp_path, systems={})
    (ds / "systems" / "notes.txt").write_text("a\t1\n")
    assert "contains no *.tsv" in str(error(ds))


def test_empty_truth_file(tmp_path):
    e = error(make(tmp_path, truth=""))
    assert "truth.tsv: file is empty" in str(e)
    assert e.line is None


def test_empty_system_file(tmp_path):
    e = error(make(tmp_path, systems={"good": "a\t1\n", "quiet": ""}))
    assert "systems/quiet.tsv: system 'quiet' has no predictions" in str(e)


# --------------------------------------------------------------------------- line errors


def test_bad_utf8_reports_line(tmp_path):
    e = error(make(tmp_path, systems={"s": b"a\t0.5\nb\xff\t0.5\nc\t1\n"}))
    assert "systems/s.tsv:2: invalid UTF-8" in str(e)
    assert e.line == 2
    assert e.path.endswith("s.tsv")
    e = error(make(tmp_path / "t", truth=b"a\nb\nc\xc3\n"))
    assert "truth.tsv:3: invalid UTF-8" in str(e)


def test_empty_key(tmp_path):
    e = error(make(tmp_path, systems={"s": "a\t0.5\nb\t0.5\n\t0.5\n"}))
    assert "systems/s.tsv:3: empty key" in str(e)


def test_too_many_fields(tmp_path):
    e = error(make(tmp_path, systems={"s": "a\t0.5\tx\n"}))
    assert "systems/s.tsv:1: expected 'key<TAB>score', found 3 tab-separated fields" in str(e)


@pytest.mark.parametrize(
    ("score", "reason"),
    [
        ("abc", "is not a number"),
        ("", "is not a number"),
        ("nan", "is not a finite number"),
        ("inf", "is not a finite number"),
        ("1.5", "is outside [0, 1]"),
        ("-0.1", "is outside [0, 1]"),
    ],
)
def test_bad_score(tmp_path, score, reason):
    e = error(make(tmp_path, systems={"s": f"a\t0.5\nb\t{score}\n"}))
    assert f"systems/s.tsv:2: score {score!r} {reason}" in str(e)


def test_duplicate_key_in_system_reports_both_lines(tmp_path):
    e = error(make(tmp_path, systems={"s": "a\t0.5\nb\t0.5\nc\t1\na\t0.7\n"}))
    assert "systems/s.tsv:4: duplicate key 'a' (first on line 1)" in str(e)


def test_duplicate_line_in_truth_reports_both_lines(tmp_path):
    e = error(make(tmp_path, truth="a\nb\nc\nb\n"))
    assert "truth.tsv:4: duplicate key 'b' (first on line 2)" in str(e)


def test_tab_in_truth_line(tmp_path):
    e = error(make(tmp_path, truth="a\nb\t1\n"))
    assert "truth.tsv:2: line contains a tab" in str(e)


@pytest.mark.parametrize(
    ("text", "line"),
    [("a\t1\n\nb\t1\n", 2), ("a\t1\nb\t1\n\n", 3), ("a\t1\n   \nb\t1\n", 2), ("\na\t1\n", 1)],
)
def test_blank_lines_are_errors(tmp_path, text, line):
    e = error(make(tmp_path, systems={"s": text}))
    assert f"systems/s.tsv:{line}: blank line" in str(e)


def test_carriage_return_inside_line(tmp_path):
    e = error(make(tmp_path, systems={"s": "a\t1\nb\rc\t1\n"}))
    assert "systems/s.tsv:2: carriage return" in str(e)


def test_problems_collected_over_files_and_capped_per_file(tmp_path):
    bad = "".join(f"k{i}\t2\n" for i in range(60))  # 60 scores out of range
    ds = make(tmp_path, truth="a\na\n", systems={"b_bad": bad, "a_ok": "a\t1\n", "c": ""})
    e = error(ds, max_problems=50)
    msg = str(e)
    assert "62 problems in 3 files" in msg
    assert "truth.tsv:2: duplicate key 'a' (first on line 1)" in msg
    assert "systems/b_bad.tsv:50: score '2' is outside [0, 1]" in msg
    assert "systems/b_bad.tsv:51:" not in msg
    assert "systems/b_bad.tsv: ... and 10 more (60 problems in this file)" in msg
    assert "systems/c.tsv: system 'c' has no predictions" in msg
    assert len(e.problems) == 52
    # the first problem sets path and line
    assert e.path == str(ds / "truth.tsv") and e.line == 2


def test_max_problems_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="max_problems"):
        load_dataset(make(tmp_path), max_problems=0)


# --------------------------------------------------------------------------- items.jsonl


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ('["a"]', "expected a JSON object, found a JSON array"),
        ('{"payload": {}}', 'the object has no "key" field'),
        ('{"key": 3}', '"key" is a JSON number, not a string'),
        ('{"key": ""}', "empty key"),
        ('{"key": "a"}', "duplicate key 'a' (first on line 1)"),
        ("", "blank line"),
    ],
)
def test_items_line_errors(tmp_path, line, reason):
    items = '{"key": "a"}\n{"key": "b"}\n{"key": "c"}\n' + line + "\n"
    e = error(make(tmp_path, items=items))
    assert f"items.jsonl:4: {reason}" in str(e)
    assert "unknown keys" not in str(e)


def test_items_bad_utf8(tmp_path):
    e = error(make(tmp_path, items=b'{"key": "a"}\n{"key": "b\xff"}\n'))
    assert "items.jsonl:2: invalid UTF-8" in str(e)


def test_unknown_keys(tmp_path):
    truth = "".join(f"t{i}\n" for i in range(8))
    ds = make(tmp_path, truth=truth, systems={"s": "t0\t1\nzz\t0.5\n"}, items=["t0", "t1"])
    e = error(ds)
    msg = str(e)
    assert "items.jsonl: unknown keys: 7 keys" in msg
    assert "'t2' (from truth.tsv)" in msg
    assert "'t6' (from truth.tsv), ... (2 more)" in msg  # 5 examples shown
    assert "'t7'" not in msg
    e = error(make(tmp_path / "2", systems={"s": "a\t1\nzz\t0.5\n"}, items=["a", "b"]))
    assert "1 key of truth.tsv or systems/ missing from items.jsonl" in str(e)
    assert "'zz' (from systems/s.tsv)" in str(e)


# --------------------------------------------------------------------------- test slice


def test_febrl4_slice_counts():
    d = load_dataset(SLICE)
    assert d.name == "febrl4_slice"
    assert len(d.keys) == 2872
    assert d.n_truth == 400 and int(d.truth.sum()) == 400
    assert len(d.systems) == 55
    assert sum(len(s.items) for s in d.systems) == 21517
    by_name = {s.name: s for s in d.systems}
    worst = by_name["rule_names80_surname"]
    assert len(worst.items) == 1201 and int(d.truth[worst.items].sum()) == 241
    assert len(by_name["ecm_dob"].items) == 353
    assert int(d.truth[by_name["ecm_dob"].items].sum()) == 353
    assert by_name["kmeans_dob"].scores.sum() == pytest.approx(175.0)
    precision = [d.truth[s.items].mean() for s in d.systems]
    assert min(precision) == pytest.approx(241 / 1201) and max(precision) == 1.0
    # every key is a pair whose left record number is below 400
    assert all(int(k.split("|")[0].split("-")[1]) < 400 for k in d.keys)
    assert len(np.unique(np.concatenate([s.items for s in d.systems]))) == 2872


def test_problems_of_a_file_are_listed_in_line_order(tmp_path):
    e = error(make(tmp_path, systems={"s": b"a\t1.5\nb\xff\n\nc\tx\ty\n"}))
    assert [p.line for p in e.problems] == [1, 2, 3, 4]
    msg = str(e)
    assert msg.index("s.tsv:1: score") < msg.index("s.tsv:2: invalid UTF-8")
    assert msg.index("s.tsv:2: invalid") < msg.index("s.tsv:3: blank") < msg.index("s.tsv:4:")
