"""Speed of the max-t quantile behind the paired rank intervals, before and after.

``evaluation.core.ranking._max_t_quantile`` simulates ``max |Z_a - Z_b| / se_ab`` over every
testable pair from the joint normal of the runs' estimates (20,000 draws). At ``K = 100`` runs
(4,950 pairs) it dominates what the estimation job adds for the board's ranks (issue 31;
``bench/engine_scale.py``'s ``paired_ranks``). :func:`blocked_pairs` is how it was computed
before: both columns of each pair gathered from a ``draws x K`` array in blocks of 2,048 pairs
(a ``draws x 2048`` temporary of 328 MB per step). The core now takes one run against its
partners at a time, on contiguous rows of the transposed draws: the same numbers from the same
generator, so the quantile comes out bit for bit the same (printed).

Usage::

    .venv/bin/python bench/max_t_quantile.py [--runs 100] [--draws 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _util import machine

from evaluation.core.ranking import _max_t_quantile


def blocked_pairs(
    cov: np.ndarray,
    testable: np.ndarray,
    family_level: float,
    rng: np.random.Generator | None,
    draws: int,
) -> float:
    """The quantile as the core computed it before: both columns of each pair gathered from the
    ``draws x K`` draws, in blocks of 2,048 pairs."""
    a, b = np.nonzero(testable)
    rng = np.random.default_rng(0) if rng is None else rng
    vals, vecs = np.linalg.eigh(cov)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    z = rng.standard_normal((draws, cov.shape[0])) @ root.T
    var = np.diag(cov)
    se = np.sqrt(np.maximum(var[a] + var[b] - 2.0 * cov[a, b], 0.0))
    biggest = np.zeros(draws)
    for start in range(0, a.size, 2048):
        s = slice(start, start + 2048)
        t = np.abs(z[:, a[s]] - z[:, b[s]]) / se[s]
        np.maximum(biggest, t.max(axis=1), out=biggest)
    return float(np.quantile(biggest, family_level))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--draws", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    k = args.runs
    # Runs sharing most of their items: a covariance of rank ~300 plus a little of their own.
    shared = rng.standard_normal((k, 300)) * 0.01
    cov = shared @ shared.T / 300 + np.eye(k) * 1e-6
    testable = np.triu(np.ones((k, k), dtype=bool), 1)
    print(f"{machine()['commit']}: K = {k} runs, {testable.sum():,} pairs, {args.draws:,} draws")
    for f in (blocked_pairs, _max_t_quantile):
        times, cpu, quantiles = [], [], set()
        for _ in range(args.repeats):
            t, c = time.perf_counter(), time.process_time()
            quantiles.add(f(cov, testable, 0.95, np.random.default_rng(0), args.draws))
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        # CPU time beside the wall clock: on a shared machine the wall clock measures the queue.
        print(
            f"{f.__name__:<16} median {statistics.median(times):7.3f} s "
            f"(min {min(times):.3f}; CPU median {statistics.median(cpu):.3f} s) "
            f"quantile {sorted(quantiles)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
