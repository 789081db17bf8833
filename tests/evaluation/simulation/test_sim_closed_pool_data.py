"""The closed-pool data set loader: what it reads, and every problem named with file and line."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from evaluation.simulation.closed_pool_data import is_closed_pool, load_closed_pool
from evaluation.simulation.datasets import DatasetError


def _pool(tmp_path, *, systems=None, items="a\nb\nc\nd\n", truth="b\nd\n", gz=False):
    (tmp_path / "items.tsv").write_text(items)
    (tmp_path / "truth.tsv").write_text(truth)
    (tmp_path / "systems").mkdir()
    if systems is None:
        systems = {"s1": "a\t0.1\t0\nb\t0.9\t1\nc\t0.6\t1\nd\t0.2\t0\n"}
    for name, text in systems.items():
        if gz:
            (tmp_path / "systems" / f"{name}.tsv.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (tmp_path / "systems" / f"{name}.tsv").write_text(text)
    return tmp_path


@pytest.mark.parametrize("gz", [False, True])
def test_a_valid_pool_is_read_in_pool_order(tmp_path, gz):
    data = load_closed_pool(str(_pool(tmp_path, gz=gz)))
    assert data.keys.tolist() == ["a", "b", "c", "d"]
    assert data.truth.tolist() == [False, True, False, True]
    (system,) = data.systems
    assert system.name == "s1"
    np.testing.assert_allclose(system.scores, [0.1, 0.9, 0.6, 0.2])
    assert system.predictions.tolist() == [False, True, True, False]
    assert not system.scores.flags.writeable


def test_the_pool_file_tells_a_closed_pool_from_an_open_data_set(tmp_path):
    assert not is_closed_pool(str(tmp_path))
    with pytest.raises(DatasetError, match=r"no items\.tsv"):
        load_closed_pool(str(tmp_path))
    assert is_closed_pool(str(_pool(tmp_path)))


@pytest.mark.parametrize(
    ("system", "message"),
    [
        ("a\t0.1\t0\nc\t0.9\t1\nb\t0.6\t1\nd\t0.2\t0\n", "systems/s1.tsv:2: key 'c', but line 2"),
        ("a\t0.1\t0\nb\t1.9\t1\nc\t0.6\t1\nd\t0.2\t0\n", "systems/s1.tsv:2: score '1.9'"),
        ("a\t0.1\t0\nb\tnan\t1\nc\t0.6\t1\nd\t0.2\t0\n", "systems/s1.tsv:2: score 'nan'"),
        ("a\t0.1\t0\nb\t0.9\tyes\nc\t0.6\t1\nd\t0.2\t0\n", "systems/s1.tsv:2: label 'yes'"),
        ("a\t0.1\t0\nb\t0.9\nc\t0.6\t1\nd\t0.2\t0\n", "systems/s1.tsv:2: expected key<TAB>score"),
        ("a\t0.1\t0\nb\t0.9\t1\nc\t0.6\t1\n", "3 lines for 4 pool items"),
        ("a\t0.1\t0\n\nc\t0.6\t1\nd\t0.2\t0\n", "systems/s1.tsv:2: blank line"),
        ("", "systems/s1.tsv: file is empty"),
    ],
)
def test_system_problems_name_file_and_line(tmp_path, system, message):
    with pytest.raises(DatasetError) as exc:
        load_closed_pool(str(_pool(tmp_path, systems={"s1": system})))
    assert message in str(exc.value)


def test_pool_and_truth_problems_are_all_listed_together(tmp_path):
    path = _pool(tmp_path, items="a\nb\na\nd\n", truth="b\nz\nb\n")
    with pytest.raises(DatasetError) as exc:
        load_closed_pool(str(path))
    text = str(exc.value)
    assert "items.tsv:3: duplicate key 'a' (first on line 1)" in text
    assert "truth.tsv:2: key 'z' is not in items.tsv" in text
    assert "truth.tsv:3: duplicate key 'b'" in text


def test_invalid_utf8_and_a_broken_gzip_are_reported(tmp_path):
    path = _pool(tmp_path)
    (path / "truth.tsv").write_bytes(b"b\n\xff\n")
    (path / "systems" / "s2.tsv.gz").write_bytes(b"not gzip")
    with pytest.raises(DatasetError) as exc:
        load_closed_pool(str(path))
    assert "truth.tsv:2: invalid UTF-8" in str(exc.value)
    assert "systems/s2.tsv.gz: not a readable gzip file" in str(exc.value)


def test_a_pool_without_systems_is_refused(tmp_path):
    path = _pool(tmp_path, systems={})
    with pytest.raises(DatasetError, match="no system files"):
        load_closed_pool(str(path))
