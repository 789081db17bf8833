"""Speed of the ``default`` design on a large synthetic task.

Target (issue): a task of 100 runs x 1,000,000 predictions with ~50,000 verified items;
``design.estimate(state)`` (all runs, with intervals) <= 2 s, and ``design.plan`` for one new
run's first round <= 1 s.

The synthetic task
------------------
* A universe of ``--universe`` items (default 3 x predictions), ``--correct`` (30%) of them
  correct. A common "consensus" core of ``--core`` items (default 1.2 x predictions) holds most
  correct items (55% correct in the core, the rest of the correct items spread thinly outside).
* Run ``j`` takes a share ``c_j ~ U(0.55, 0.85)`` of its predictions from the core and the rest
  from outside it, each part drawn without replacement with a run-specific preference for
  correct items (weighted sampling, weight ``exp(q_j)`` for correct items, ``q_j ~ U(0, 2)``), so
  runs overlap heavily, share most correct items, and differ in precision.
* Scores: ``Beta(a_j, 2)`` for correct and ``Beta(2, a_j)`` for incorrect items
  (``a_j ~ U(1.5, 6)``); every 10th run has a constant score 1.0 (a set without confidences),
  every 5th of the others rounds its scores to 2 decimals (many ties).
* A reference sample of ``--reference`` true items (uniform, singleton groups).

The verified sample is created by the design itself: after ``add_run`` for every run, each run
is planned in rounds (``plan``, answered from the synthetic truth) until the design stops. The
campaign design uses ``--target-half-width`` and ``--campaign-min-batch`` (a larger first batch
than the default 16 only saves rounds: the resulting state is an ordinary design state). When
the campaign leaves fewer than ``--verified`` labels, further passes with a tighter target and a
label budget of ``--verified`` top it up.

With ``--judgments K`` the verified items are then answered by a panel of fallible annotators
(``--annotators``, as in ``python -m evaluation.simulate``): each gets ``K`` judgments by
different annotators, the exact labels are dropped, and ``--gold`` gold items with known answers
get ``K`` judgments too, so that ``estimate`` fits the annotator model to every judgment and
carries the labels' uncertainty (issue: 50,000 verified items with 2 judgments each, <= 2 s).

Timed phases: generation (not engine), ``add_run`` x runs, ``record`` (score strata of every run),
the campaign, ``estimate(state)`` (``--estimate-repeats`` times: min/median), the paired
differences of every pair of runs and their max-t rank intervals on the three measures (what the
estimation job adds for the board's ranks, issue 31: estimate + ranks <= 2 s), and for one NEW run
(5% of its items never seen before, so it is not fully covered and the planner takes its full
path): ``add_items`` + ``add_run`` and ``plan`` round 1. Each phase's CPU time is kept beside
its wall clock (on a shared machine the wall clock measures the queue), and ``digest`` hashes
every number the ranks rest on, so that two versions of the engine can be compared bit for bit
on this task (run this script from a checkout of each).

Usage::

    .venv/bin/python bench/engine_scale.py [--runs 100] [--predictions 1000000]
        [--verified 50000] [--seed 0] [--json] [--profile]
        [--judgments 2 --annotators 0.98,0.95x3,0.9 --gold 500]
    .venv/bin/python bench/engine_scale.py --runs 10 --predictions 100000 --verified 5000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
import time

import numpy as np
from _util import Timer, format_hotspots, machine, peak_rss_mib, profile_call

from evaluation.core.designs.coordinated import CoordinatedPoissonDesign
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.paired import paired_differences
from evaluation.core.ranking import paired_rank_intervals
from evaluation.core.state import TaskState
from evaluation.simulation.annotators import parse_annotators

TARGET_ESTIMATE_S = 2.0
TARGET_PLAN_S = 1.0


# -- synthetic task ---------------------------------------------------------------------------
class Universe:
    """Truth and the core/outside split of the item universe."""

    def __init__(
        self, n_items: int, n_core: int, correct: float, core_rate: float, rng: np.random.Generator
    ):
        n_core = min(n_core, n_items)
        self.n_items = n_items
        n_correct = round(correct * n_items)
        core_correct = min(round(core_rate * n_core), n_correct)
        out_correct = min(n_correct - core_correct, n_items - n_core)
        truth = np.zeros(n_items, bool)
        perm = rng.permutation(n_items)
        self.core, self.outside = np.sort(perm[:n_core]), np.sort(perm[n_core:])
        truth[rng.choice(self.core, core_correct, replace=False)] = True
        truth[rng.choice(self.outside, out_correct, replace=False)] = True
        self.truth = truth


def _weighted_without_replacement(
    items: np.ndarray, k: int, weights: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """``k`` items of ``items`` drawn without replacement with probability ~ ``weights``."""
    k = min(k, items.size)
    keys = rng.standard_exponential(items.size) / weights  # Efraimidis-Spirakis
    return items[np.argpartition(keys, k - 1)[:k]] if k < items.size else items.copy()


def make_run(
    universe: Universe,
    j: int,
    n_pred: int,
    rng: np.random.Generator,
    extra_pool: np.ndarray | None = None,
    extra_share: float = 0.0,
):
    """Items (unsorted) and scores of synthetic run ``j``; ``extra_pool`` holds brand-new items."""
    truth = universe.truth
    n_extra = round(extra_share * n_pred) if extra_pool is not None else 0
    n_old = n_pred - n_extra
    share_core = rng.uniform(0.55, 0.85)
    n_core = min(round(share_core * n_old), universe.core.size)
    n_out = min(n_old - n_core, universe.outside.size)
    pref = math.exp(rng.uniform(0.0, 2.0))
    w_core = np.where(truth[universe.core], pref, 1.0)
    w_out = np.where(truth[universe.outside], pref, 1.0)
    parts = [
        _weighted_without_replacement(universe.core, n_core, w_core, rng),
        _weighted_without_replacement(universe.outside, n_out, w_out, rng),
    ]
    if n_extra:
        parts.append(extra_pool[:n_extra])
    items = np.concatenate(parts)
    correct = np.zeros(items.size, bool)
    inside = items < truth.size
    correct[inside] = truth[items[inside]]
    if j % 10 == 9:
        scores = np.ones(items.size)
    else:
        a = rng.uniform(1.5, 6.0)
        scores = np.where(correct, rng.beta(a, 2.0, items.size), rng.beta(2.0, a, items.size))
        if j % 5 == 4:
            scores = np.round(scores, 2)
    return items, scores


def answer_by_panel(
    state: TaskState,
    truth: np.ndarray,
    spec: str,
    judgments: int,
    n_gold: int,
    rng: np.random.Generator,
) -> dict:
    """Replace the exact labels of ``state`` by ``judgments`` answers per verified item from a
    simulated panel (``spec``), different annotators on each item, plus gold items."""
    profiles = np.array(parse_annotators(spec))
    if judgments > len(profiles):
        raise SystemExit("--judgments must not exceed the number of annotators")
    items = np.flatnonzero(state.labels >= 0)
    candidates = np.flatnonzero(state.in_union & (state.labels < 0))
    gold = np.sort(rng.choice(candidates, min(n_gold, candidates.size), replace=False))
    judged = np.concatenate([items, gold])
    # Each item's annotators: the first ``judgments`` of a random permutation of the panel.
    order = np.argsort(rng.random((judged.size, len(profiles))), axis=1)[:, :judgments]
    who = order.ravel()
    what = np.repeat(judged, judgments)
    right = truth[what]
    p_yes = np.where(right, profiles[who, 0], 1.0 - profiles[who, 1])
    says = rng.random(what.size) < p_yes
    state.clear_labels()
    state.add_judgments(what, who, says)
    state.set_gold(gold, truth[gold])
    return {
        "annotators": spec,
        "judgments_per_item": judgments,
        "items": int(items.size),
        "gold_items": int(gold.size),
        "judgments": int(what.size),
    }


# -- campaign ---------------------------------------------------------------------------------
def plan_all(
    design, state: TaskState, truth: np.ndarray, rng, runs, max_rounds: int, stats: dict, log=None
) -> None:
    """Plan every run of ``runs`` in rounds until the design stops, answering from ``truth``."""
    started = time.perf_counter()
    for run in runs:
        if log is not None and run % 10 == 0:
            log(
                f"  run {run}: {stats['rounds']} rounds, {state.n_labelled:,} verified, "
                f"{time.perf_counter() - started:.0f} s"
            )
        for _ in range(max_rounds):
            t = time.perf_counter()
            plan = design.plan(state, run, rng=rng)
            dt = time.perf_counter() - t
            stats["rounds"] += 1
            stats["plan_seconds"].append(dt)
            stats["by_status"].setdefault(plan.status, []).append(dt)
            stats["status"][plan.status] = stats["status"].get(plan.status, 0) + 1
            if plan.items.size:
                state.set_labels(plan.items, truth[plan.items])
            if plan.done:
                break


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--predictions", type=int, default=1_000_000)
    ap.add_argument(
        "--verified",
        type=int,
        default=50_000,
        help="labels the campaign should leave (approximately)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--universe", type=int, default=None, help="default 3 x predictions")
    ap.add_argument("--core", type=int, default=None, help="default 1.2 x predictions")
    ap.add_argument("--correct", type=float, default=0.30)
    ap.add_argument("--reference", type=int, default=1000)
    ap.add_argument(
        "--target-half-width",
        type=float,
        default=0.008,
        help="campaign target (chosen so the default task ends near 50k labels)",
    )
    ap.add_argument("--campaign-min-batch", type=int, default=1024)
    ap.add_argument("--max-rounds", type=int, default=50)
    ap.add_argument("--max-passes", type=int, default=4)
    ap.add_argument(
        "--new-share",
        type=float,
        default=0.05,
        help="share of the new run's items never seen before",
    )
    ap.add_argument("--estimate-repeats", type=int, default=3)
    ap.add_argument(
        "--judgments",
        type=int,
        default=0,
        help="answer every verified item this many times by fallible annotators (0: exact labels)",
    )
    ap.add_argument(
        "--annotators",
        default="0.98,0.95x3,0.9",
        help="the panel with --judgments (default: %(default)s)",
    )
    ap.add_argument("--gold", type=int, default=500, help="gold items with --judgments")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="cProfile one extra estimate() and one extra new-run plan()",
    )
    ap.add_argument("--save", metavar="PATH", help="also write the JSON object to PATH")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    host = machine()  # before the run: the commit whose code is imported and measured
    n_pred = args.predictions
    n_universe = args.universe or 3 * n_pred
    n_core = args.core or int(1.2 * n_pred)
    timer = Timer()
    rss = {}
    rng = np.random.default_rng(args.seed)

    # 1. synthetic data (not engine time) and state construction (engine: add_run)
    with timer("generate"):
        universe = Universe(n_universe, n_core, args.correct, 0.55, rng)
    state = TaskState(n_universe)
    for j in range(args.runs):
        with timer("generate"):
            items, scores = make_run(universe, j, n_pred, rng)
        with timer("add_run"):
            state.add_run(items, scores, name=f"run{j:03d}")
        del items, scores
    true_ids = np.flatnonzero(universe.truth)
    state.set_reference(
        np.sort(rng.choice(true_ids, min(args.reference, true_ids.size), replace=False))
    )
    rss["after_add_run"] = peak_rss_mib()
    log(
        f"built {state.n_runs} runs: generate {timer.seconds['generate']:.1f} s, "
        f"add_run {timer.seconds['add_run']:.1f} s"
    )

    # 2. the design's record (score strata of every run), then the campaign through plan()
    target = args.target_half_width
    design = CoordinatedPoissonDesign(target_half_width=target, min_batch=args.campaign_min_batch)
    with timer("record"):
        design.record(state)
    campaign = {"rounds": 0, "plan_seconds": [], "status": {}, "passes": [], "by_status": {}}
    plan_rng = np.random.default_rng([args.seed, 1])
    with timer("campaign"):
        for p in range(args.max_passes):
            budget = None if p == 0 else args.verified
            design = CoordinatedPoissonDesign(
                target_half_width=target, min_batch=args.campaign_min_batch, budget=budget
            )
            log(f"campaign pass {p}: target {target:.4f}, budget {budget}")
            plan_all(
                design,
                state,
                universe.truth,
                plan_rng,
                range(state.n_runs),
                args.max_rounds,
                campaign,
                log,
            )
            campaign["passes"].append({"target_half_width": target, "verified": state.n_labelled})
            if state.n_labelled >= 0.95 * args.verified:
                break
            target *= 0.7
    rss["after_campaign"] = peak_rss_mib()
    plan_s = campaign.pop("plan_seconds")
    campaign["plan_round_s_by_status"] = {
        k: {"mean": statistics.fmean(v), "max": max(v)}
        for k, v in campaign.pop("by_status").items()
    }
    campaign.update(
        {
            "verified": state.n_labelled,
            "plan_round_mean_s": statistics.fmean(plan_s),
            "plan_round_max_s": max(plan_s),
        }
    )

    panel = None
    if args.judgments:
        with timer("judgments"):
            panel = answer_by_panel(
                state,
                universe.truth,
                args.annotators,
                args.judgments,
                args.gold,
                np.random.default_rng([args.seed, 4]),
            )
        log(f"answered by {args.annotators}: {panel['judgments']:,} judgments")

    # 3. estimate(state) for every run, repeated
    est_design = CoordinatedPoissonDesign(target_half_width=args.target_half_width)
    est_times, est_cpu = [], []
    for _ in range(args.estimate_repeats):
        # A pass of the service re-fits the annotator model to the judgments it read: time it.
        state.design_state[est_design.name].labels_cache = None
        t, c = time.perf_counter(), time.process_time()
        estimates = est_design.estimate(state)
        est_times.append(time.perf_counter() - t)
        est_cpu.append(time.process_time() - c)
    rss["after_estimate"] = peak_rss_mib()
    # 3b. what the estimation job adds for the board's ranks: the paired differences of every
    # run (all K (K - 1) / 2 pairs) and the max-t rank intervals of the three measures
    # (evaluation/kinds/open_world/paired_ranks.py), on the estimate's results
    rank_times, rank_cpu, paired_times, paired_cpu = [], [], [], []
    for _ in range(args.estimate_repeats):
        state.design_state[est_design.name].labels_cache = None
        t, c = time.perf_counter(), time.process_time()
        paired = paired_differences(est_design, state, estimates=estimates)
        paired_times.append(time.perf_counter() - t)
        paired_cpu.append(time.process_time() - c)
        ranks = {
            m: paired_rank_intervals(
                paired[m], family_level=est_design.confidence, rng=np.random.default_rng(0)
            )
            for m in OPEN_MEASURES
        }
        rank_times.append(time.perf_counter() - t)
        rank_cpu.append(time.process_time() - c)
    rss["after_ranks"] = peak_rss_mib()
    profiles = {}
    if args.profile:
        state.design_state[est_design.name].labels_cache = None
        _, rows, _ = profile_call(est_design.estimate, state, top=args.top)
        profiles["estimate"] = rows
        state.design_state[est_design.name].labels_cache = None
        _, rows, _ = profile_call(paired_differences, est_design, state, estimates=estimates)
        profiles["paired_differences"] = rows
    prec = np.array([e.precision.half_width for e in estimates])
    true_prec = np.array([universe.truth[r.items].mean() for r in state.runs])
    covered = np.mean([e.precision.covers(v) for e, v in zip(estimates, true_prec, strict=True)])

    # 4. one NEW run: add it (5% brand-new items), then plan its first round
    new_j = state.n_runs
    n_new_items = round(args.new_share * n_pred)
    with timer("new_generate"):
        run_rng = np.random.default_rng([args.seed, 2])
        extra = np.arange(n_universe, n_universe + n_new_items, dtype=np.int64)
        items, scores = make_run(universe, new_j, n_pred, run_rng, extra, args.new_share)
    with timer("new_add"):
        state.add_items(n_new_items)
        new_run = state.add_run(items, scores, name="new")
    snapshot = _snapshot(state, design.name)
    t = time.perf_counter()
    new_plan = est_design.plan(state, new_run, rng=np.random.default_rng([args.seed, 3]))
    new_plan_s = time.perf_counter() - t
    rss["after_new_plan"] = peak_rss_mib()

    if args.profile:
        _restore(state, design.name, snapshot)
        _, rows, _ = profile_call(
            est_design.plan, state, new_run, rng=np.random.default_rng([args.seed, 3]), top=args.top
        )
        profiles["plan_new_run"] = rows

    out = {
        "machine": host,
        "sizes": {
            "runs": args.runs,
            "predictions": n_pred,
            "universe": n_universe,
            "core": n_core,
            "reference": args.reference,
            "seed": args.seed,
            "verified_goal": args.verified,
            "pool": int(np.count_nonzero(state.in_union)),
        },
        "seconds": {k: round(v, 3) for k, v in timer.seconds.items()},
        "campaign": campaign,
        "judgments": panel,
        "estimate": {
            "runs": len(estimates),
            "seconds": [round(s, 4) for s in est_times],
            "min_s": min(est_times),
            "median_s": statistics.median(est_times),
            # CPU time of the process: on a shared machine the wall clock measures the queue.
            "cpu_median_s": statistics.median(est_cpu),
            "target_s": TARGET_ESTIMATE_S,
            "meets_target": statistics.median(est_times) <= TARGET_ESTIMATE_S,
            "precision_half_width_median": float(np.median(prec)),
            "precision_coverage": float(covered),
        },
        "paired_ranks": {
            "pairs": len(estimates) * (len(estimates) - 1) // 2,
            "seconds": [round(s, 4) for s in rank_times],
            "min_s": min(rank_times),
            "median_s": statistics.median(rank_times),
            "paired_differences_median_s": statistics.median(paired_times),
            "paired_differences_cpu_median_s": statistics.median(paired_cpu),
            "cpu_median_s": statistics.median(rank_cpu),
            # The job's engine part in CPU seconds: estimate, paired differences, ranks.
            "estimate_and_ranks_cpu_median_s": statistics.median(est_cpu)
            + statistics.median(rank_cpu),
            "digest": _paired_digest(paired, ranks),
            "estimate_and_ranks_median_s": statistics.median(est_times)
            + statistics.median(rank_times),
            "target_s": TARGET_ESTIMATE_S,
            "meets_target": statistics.median(est_times) + statistics.median(rank_times)
            <= TARGET_ESTIMATE_S,
            "levels": {m: ranks[m].level for m in OPEN_MEASURES},
            "mean_width": {
                m: float(
                    np.mean(
                        [
                            w - b
                            for b, w in zip(ranks[m].best, ranks[m].worst, strict=True)
                            if b is not None
                        ]
                    )
                )
                for m in OPEN_MEASURES
            },
        },
        "plan_new_run": {
            "seconds": new_plan_s,
            "status": new_plan.status,
            "requested": int(new_plan.items.size),
            "current_half_width": new_plan.current_half_width,
            "target_s": TARGET_PLAN_S,
            "meets_target": new_plan_s <= TARGET_PLAN_S,
        },
        "peak_rss_mib": rss,
        "profiles": profiles,
    }
    if args.save:
        with open(args.save, "w") as fh:
            json.dump(out, fh, indent=2, default=float)
    if args.json:
        json.dump(out, sys.stdout, indent=2, default=float)
        print()
        return 0
    _print_report(out, args)
    return 0


def _paired_digest(paired: dict, ranks: dict) -> str:
    """A hash of every number the snapshot's ranks rest on (the paired differences' values,
    covariances and identical runs; the rank intervals and their levels), to compare two
    versions of the engine bit for bit on this task."""
    h = hashlib.sha256()
    for m in OPEN_MEASURES:
        for array in (paired[m].values, paired[m].covariance, paired[m].identical):
            h.update(np.ascontiguousarray(array).tobytes())
        r = ranks[m]
        h.update(repr((r.best, r.worst, r.ranked, r.level)).encode())
    return h.hexdigest()[:16]


def _snapshot(state: TaskState, name: str):
    """What one plan() call mutates in the record, so that a profiled call replays the same."""
    rec = state.design_state[name]
    return (
        rec.inclusion.copy(),
        rec.requested.copy(),
        list(rec.rounds),
        len(rec.log),
        len(rec.strata),
        rec.cell.copy(),
        rec.n_cells,
    )


def _restore(state: TaskState, name: str, snap) -> None:
    rec = state.design_state[name]
    rec.inclusion, rec.requested = snap[0].copy(), snap[1].copy()
    rec.rounds[:] = snap[2]
    del rec.rounds[snap[4] :]
    del rec.log[snap[3] :]
    del rec.strata[snap[4] :]
    rec.cell, rec.n_cells = snap[5].copy(), snap[6]


def _print_report(out: dict, args) -> None:
    s, c, e, p = out["sizes"], out["campaign"], out["estimate"], out["plan_new_run"]
    sec = out["seconds"]
    if out["judgments"]:
        j = out["judgments"]
        print(
            f"labels: {j['items']:,} verified items x {j['judgments_per_item']} judgments by "
            f"{j['annotators']}, {j['gold_items']} gold items ({j['judgments']:,} judgments)"
        )
    print(
        f"synthetic task: {s['runs']} runs x {s['predictions']:,} predictions, universe "
        f"{s['universe']:,} (pool {s['pool']:,}), reference {s['reference']}, seed {s['seed']}"
    )
    print(f"{'phase':<42} {'seconds':>9}  note")
    rows = [
        ("generate synthetic data (not engine)", sec.get("generate", 0.0), ""),
        (f"add_run x {s['runs']}", sec["add_run"], ""),
        ("record() (score strata of every run)", sec["record"], ""),
        (
            "campaign: plan every run in rounds",
            sec["campaign"],
            f"{c['rounds']} rounds, mean {c['plan_round_mean_s']:.3f} s, "
            f"max {c['plan_round_max_s']:.3f} s; {c['verified']:,} verified; {c['status']}",
        ),
        (f"estimate(state), {e['runs']} runs: min", e["min_s"], ""),
        (
            "estimate(state): median",
            e["median_s"],
            f"target <= {e['target_s']:.0f} s: {'ok' if e['meets_target'] else 'MISSED'}",
        ),
        (
            f"paired differences + ranks ({out['paired_ranks']['pairs']:,} pairs): median",
            out["paired_ranks"]["median_s"],
            "",
        ),
        (
            "estimate + paired ranks: medians summed",
            out["paired_ranks"]["estimate_and_ranks_median_s"],
            f"target <= {e['target_s']:.0f} s: "
            f"{'ok' if out['paired_ranks']['meets_target'] else 'MISSED'}",
        ),
        (
            "estimate + paired ranks: CPU medians summed",
            out["paired_ranks"]["estimate_and_ranks_cpu_median_s"],
            f"paired differences {out['paired_ranks']['paired_differences_cpu_median_s']:.3f} s;"
            f" digest {out['paired_ranks']['digest']}",
        ),
        ("new run: add_items + add_run", sec["new_add"], ""),
        (
            "new run: plan round 1",
            p["seconds"],
            f"target <= {p['target_s']:.0f} s: {'ok' if p['meets_target'] else 'MISSED'}; "
            f"{p['status']}, {p['requested']} items",
        ),
    ]
    for name, secs, note in rows:
        print(f"{name:<42} {secs:9.3f}  {note}")
    print(
        "campaign plan() per round by status: "
        + ", ".join(
            f"{k} mean {v['mean']:.3f} s / max {v['max']:.3f} s"
            for k, v in c["plan_round_s_by_status"].items()
        )
    )
    print(
        f"estimate runs: {e['seconds']}; precision half-width median "
        f"{e['precision_half_width_median']:.4f}, coverage {e['precision_coverage']:.2f}"
    )
    print("peak RSS (MiB): " + ", ".join(f"{k} {v:.0f}" for k, v in out["peak_rss_mib"].items()))
    for name, rows in out["profiles"].items():
        print()
        print(format_hotspots(rows, name))


if __name__ == "__main__":
    raise SystemExit(main())
