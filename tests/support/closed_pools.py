"""Small synthetic closed pools for the closed-pool tests: in memory, and written as a data set.

``synthetic_pool`` builds a rare-positive pool whose runs cover the edge cases of a closed pool:
a good run, a run predicting nearly everything, a run predicting nothing, and a run whose
predictions ignore the truth. ``write_closed_pool`` writes any pool in the closed-pool format
(``items.tsv``, ``truth.tsv``, ``systems/NAME.tsv``; see the data README).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.core.closed_pool import PoolState


def synthetic_pool(
    n: int = 400, positives: int = 12, seed: int = 0
) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """``(truth, systems)``: ``systems[name] = (scores, predictions)``, names in file order."""
    rng = np.random.default_rng(seed)
    truth = np.zeros(n, dtype=bool)
    truth[rng.choice(n, positives, replace=False)] = True
    informed = np.clip(np.where(truth, rng.beta(5, 2, n), rng.beta(1, 8, n)), 0.0, 1.0)
    noise = rng.random(n)
    systems = {
        "a-good": (informed, informed > 0.5),
        "b-broad": (informed, informed > 0.05),
        "c-nothing": (informed, np.zeros(n, dtype=bool)),
        "d-random": (noise, noise > 0.9),
    }
    return truth, systems


def pool_state(systems: dict[str, tuple[np.ndarray, np.ndarray]], n: int) -> PoolState:
    """A ``PoolState`` of ``n`` items with ``systems`` added in order and no label yet."""
    state = PoolState(n)
    for name, (scores, predictions) in systems.items():
        state.add_run(scores, predictions, name=name)
    return state


def write_closed_pool(
    root: Path, truth: np.ndarray, systems: dict[str, tuple[np.ndarray, np.ndarray]]
) -> Path:
    """Write the pool to ``root`` in the closed-pool format; keys are ``k0``, ``k1``, ..."""
    root.mkdir(parents=True, exist_ok=True)
    keys = [f"k{i}" for i in range(truth.size)]
    (root / "items.tsv").write_text("".join(f"{k}\n" for k in keys))
    (root / "truth.tsv").write_text("".join(f"{keys[i]}\n" for i in np.flatnonzero(truth)))
    (root / "systems").mkdir(exist_ok=True)
    for name, (scores, predictions) in systems.items():
        lines = (
            f"{k}\t{s:.6g}\t{int(p)}\n" for k, s, p in zip(keys, scores, predictions, strict=True)
        )
        (root / "systems" / f"{name}.tsv").write_text("".join(lines))
    return root
