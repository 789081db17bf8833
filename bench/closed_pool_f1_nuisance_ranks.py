"""A prototype for a closed pool's F1 ranks: the unvoted positives as a nuisance, not as noise.

On a closed pool every run's ``fn`` holds the same unvoted items (no run predicts them), whose
positives ``U`` the cells' posterior doubts far more than anything else: on dblp-acm at 500
labels ``U``'s rate doubt is 95-99% of a run's linearised F1 variance, and each run's interval
(skewed by that doubt) is wider still, the excess counted as independent between runs
(:func:`evaluation.core.paired.joint_covariance`), so two runs' F1 difference gets a standard
error of 0.20 where its estimate moves by 0.003 between campaigns
(``bench/closed_pool_pair_calibration.py``).

This prototype ranks F1 with ``U`` as a nuisance parameter (Berger and Boos 1994): an interval
for ``U`` at ``1 - alpha/2``, and over a grid of ``U`` in it, max-t ranks at ``1 - alpha/2``
from every run's F1 at that ``U`` and the linearised covariance of everything else (the Gram
matrix of :mod:`evaluation.core.closed_pool.paired` without the unvoted cells' columns); a
run's rank interval is the union over the grid. Every order claimed holds for every ``U`` in
its interval, so the family level is at least ``1 - alpha`` (union bound), up to the grid.
Side by side, from the same labels: the board's paired ranks and Bonferroni's.

Usage::

    nice -n 10 .venv/bin/python bench/closed_pool_f1_nuisance_ranks.py POOL_DIR [--budget 500]
        [--repeats 50] [--seed 2026] [--grid 9]

``--posterior-unvoted`` takes ``U``'s interval from the cells' own posterior (Monte-Carlo,
20,000 draws, seed 0) instead of the Beta-type interval of its mean and variance.

``--hide N`` makes ``N`` more of the pool's unvoted items positive (drawn uniformly, seed 0):
a pool hiding more positives than the rank prior expects, where ``U``'s interval may miss.

``--known-unvoted`` is a diagnostic, not an interval: ``U`` taken as known at its estimate
(grid of one, ranks at ``1 - alpha``), to show how much of the width is ``U``'s doubt.

Prototype only: it reads the engine's private ``_Sides``; oracle labels.

References
----------
R. L. Berger and D. D. Boos, "P values maximized over a confidence set for the nuisance
parameter", Journal of the American Statistical Association 89(427):1012-1016, 1994.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
from _closed_pool import play_oracle_campaign, study_parser
from _util import code_version

from evaluation.core.closed_pool import paired as pool_paired
from evaluation.core.closed_pool.measures import measure_value
from evaluation.core.intervals import effective_binomial_interval
from evaluation.core.paired import PairedDifferences
from evaluation.core.ranking import RankIntervals, paired_rank_intervals
from evaluation.simulation.closed_pool.campaigns import (
    pool_rank_intervals,
    true_measures,
)
from evaluation.simulation.closed_pool_data import load_closed_pool
from evaluation.simulation.open_world.rank_campaigns import score_ranks
from evaluation.simulation.open_world.rank_report import summarise_ranks

F1 = ("f1",)
# Per campaign: U's interval and estimate (unverified unvoted positives), for the output.
INTERVALS: list[tuple[float, float, float]] = []


def nuisance_ranks(
    design,
    state,
    *,
    family_level: float,
    grid: int,
    known: bool = False,
    posterior: bool = False,
) -> RankIntervals:
    """F1 rank intervals with the unvoted positives as a nuisance (module docstring)."""
    cells, rates, labels, inclusion = design.fitted(state)
    masks = np.array([run.predictions for run in state.runs], dtype=bool)
    sides = pool_paired._Sides(state, cells, rates, inclusion, labels, masks)
    d_tp, d_fn = sides.gradients("f1", design.beta)
    k = masks.shape[0]
    u, m, v = (
        np.array([sides.totals[0].tp_rates[r][q] for r in range(k)])[:, sides.unvoted_cells]
        for q in range(3)
    )
    own = d_fn[:, None] * np.sqrt(u * m * (1.0 - m))
    rate = d_fn[:, None] * u * np.sqrt(v)
    rest = sides.gram(d_tp, d_fn) - own @ own.T - rate @ rate.T
    # U: the unvoted cells' unverified positives (the same for every run).
    n_unvoted = float(u[0].sum())
    mean = float(u[0] @ m[0])
    variance = float(u[0] ** 2 @ v[0] + u[0] @ (m[0] * (1.0 - m[0])))
    alpha = 1.0 - family_level
    low, high, _ = effective_binomial_interval(
        mean / n_unvoted, variance / n_unvoted**2, level=1.0 - alpha / 2.0
    )
    if posterior:
        # The cells' own posterior of U (each unvoted cell's rate a Beta of its mean and
        # variance, its unverified items binomial), not a Beta-type interval of U's variance.
        draws = np.random.default_rng(0)
        uc, mc, vc = u[0], np.clip(m[0], 1e-12, 1 - 1e-12), v[0]
        strength = np.maximum(mc * (1.0 - mc) / np.maximum(vc, 1e-300) - 1.0, 1e-9)
        rates_drawn = draws.beta(mc * strength, (1.0 - mc) * strength, size=(20_000, uc.size))
        total = draws.binomial(uc.astype(np.int64), rates_drawn).sum(axis=1)
        low, high = np.quantile(total, [alpha / 4.0, 1.0 - alpha / 4.0]) / n_unvoted
    if known:
        low = high = mean / n_unvoted
        grid, alpha = 1, 2.0 * alpha
    INTERVALS.append((low * n_unvoted, high * n_unvoted, mean))
    identical = pool_paired._identical(masks)
    best = np.full(k, k)
    worst = np.ones(k, dtype=int)
    for shift in np.linspace(low * n_unvoted, high * n_unvoted, grid) - mean:
        values = np.array(
            [
                measure_value(
                    "f1", sides.tp[r], sides.fn[r] + shift, pp=sides.pp[r], n=state.n_items
                )
                for r in range(k)
            ]
        )
        paired = PairedDifferences(tuple(range(k)), "f1", values, rest, identical)
        ranks = paired_rank_intervals(
            paired, family_level=1.0 - alpha / 2.0, rng=np.random.default_rng(0)
        )
        best = np.minimum(best, [b if b is not None else 1 for b in ranks.best])
        worst = np.maximum(worst, [w if w is not None else k for w in ranks.worst])
    return RankIntervals(
        tuple(range(k)),
        tuple(int(b) for b in best),
        tuple(int(w) for w in worst),
        k,
        1.0 - alpha / 2.0,
        family_level,
        "prototype-f1-nuisance-union",
    )


def main() -> None:
    parser = study_parser(__doc__, repeats=50)
    parser.add_argument("--grid", type=int, default=9)
    parser.add_argument("--known-unvoted", action="store_true")
    parser.add_argument("--posterior-unvoted", action="store_true")
    parser.add_argument("--hide", type=int, default=0)
    args = parser.parse_args()
    data = load_closed_pool(args.data)
    if args.hide:
        unvoted = np.flatnonzero(~np.array([s.predictions for s in data.systems]).any(axis=0))
        truth = data.truth.copy()
        truth[np.random.default_rng(0).choice(unvoted[~truth[unvoted]], args.hide, False)] = True
        data = dataclasses.replace(data, truth=truth)
    truth = true_measures(data, range(len(data.systems)), F1)[:, 0]
    scored: dict[str, list] = {"nuisance": [], "paired": [], "bonferroni": []}
    for r in range(args.repeats):
        design, state, _ = play_oracle_campaign(data, budget=args.budget, seed=args.seed, repeat=r)
        estimates = design.estimate(state, level=0.95, measures=F1)
        ranks = nuisance_ranks(
            design,
            state,
            family_level=0.95,
            grid=args.grid,
            known=args.known_unvoted,
            posterior=args.posterior_unvoted,
        )
        scored["nuisance"].append({"f1": score_ranks(ranks, truth)})
        for ranking in ("paired", "bonferroni"):
            other = pool_rank_intervals(
                design, state, estimates, F1, ranking=ranking, family_level=0.95
            )
            scored[ranking].append({"f1": score_ranks(other["f1"], truth)})
    out = {
        "data": data.name,
        "budget": args.budget,
        "repeats": args.repeats,
        "seed": args.seed,
        "grid": args.grid,
        "known_unvoted": args.known_unvoted,
        "hidden_positives": args.hide,
        "posterior_unvoted": args.posterior_unvoted,
        "code": code_version(),
        "unvoted_interval_median": np.median(INTERVALS, axis=0).tolist(),
        "rank": {name: summarise_ranks(name, 0.95, s) for name, s in scored.items()},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
