"""The one place ``python -m evaluation.simulate`` looks at the kind of a data set:
:func:`kind_of_dataset`.

A data set directory with ``items.tsv`` is a closed pool (:mod:`.closed_pool_data`), any other
an open-world one (:mod:`.datasets`). Each kind of data set has its wing: its campaigns and its
command (:mod:`.open_world`, :mod:`.closed_pool`); the command's frame (``evaluation.simulate``)
reads the command line, asks this registry for the kind, and hands it the options.
"""

from __future__ import annotations

import argparse
from typing import Protocol

from .closed_pool.command import CLOSED_POOL_COMMAND
from .open_world.command import OPEN_WORLD_COMMAND

__all__ = ["SIMULATION_KINDS", "SimulationKind", "kind_of_dataset"]


class SimulationKind(Protocol):
    """The command of one kind of data set.

    Attributes
    ----------
    name : str
        The kind, as a task's (``"open"``, ``"closed_pool"``).
    designs : tuple of str
        The designs its campaigns run (the ``--design`` choices it takes).
    default_design : str
        The design run when ``--design`` is not given.
    description : str
        The data sets of this kind, in words (the ``--design`` help).
    """

    name: str
    designs: tuple[str, ...]
    default_design: str
    description: str

    def holds(self, path: str) -> bool:
        """Whether the data set directory ``path`` is of this kind (its files say so)."""
        ...

    def command(self, args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        """Check the options for this kind, load the data set, run the campaigns and print
        their summary; the exit code (0, 2 for a refusal or a malformed data set, 130 when
        interrupted)."""
        ...


# Every kind, in the order the command's help lists them.
SIMULATION_KINDS: tuple[SimulationKind, ...] = (OPEN_WORLD_COMMAND, CLOSED_POOL_COMMAND)


def kind_of_dataset(path: str) -> SimulationKind:
    """The kind of the data set directory ``path``."""
    return next(kind for kind in SIMULATION_KINDS if kind.holds(path))
