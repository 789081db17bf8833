"""Simulated campaigns of the designs for the statistics tests: a synthetic task that holds every
edge case, campaigns over it (with a perfect oracle or fallible annotators), and the check that
estimates are unbiased within Monte-Carlo error and their intervals cover.

The synthetic task: precision near 1 (with constant and with informative scores) and near 0, a
run disjoint from all others with uninformative scores, an identical copy, a nested run that
brings no new item, runs of 1, 3 and 5 items, and true items no run predicts (so ``theta < 1``).
Runs arrive in a random order each repeat.

Also the ranking task of the rank-interval tests (``ranking_dataset``: a near-identical twin, a
close overlapping run, an identical copy, a small run, a disjoint run) and ``plan_until_done``.
"""

import numpy as np

from evaluation.core.designs import make_design
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.state import TaskState
from evaluation.simulation.campaigns import Annotators
from evaluation.simulation.datasets import Dataset, System
from evaluation.simulation.open_world.campaigns import run_repeat, true_scores


def synthetic_dataset(seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    n_true, n_extra, n_false = 2000, 300, 4000
    n_disjoint = 250
    total = n_true + n_extra + n_false + 2 * n_disjoint
    truth = np.zeros(total, bool)
    truth[: n_true + n_extra] = True
    true_ids = rng.permutation(n_true)
    false_ids = n_true + n_extra + rng.permutation(n_false)
    d_true = np.arange(total - 2 * n_disjoint, total - n_disjoint)
    d_false = np.arange(total - n_disjoint, total)
    truth[d_true] = True

    def scores(items, informative=True):
        if not informative:
            return rng.random(items.size)
        return np.where(truth[items], rng.beta(8, 2, items.size), rng.beta(2, 8, items.size))

    systems = {}
    near_one_const = np.concatenate([true_ids[:798], false_ids[:2]])
    systems["near_one_const"] = (near_one_const, np.full(800, 0.9))
    near_one = np.concatenate([true_ids[100:996], false_ids[2:6]])
    systems["near_one_scored"] = (near_one, scores(near_one))
    systems["identical"] = (near_one, systems["near_one_scored"][1])
    near_zero = np.concatenate([true_ids[1000:1012], false_ids[100:688]])
    systems["near_zero"] = (near_zero, scores(near_zero))
    disjoint = np.concatenate([d_true, d_false])
    systems["disjoint_uninformative"] = (disjoint, scores(disjoint, informative=False))
    systems["nested"] = (near_one_const[:300], np.full(300, 0.9))
    broad = np.concatenate([true_ids[500:1700], false_ids[600:900]])
    systems["broad"] = (broad, scores(broad))
    systems["tiny1"] = (true_ids[1990:1991], np.ones(1))
    systems["tiny3"] = (np.concatenate([true_ids[1991:1993], false_ids[3990:3991]]), np.ones(3))
    systems["tiny5"] = (
        np.concatenate([true_ids[1993:1994], false_ids[3991:3995]]),
        np.linspace(0.2, 1, 5),
    )
    built = tuple(
        System(name, np.asarray(items, np.int64), np.asarray(sc, float))
        for name, (items, sc) in sorted(systems.items())
    )
    keys = np.array([f"item-{i}" for i in range(total)], dtype=object)
    return Dataset("synthetic", "", keys, truth, built, int(truth.sum()))


def plan_until_done(design, state, run, truth, rng, max_rounds=200) -> None:
    """Plan ``run`` round after round, answering every drawn item from ``truth``."""
    for _ in range(max_rounds):
        plan = design.plan(state, run, rng=rng)
        if plan.items.size:
            state.set_labels(plan.items, truth[plan.items].astype(int))
        if plan.done:
            return


def ranking_dataset(seed: int = 0) -> Dataset:
    """Runs that share items, with close and tied truths (precision and recall)."""
    rng = np.random.default_rng(seed)
    n_true, n_false, n_disjoint = 3000, 6000, 500
    total = n_true + n_false + n_disjoint
    truth = np.zeros(total, bool)
    truth[:n_true] = True
    t = rng.permutation(n_true)
    f = n_true + rng.permutation(n_false)
    d = np.arange(n_true + n_false, total)
    truth[d[:400]] = True

    def scores(items):
        return np.where(truth[items], rng.beta(6, 2, items.size), rng.beta(2, 6, items.size))

    runs = {}
    top = np.concatenate([t[:920], f[:80]])
    runs["top"] = top
    runs["top_twin"] = np.concatenate([top[10:], t[2900:2910]])  # near-identical, 10 swapped
    runs["close"] = np.concatenate([t[300:1200], f[40:140]])  # shares 620 items with top
    runs["mid"] = np.concatenate([t[1000:1900], f[200:500]])
    runs["mid_copy"] = runs["mid"]  # identical: tied in truth on every metric
    runs["low"] = np.concatenate([t[1800:2120], f[500:980]])
    runs["small"] = np.concatenate([t[2500:2528], f[1000:1012]])
    runs["disjoint"] = d
    scored = {
        name: (np.sort(items).astype(np.int64), scores(np.sort(items)))
        for name, items in runs.items()
        if name != "mid_copy"
    }
    scored["mid_copy"] = scored["mid"]  # the same submission twice
    built = tuple(System(name, *scored[name]) for name in sorted(scored))
    keys = np.array([f"k{i}" for i in range(total)], dtype=object)
    return Dataset("ranking", "", keys, truth, built, int(truth.sum()))


def campaigns(dataset, design_name, repeats, seed, reference_size=200, annotators=None, **options):
    """Estimates ``(repeats, systems, metric, value/low/high)`` and truths in dataset order, and
    labels per repeat (judgments, gold included, with ``annotators``).

    With ``annotators`` (a specification such as ``"0.95x3"``, or :class:`Annotators`) a panel
    answers instead of a perfect oracle; :func:`campaigns_at_stop` also returns the estimates each
    run showed when the planner declared it done.
    """
    est, truths, labels, _ = campaigns_at_stop(
        dataset,
        design_name,
        repeats,
        seed,
        reference_size=reference_size,
        annotators=annotators,
        **options,
    )
    return est, truths, labels


def campaigns_at_stop(
    dataset, design_name, repeats, seed, reference_size=200, annotators=None, **options
):
    """:func:`campaigns`, plus the estimates each run showed when the planner declared it done."""
    if isinstance(annotators, str):
        annotators = Annotators(annotators)
    if annotators is not None:
        options.setdefault("max_judgments_per_item", len(annotators.profiles))
    truths = true_scores(dataset)
    k = len(dataset.systems)
    est = np.zeros((repeats, k, 3, 3))
    stop = np.zeros((repeats, k, 3, 3))
    labels = np.zeros(repeats)
    for r in range(repeats):
        design = make_design(design_name, **options)
        out = run_repeat(
            dataset,
            design,
            n_systems=None,
            reference_size=reference_size,
            rng=np.random.default_rng([seed, r]),
            campaign_rng=np.random.default_rng([seed, r, 1]),
            truth_scores=truths,
            annotators=annotators,
            annotator_rng=np.random.default_rng([seed, r, 2]),
        )
        est[r, out.systems] = out.estimates
        stop[r, out.systems] = out.stop_estimates
        labels[r] = out.judgments if annotators is not None else out.labels
    return est, truths, labels, stop


def check_unbiased_and_covering(est, truths, names, *, min_cover_all, min_cover_each, bias_slack):
    value, low, high = est[..., 0], est[..., 1], est[..., 2]
    covered = (low - 1e-12 <= truths) & (truths <= high + 1e-12)
    problems = []
    for m, metric in enumerate(OPEN_MEASURES):
        overall = covered[:, :, m].mean()
        if overall < min_cover_all:
            problems.append(f"{metric}: overall coverage {overall:.3f} < {min_cover_all}")
        for k, name in enumerate(names):
            cov = covered[:, k, m].mean()
            if cov < min_cover_each:
                problems.append(f"{metric} {name}: coverage {cov:.3f} < {min_cover_each}")
            err = value[:, k, m] - truths[k, m]
            err = err[np.isfinite(err)]
            se = err.std(ddof=1) / np.sqrt(err.size) if err.size > 1 else 0.0
            if abs(err.mean()) > 4 * se + bias_slack:
                problems.append(f"{metric} {name}: bias {err.mean():+.4f} (se {se:.4f})")
    assert not problems, "\n".join(problems)


# -- a run withdrawn mid-campaign (tests/evaluation/core/test_core_withdrawn_runs.py, and
# bench/withdrawal_bias.py) ------------------------------------------------------------------
# ``broad`` (1,500 items, 1,200 true, about 500 shared with ``near_one_scored`` and 100 with
# ``near_zero``) comes first and is withdrawn while its second round is still out.
WITHDRAWAL_WITHDRAWN = "broad"
WITHDRAWAL_KEPT = ("near_one_scored", "near_zero")


def _system(dataset, name):
    return next(s for s in dataset.systems if s.name == name)


def _answer(state: TaskState, truth: np.ndarray, design, *, skip=frozenset()) -> None:
    """A perfect oracle answers every requested, unanswered item that a run not in ``skip``
    predicts (the requests nothing else needs are cancelled: their items are never answered)."""
    needed = np.zeros(state.n_items, bool)
    for index, run in enumerate(state.runs):
        if index not in skip:
            needed[run.items] = True
    waiting = np.flatnonzero(design.record(state).requested & ~state.verified & needed)
    if waiting.size:
        state.set_labels(waiting, truth[waiting])


WITHDRAWAL_ARMS = ("withdrawn", "pool_unchanged", "kept")


def withdrawal_campaign(dataset, seed: int, *, arm: str = "withdrawn"):
    """One campaign of the synthetic task: :data:`WITHDRAWAL_WITHDRAWN` is planned, its first
    round answered, its second planned and never answered by the time it is withdrawn; the runs
    of :data:`WITHDRAWAL_KEPT` come after it, planned until they stop, a perfect oracle
    answering every item a run that stays predicts (a cancelled request reopened by a later
    run is answered too). Returns the design, the state, the withdrawn run's index and the other
    runs' indices by name.

    ``arm``: ``"withdrawn"`` (what the service does), ``"pool_unchanged"`` (its own pending
    items are left unanswered all the same, but it stays in the pool: what cancelling its
    requests without taking its items out of the pool would do), ``"kept"`` (no withdrawal:
    every item asked is answered, the reference the others are measured against).
    """
    if arm not in WITHDRAWAL_ARMS:
        raise ValueError(f"arm must be one of {WITHDRAWAL_ARMS}")
    rng = np.random.default_rng([seed, 0])
    truth = dataset.truth
    state = TaskState(len(dataset.keys))
    reference = rng.choice(np.flatnonzero(truth), size=200, replace=False)
    state.set_reference(np.sort(reference))
    design = make_design("default")
    junk = _system(dataset, WITHDRAWAL_WITHDRAWN)
    w = state.add_run(junk.items, junk.scores, name=junk.name)
    first = design.plan(state, w, rng=rng)
    _answer(state, truth, design)
    second = design.plan(state, w, rng=rng)  # its answers are still out when it is withdrawn
    assert first.items.size and second.items.size
    if arm == "withdrawn":
        state.withdraw_runs([w])
    skip = frozenset() if arm == "kept" else frozenset({w})
    runs = {}
    for name in WITHDRAWAL_KEPT:
        system = _system(dataset, name)
        run = runs[name] = state.add_run(system.items, system.scores, name=name)
        for _ in range(100):
            _answer(state, truth, design, skip=skip)  # a new run reopens what it predicts
            plan = design.plan(state, run, rng=rng)
            _answer(state, truth, design, skip=skip)
            if plan.done:
                break
        else:
            raise AssertionError("the planner did not stop")
    return design, state, w, runs


def withdrawal_estimates(dataset, repeats: int, seed: int, *, arm: str) -> np.ndarray:
    """``(repeats, runs that stay, metric, value/low/high)`` over :func:`withdrawal_campaign`s
    with seeds ``seed`` to ``seed + repeats - 1``."""
    est = np.zeros((repeats, len(WITHDRAWAL_KEPT), 3, 3))
    for r in range(repeats):
        design, state, _, runs = withdrawal_campaign(dataset, seed=seed + r, arm=arm)
        for k, name in enumerate(WITHDRAWAL_KEPT):
            (estimate,) = design.estimate(state, runs=[runs[name]])
            for m, metric in enumerate(OPEN_MEASURES):
                part = getattr(estimate, metric)
                est[r, k, m] = part.value, part.low, part.high
    return est
