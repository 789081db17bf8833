"""Does the order a round's requests are served in change what the seeded campaigns conclude?

Issue 29, N4: a round's requests are created (so served) in a shuffled order
(``annotation.services.judgments.serving_order``), not the items' order. That changes which
annotator answers which item in every seeded campaign, so three tests that rest on one campaign
each saw different answers. This study plays each campaign over many seeds in two arms, the
shuffle (``shuffled``, the product) and the items' order (``key_order``, ``serving_order``
replaced by the identity), and records per campaign what its test asserts on:

* ``demo``: ``tests/support/seeded_campaigns.py::demo_campaign`` (the demo's board after its 150
  answers and once every run is final): every interval and whether it holds the run's true score
  on the slice;
* ``pool``: ``fallible_pool_campaign`` (a closed pool answered by four 90%-accurate
  annotators): the nine final intervals, their errors and coverage;
* ``settle``: ``test_ev_reference_sample_settle``'s draw answered by two fallible annotators
  (seeded by the study's seed; the task's seed is random, as in the test): how many candidates
  are stuck and how many of them settling decides true.

It is a pytest module (the campaigns need the tests' database fixtures), one case per campaign,
arm and seed, each appending one JSON line to ``bench/results/serving_order-<campaign>.jsonl``;
``--summary`` prints the figures from those lines. The figures are in docs/BENCHMARKS.md.

Usage::

    STUDY_SEEDS=100 .venv/bin/python -m pytest -p tests.conftest -p no:randomly -q \\
        bench/serving_order_study.py -k demo
    .venv/bin/python bench/serving_order_study.py --summary
    .venv/bin/python bench/serving_order_study.py --power demo=4 pool=3
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SEEDS = int(os.environ.get("STUDY_SEEDS", "100"))
FIRST = int(os.environ.get("STUDY_FIRST_SEED", "0"))
ARMS = ("shuffled", "key_order")


def _record(campaign: str, line: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    with (RESULTS / f"serving_order-{campaign}.jsonl").open("a") as fh:
        fh.write(json.dumps(line) + "\n")


if "pytest" in sys.modules:
    import pytest
    from seeded_campaigns import (
        demo_campaign,
        demo_true_scores,
        fallible_pool_campaign,
        pool_intervals,
        snapshot_intervals,
    )

    cases = [(arm, seed) for seed in range(FIRST, FIRST + SEEDS) for arm in ARMS]

    @pytest.fixture
    def arm_order(request, monkeypatch):
        arm = request.param
        if arm == "key_order":
            monkeypatch.setattr(
                "annotation.services.judgments.serving_order",
                lambda *, task, priority, item_ids: list(item_ids),
            )
        return arm

    def _intervals(intervals) -> list[dict]:
        return [
            {
                "run": i.run,
                "metric": i.metric,
                "value": i.value,
                "low": i.low,
                "high": i.high,
                "true": i.true,
                "covers": i.covers,
            }
            for i in intervals
        ]

    @pytest.mark.django_db(transaction=True, reset_sequences=True)
    @pytest.mark.parametrize("arm_order,seed", cases, indirect=["arm_order"])
    def test_demo(arm_order, seed, monkeypatch):
        from pipeline_support import PipelineDriver

        played = demo_campaign(PipelineDriver(monkeypatch), seed=seed)
        truth = demo_true_scores()
        _record(
            "demo",
            {
                "arm": arm_order,
                "seed": seed,
                "passes": played.passes,
                "shown": _intervals(snapshot_intervals(played.shown, truth)),
                "last": _intervals(snapshot_intervals(played.last, truth)),
                "last_states": sorted(r["state"] for r in played.last.rows),
            },
        )

    @pytest.mark.django_db(transaction=True, reset_sequences=True)
    @pytest.mark.parametrize("arm_order,seed", cases, indirect=["arm_order"])
    def test_pool(arm_order, seed, monkeypatch):
        from pipeline_support import PipelineDriver

        played = fallible_pool_campaign(PipelineDriver(monkeypatch), seed=seed)
        _record(
            "pool",
            {
                "arm": arm_order,
                "seed": seed,
                "states": sorted(r.state for r in played.runs),
                "last": _intervals(pool_intervals(played)),
            },
        )

    @pytest.mark.django_db(transaction=True)
    @pytest.mark.parametrize("arm_order,seed", cases, indirect=["arm_order"])
    def test_settle(arm_order, seed, monkeypatch):
        from reference_samples import annotate, draft_with_candidates

        from annotation.services import draw_reference_sample, settle_reference_sample

        from pipeline_support import PipelineDriver, annotator

        driver = PipelineDriver(monkeypatch)
        task = draft_with_candidates()
        people = [(annotator(task, "one"), 0.95), (annotator(task, "two"), 0.9)]
        sample = draw_reference_sample(task=task, user=None, size=10, seed=2026)
        annotate(task, driver, people, seed=seed)
        sample.refresh_from_db()
        line = {
            "arm": arm_order,
            "seed": seed,
            "state": sample.state,
            "stuck": len(sample.stuck or []),
            "decided_true": None,
        }
        if sample.state == "verifying" and sample.stuck and sample.n_awaiting == 0:
            settle_reference_sample(task=task, by=None)
            driver.drain()
            sample.refresh_from_db()
            line["decided_true"] = sum(1 for entry in sample.settled if entry["true"])
        _record("settle", line)


def _binomial_tail(n: int, p: float, k: int) -> float:
    """P(X > k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1, n + 1))


def summary() -> None:
    for campaign in ("demo", "pool"):
        path = RESULTS / f"serving_order-{campaign}.jsonl"
        if not path.exists():
            continue
        lines = [json.loads(line) for line in path.open()]
        for arm in ARMS:
            rows = [line for line in lines if line["arm"] == arm]
            if not rows:
                continue
            for which in ("shown", "last") if campaign == "demo" else ("last",):
                cells = [c for r in rows for c in r[which]]
                covered = sum(c["covers"] for c in cells)
                per = [sum(not c["covers"] for c in r[which]) for r in rows]
                cov = covered / len(cells)
                se = math.sqrt(cov * (1 - cov) / len(cells))
                hist = {k: per.count(k) for k in sorted(set(per))}
                print(
                    f"{campaign} {arm:9} {which:5} campaigns {len(rows):4} intervals "
                    f"{len(cells):5} coverage {cov:.4f} ± {se:.4f} (1 s.e.)  "
                    f"campaigns with k misses {hist}"
                )
                if campaign == "pool":
                    err = max(abs(c["value"] - c["true"]) for c in cells)
                    over = sum(
                        any(abs(c["value"] - c["true"]) >= 0.25 for c in r[which]) for r in rows
                    )
                    errors = [c["value"] - c["true"] for c in cells]
                    mean = sum(errors) / len(errors)
                    sd = math.sqrt(sum((e - mean) ** 2 for e in errors) / (len(errors) - 1))
                    # Normal tails of one interval's error, times the nine of a campaign.
                    tail = 9 * (
                        0.5 * math.erfc((0.25 - mean) / (sd * math.sqrt(2)))
                        + 0.5 * math.erfc((0.25 + mean) / (sd * math.sqrt(2)))
                    )
                    print(
                        f"    largest |error| {err:.3f}; campaigns with an error >= 0.25: {over}; "
                        f"error mean {mean:+.4f} sd {sd:.4f}: P(some |error| >= 0.25) ~ {tail:.1e}"
                    )
    path = RESULTS / "serving_order-settle.jsonl"
    if path.exists():
        lines = [json.loads(line) for line in path.open()]
        for arm in ARMS:
            rows = [line for line in lines if line["arm"] == arm]
            if not rows:
                continue
            stuck = sum(1 for r in rows if r["decided_true"] is not None)
            mixed = sum(1 for r in rows if r["decided_true"] and r["decided_true"] < r["stuck"])
            print(
                f"settle {arm:9} campaigns {len(rows):4} stuck and settled {stuck} "
                f"with a mixture (some decided true, not all) {mixed}"
            )


def _misses(cells: list[dict], shift: float = 0.0) -> int:
    """Intervals of one campaign that miss the truth, estimates (and intervals) moved by
    ``shift``: what a test allowing k misses sees of an estimator biased by ``shift``."""
    return sum(
        not (c["low"] + shift - 1e-9 <= c["true"] <= c["high"] + shift + 1e-9) for c in cells
    )


def allowed_at(cells: list[list[dict]], rate: float = 1e-3) -> str:
    """The fewest misses per campaign exceeded with probability at most ``rate``: a
    beta-binomial (misses cluster within a campaign: its intervals share answers and the
    reference sample) fitted by moments to the campaigns' misses, and the binomial at the
    pooled miss rate for comparison."""
    from scipy.stats import betabinom, binom

    n = max(len(c) for c in cells)
    misses = [_misses(c) for c in cells]
    mean = sum(misses) / len(misses)
    var = sum((m - mean) ** 2 for m in misses) / max(len(misses) - 1, 1)
    p = mean / n
    k_binom = next(k for k in range(n + 1) if binom.sf(k, n, p) <= rate)
    binom_var = n * p * (1 - p)
    if p in (0.0, 1.0) or var <= binom_var:
        return f"misses per campaign mean {mean:.2f} var {var:.2f}: binomial k={k_binom}"
    # Var = n p (1-p) (1 + (n-1) rho), rho = 1 / (a + b + 1).
    rho = (var / binom_var - 1) / (n - 1)
    total = 1 / rho - 1
    a, b = p * total, (1 - p) * total
    k_bb = next(k for k in range(n + 1) if betabinom.sf(k, n, a, b) <= rate)
    return (
        f"misses per campaign mean {mean:.2f} var {var:.2f} (binomial {binom_var:.2f}), "
        f"intra-campaign correlation {rho:.3f}: P(misses > k) <= {rate} from k={k_bb} "
        f"(beta-binomial), k={k_binom} (binomial)"
    )


def power(campaign: str, allowed: int) -> None:
    """How many campaigns miss more than ``allowed`` intervals (the test's shown and final
    snapshots together for the demo), as they are and with every estimate moved by a bias."""
    path = RESULTS / f"serving_order-{campaign}.jsonl"
    lines = [json.loads(line) for line in path.open()]
    for arm in ARMS:
        rows = [line for line in lines if line["arm"] == arm]
        cells = [r.get("shown", []) + r["last"] for r in rows]
        print(f"{campaign} {arm:9} {allowed_at(cells)}")
        for shift in (0.0, -0.02, 0.02, -0.05, 0.05, -0.1, 0.1, -0.2, 0.2):
            over = sum(_misses(c, shift) > allowed for c in cells)
            print(
                f"{campaign} {arm:9} bias {shift:+.2f}: {over} of {len(rows)} campaigns miss "
                f"more than {allowed}"
            )


if __name__ == "__main__" and "--summary" in sys.argv:
    summary()
if __name__ == "__main__" and "--power" in sys.argv:
    for spec in sys.argv[sys.argv.index("--power") + 1 :]:
        name, allowed = spec.split("=")
        power(name, int(allowed))
