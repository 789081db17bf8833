"""The simulation command's registry of data set kinds (``evaluation.simulation.kinds``): the
kind is read once from the data set's files, and every kind's designs are what ``--design``
offers."""

from __future__ import annotations

from closed_pools import synthetic_pool, write_closed_pool

from evaluation.core.task_design import CLOSED_POOL, OPEN_WORLD
from evaluation.simulate import _parser
from evaluation.simulation.kinds import SIMULATION_KINDS, kind_of_dataset


def test_a_directory_with_items_tsv_is_a_closed_pool_and_any_other_open_world(tmp_path):
    truth, systems = synthetic_pool()
    pool = write_closed_pool(tmp_path / "pool", truth, systems)
    assert kind_of_dataset(str(pool)).name == CLOSED_POOL
    (pool / "items.tsv").unlink()
    assert kind_of_dataset(str(pool)).name == OPEN_WORLD
    assert kind_of_dataset(str(tmp_path / "missing")).name == OPEN_WORLD


def test_the_kinds_are_the_tasks_kinds_each_with_designs_of_its_own():
    assert [kind.name for kind in SIMULATION_KINDS] == [OPEN_WORLD, CLOSED_POOL]
    designs = [design for kind in SIMULATION_KINDS for design in kind.designs]
    assert len(designs) == len(set(designs))
    for kind in SIMULATION_KINDS:
        assert kind.default_design in kind.designs


def test_design_offers_every_kinds_designs_and_names_their_defaults():
    (design,) = [a for a in _parser()._actions if "--design" in a.option_strings]
    assert list(design.choices) == [d for kind in SIMULATION_KINDS for d in kind.designs]
    assert "(default: default) on an open-world data set" in design.help
    assert "(default: adaptive) on a closed pool" in design.help
