"""Where a closed pool's recall bias comes from: the positives that no run predicts.

Plays the oracle campaigns of ``python -m evaluation.simulate POOL`` (the ``adaptive`` design,
the pool's systems arriving in file order, ``budget`` labels, campaign ``r`` from the streams
``[seed, r]``), watching every round's inclusion probabilities of the pool's unvoted positives
(items no run predicts), and estimates their number at the end four ways:

* ``model``: what the design estimates (:mod:`evaluation.core.closed_pool.totals`: verified
  positives plus each unvoted cell's unverified items times its posterior rate);
* ``ht_recorded``: Horvitz-Thompson with the recorded inclusion probabilities (a verified item's
  is frozen at the round that drew it);
* ``round_wise``: the mean over rounds ``t`` of ``V_{t-1} + sum y_i / q_{i,t}``, ``V_{t-1}`` the
  unvoted positives verified before round ``t`` and ``q_{i,t} = (pi_t - pi_{t-1}) / (1 -
  pi_{t-1})`` the chance round ``t`` drew an item not drawn before (each term unbiased given
  the rounds before it, so their mean is too; the sequential order sampling taken as Poisson);
* ``ideal_ht``: ``1 / p`` for each drawn unvoted positive, ``p`` the share of campaigns that drew
  it (a design-unbiased count, to show what the ratio recall = tp / (tp + fn) keeps of the bias).

For each, every run's recall bias (the model's ``fn`` with its unvoted part replaced).

Usage::

    nice -n 10 .venv/bin/python bench/closed_pool_unvoted_positives.py POOL_DIR [--budget 500]
        [--repeats 100] [--seed 2026]
"""

from __future__ import annotations

import json

import numpy as np
from _closed_pool import play_oracle_campaign, study_parser
from _util import code_version

from evaluation.core.closed_pool.totals import pool_totals
from evaluation.simulation.closed_pool_data import load_closed_pool


def campaign(data, unvoted_positives, budget: int, seed: int, repeat: int) -> dict:
    design, state, rounds = play_oracle_campaign(
        data, budget=budget, seed=seed, repeat=repeat, watched=unvoted_positives
    )
    watched = unvoted_positives
    cells, rates, labels, inclusion = design.fitted(state)
    totals = pool_totals(state, cells, rates, inclusion, labels)
    unvoted = ~np.array([s.predictions for s in data.systems]).any(axis=0)
    model = float(
        rates.mean[cells.of_item][unvoted & ~state.labelled].sum()
        + np.count_nonzero(state.labels[unvoted & state.labelled] == 1)
    )
    drawn = state.labelled[watched]
    round_wise = 0.0
    for before, after, new, verified in rounds:
        q = np.maximum((after - before) / np.maximum(1.0 - before, 1e-12), 1e-12)
        round_wise += float(verified.sum()) + float((new / q).sum())
    return {
        "tp": totals.tp,
        "fn_voted": totals.fn - model,
        "model": model,
        "ht_recorded": float((1.0 / inclusion[watched][drawn]).sum()),
        "round_wise": round_wise / len(rounds),
        "drawn": drawn,
        "inclusion": inclusion[watched],
    }


def main() -> None:
    parser = study_parser(__doc__, repeats=100)
    args = parser.parse_args()
    data = load_closed_pool(args.data)
    predictions = np.array([s.predictions for s in data.systems])
    watched = np.flatnonzero(data.truth & ~predictions.any(axis=0))
    recall = (predictions & data.truth).sum(axis=1) / data.truth.sum()
    runs = [campaign(data, watched, args.budget, args.seed, r) for r in range(args.repeats)]
    drawn = np.array([c["drawn"] for c in runs])
    share = np.maximum(drawn.mean(axis=0), 1.0 / len(runs))
    for c in runs:
        c["ideal_ht"] = float((c["drawn"] / share).sum())
    out: dict = {
        "data": data.name,
        "budget": args.budget,
        "repeats": args.repeats,
        "seed": args.seed,
        "code": code_version(),
        "unvoted_positives": int(watched.size),
        "unvoted_items": int((~predictions.any(axis=0)).sum()),
        "drawn_share": drawn.mean(axis=0).tolist(),
        "final_inclusion_mean": np.mean([c["inclusion"] for c in runs], axis=0).tolist(),
        "estimators": {},
    }
    for name in ("model", "ht_recorded", "round_wise", "ideal_ht"):
        count = np.array([c[name] for c in runs])
        estimated = np.array([c["tp"] / (c["tp"] + c["fn_voted"] + c[name]) for c in runs])
        bias = estimated - recall
        out["estimators"][name] = {
            "unvoted_positives_mean": float(count.mean()),
            "unvoted_positives_se": float(count.std() / np.sqrt(len(runs))),
            "recall_bias": float(bias.mean()),
            "recall_bias_se": float(bias.mean(axis=1).std() / np.sqrt(len(runs))),
            "recall_rmse": float(np.sqrt((bias**2).mean())),
            "largest_run_recall_bias": float(bias.mean(axis=0)[np.abs(bias.mean(axis=0)).argmax()]),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
