"""Are a closed pool's paired differences' standard errors the right size? Their calibration.

Plays the oracle campaigns of ``python -m evaluation.simulate POOL`` (the ``adaptive`` design,
the pool's systems arriving in file order, ``budget`` labels, campaign ``r`` from the streams
``[seed, r]``), and for every pair of runs with different predictions compares the difference's
estimated standard error (:func:`evaluation.core.closed_pool.paired.pool_paired_differences`)
with the spread of its estimate over the campaigns. Per measure: the median over pairs of
``sd(estimate) / mean(se)`` (1: the standard errors are right; far below 1: too large, the rank
intervals wider than the labels allow), the pointwise coverage of the pairs' 95% intervals,
and the share of campaigns in which every pair's ``|z|`` stays under the max-t quantile of the
ranks (approximated by Bonferroni's normal quantile over the pairs). Precision and F1: recall
is ranked on the runs' true positives over one number of positives
(:class:`evaluation.core.closed_pool.paired.PositivesShareDifferences`), not checked here.

``--covariance linearised`` drops each run's own variance raised to its interval's
(:func:`evaluation.core.paired.joint_covariance`, whose excess counts as independent between
runs) and keeps the delta-method Gram matrix alone, to see how much of the width is that excess.

Usage::

    nice -n 10 .venv/bin/python bench/closed_pool_pair_calibration.py POOL_DIR [--budget 500]
        [--repeats 50] [--seed 2026] [--covariance joint|linearised]
"""

from __future__ import annotations

import json

import numpy as np
from _closed_pool import play_oracle_campaign, study_parser
from _util import code_version
from scipy import special

from evaluation.core.closed_pool import paired as pool_paired
from evaluation.core.closed_pool.paired import pool_paired_differences
from evaluation.core.measures import OPEN_MEASURES
from evaluation.simulation.closed_pool.campaigns import true_measures
from evaluation.simulation.closed_pool_data import load_closed_pool


def campaign(data, budget: int, seed: int, repeat: int) -> dict:
    design, state, _ = play_oracle_campaign(data, budget=budget, seed=seed, repeat=repeat)
    estimates = design.estimate(state, level=0.95, measures=OPEN_MEASURES)
    return pool_paired_differences(design, state, estimates, measures=OPEN_MEASURES)


def main() -> None:
    parser = study_parser(__doc__, repeats=50)
    parser.add_argument("--covariance", choices=("joint", "linearised"), default="joint")
    args = parser.parse_args()
    if args.covariance == "linearised":
        pool_paired.joint_covariance = lambda variances, linearised: linearised
    data = load_closed_pool(args.data)
    truth = true_measures(data, range(len(data.systems)), OPEN_MEASURES)
    runs = [campaign(data, args.budget, args.seed, r) for r in range(args.repeats)]
    k = len(data.systems)
    upper = np.triu(np.ones((k, k), bool), 1)
    out: dict = {
        "data": data.name,
        "budget": args.budget,
        "repeats": args.repeats,
        "seed": args.seed,
        "covariance": args.covariance,
        "code": code_version(),
        "measures": {},
    }
    for j, m in enumerate(OPEN_MEASURES):
        if m == "recall":
            continue
        true_d = truth[:, j][:, None] - truth[:, j][None, :]
        pairs = upper & ~runs[0][m].identical & np.isfinite(true_d)
        d = np.array([p[m].differences[pairs] for p in runs])
        se = np.array([p[m].standard_errors[pairs] for p in runs])
        error = np.abs(d - true_d[pairs])
        # A difference known exactly (se 0: every prediction of both runs verified) covers when
        # it is the truth.
        z = np.where(se > 0, error / np.where(se > 0, se, 1.0), np.where(error < 1e-9, 0.0, np.inf))
        family_z = float(special.ndtri(1 - 0.025 / pairs.sum()))
        spread = se.mean(axis=0) > 0
        ratio = d.std(axis=0)[spread] / se.mean(axis=0)[spread]
        rmse = np.sqrt((error**2).mean(axis=0))[spread] / se.mean(axis=0)[spread]
        out["measures"][m] = {
            "pairs": int(pairs.sum()),
            "pairs_with_spread": int(spread.sum()),
            "se_median": float(np.median(se.mean(axis=0))),
            "sd_median": float(np.median(d.std(axis=0))),
            "sd_over_se_median": float(np.median(ratio)),
            "sd_over_se_quartiles": [float(q) for q in np.quantile(ratio, [0.25, 0.75])],
            "pair_coverage_95": float(np.mean(z <= 1.96)),
            "lowest_pair_coverage_95": float(np.min(np.mean(z <= 1.96, axis=0))),
            "family_coverage_bonferroni_pairs": float(np.mean(np.max(z, axis=1) <= family_z)),
            "rmse_over_se_median": float(np.median(rmse)),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
