"""A closed pool's oracle campaign played as ``python -m evaluation.simulate POOL`` plays it, for
the studies that need the finished state (``bench/closed_pool_*.py``)."""

from __future__ import annotations

import argparse

import _util  # noqa: F401  (puts the repository on the path)
import numpy as np

from evaluation.core.closed_pool import PoolState, make_pool_design
from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulation.closed_pool.campaigns import arrival_caps


def play_oracle_campaign(data, *, budget: int, seed: int, repeat: int, watched=None) -> tuple:
    """The ``adaptive`` design, every system in file order, a perfect oracle, campaign
    ``repeat`` from the streams ``[seed, repeat]``. Returns ``(design, state, rounds)``;
    ``rounds``, with ``watched`` items: per round, their inclusion before and after it, whether
    it drew them and whether they were verified before it."""
    design = make_pool_design("adaptive", confidence=0.95, targets=tuple(OPEN_MEASURES))
    rng = np.random.default_rng([seed, repeat])
    state = PoolState(data.n_items)
    rounds = []
    for system, cap in zip(data.systems, arrival_caps(budget, len(data.systems)), strict=True):
        run = state.add_run(system.scores, system.predictions, name=system.name)
        while (room := int(cap) - state.n_labelled) > 0:
            if watched is not None:
                try:
                    before = design.sampling(state).inclusion[watched]
                except KeyError:  # the design's first round on this state
                    before = np.zeros(len(watched))
                verified = state.labelled[watched].copy()
            items = design.plan(state, run, budget=room, rng=rng)
            if items.size == 0:
                break
            if watched is not None:
                after = design.sampling(state).inclusion[watched]
                rounds.append((before, after, np.isin(watched, items), verified))
            state.set_labels(items, data.truth[items])
    return design, state, rounds


def study_parser(doc: str, *, repeats: int) -> argparse.ArgumentParser:
    """The studies' common arguments: the pool, ``--budget``, ``--repeats``, ``--seed``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--seed", type=int, default=2026)
    return parser
