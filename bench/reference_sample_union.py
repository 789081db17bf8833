"""Draws that add up: recall estimated on the union of successive draws of documents, against one
draw of the same size, and against a size chosen after seeing the sample.

A population of ``--documents`` documents, each with a geometric number of true items (mean
``--mean-true``); one run finds a document's true items with a probability that falls with the
document's size (``0.9`` for up to two true items, ``0.6`` beyond), so that documents rich in true
items are the run's weak spot. Its recall is estimated as the product does on a reference sample
(:func:`evaluation.core.reference.reference_ratio`: a ratio over the sample's true items,
cluster-robust over its documents), from:

* ``one draw``: a simple random sample of ``n`` documents;
* ``two draws``: ``n1`` documents, then ``n - n1`` from those not drawn yet (the union);
* ``until enough``: 10 documents, then 5 more at a time until the sample holds at least 30 items
  in 10 documents (the minimum recall is presented on): a size chosen after seeing the sample.

Reported: the mean error of the estimate (bias, with its standard error), the coverage of the
normal 95% interval on the cluster-robust variance, and the mean sample size.

Usage::

    .venv/bin/python bench/reference_sample_union.py [--repeats 20000] [--seed 11]
        [--documents 400] [--mean-true 1.5] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _util import machine

from evaluation.core.reference import reference_ratio
from evaluation.core.state import ReferenceSample

Z95 = 1.959964


def population(rng: np.random.Generator, documents: int, mean_true: float):
    """True items per document, and which of them the run finds."""
    true = rng.geometric(1.0 / (1.0 + mean_true), documents) - 1
    found = [rng.random(t) < (0.9 if t <= 2 else 0.6) for t in true]
    return true, found


def estimate(found, docs: np.ndarray) -> tuple[float, float, int]:
    """Recall on the documents ``docs``: value, variance, items."""
    hits = [found[d] for d in docs]
    groups = np.concatenate([np.full(h.size, i) for i, h in enumerate(hits)] or [[]])
    numer = np.concatenate(hits or [[]]).astype(bool)
    ratio = reference_ratio(ReferenceSample(np.arange(numer.size), groups.astype(int)), numer)
    return ratio.value, ratio.variance, ratio.trials


def until_enough(rng, true, n_docs: int) -> np.ndarray:
    order = rng.permutation(n_docs)
    size = 10
    while True:
        docs = order[:size]
        if (true[docs].sum() >= 30 and np.count_nonzero(true[docs]) >= 10) or size >= n_docs:
            return docs
        size += 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument("--mean-true", type=float, default=1.5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    true, found = population(rng, args.documents, args.mean_true)
    recall = sum(int(f.sum()) for f in found) / int(true.sum())
    schemes = {"one draw": [], "two draws": [], "until enough": []}
    for _ in range(args.repeats):
        stopped = until_enough(rng, true, args.documents)
        n = stopped.size
        schemes["until enough"].append((*estimate(found, stopped), n))
        schemes["one draw"].append(
            (*estimate(found, rng.choice(args.documents, n, replace=False)), n)
        )
        first = rng.choice(args.documents, n // 2, replace=False)
        rest = np.setdiff1d(np.arange(args.documents), first)
        second = rng.choice(rest, n - n // 2, replace=False)
        schemes["two draws"].append((*estimate(found, np.r_[first, second]), n))
    rows = {}
    for name, values in schemes.items():
        arr = np.array([v for v in values if np.isfinite(v[0])])
        error = arr[:, 0] - recall
        half = Z95 * np.sqrt(arr[:, 1])
        rows[name] = {
            "bias": float(error.mean()),
            "bias_se": float(error.std(ddof=1) / np.sqrt(error.size)),
            "coverage": float(np.mean(np.abs(error) <= half)),
            "documents": float(arr[:, 3].mean()),
            "items": float(arr[:, 2].mean()),
        }
    result = {
        "repeats": args.repeats,
        "seed": args.seed,
        "documents": args.documents,
        "mean_true": args.mean_true,
        "recall": recall,
        "schemes": rows,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"true recall {recall:.4f}")
    for name, row in rows.items():
        print(
            f"{name:13}: bias {row['bias']:+.4f} (se {row['bias_se']:.4f}), coverage "
            f"{row['coverage']:.3f}, {row['documents']:.1f} documents, {row['items']:.1f} items"
        )


if __name__ == "__main__":
    main()
