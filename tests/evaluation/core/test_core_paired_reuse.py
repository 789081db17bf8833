"""Paired differences from the estimate's own precision pieces: the same numbers, bit for bit.

``paired_differences`` takes each run's precision pieces from its estimate
(``RunEstimate.precision_parts``) instead of computing every run's post-strata again, builds the
Gram matrix over the items some run holds instead of every item of the task, and compares in
full only the runs that may be identical. The reference here is the previous computation, kept
as it was: the design's ``precision_parts``, a sparse product over ``2 x n_items`` columns and a
hash of every run's items. Every array of the result must be equal as bits, on worlds with exact
labels and with fallible annotators (whose label part of the Gram matrix is not empty), for the
estimates at the design's level and at a Bonferroni level.
"""

import dataclasses

import numpy as np
import pytest
from scipy import sparse

from evaluation.core import paired as paired_module
from evaluation.core.measures import OPEN_MEASURES
from evaluation.core.paired import paired_differences
from evaluation.core.ranking import bonferroni_level
from evaluation.simulation.campaigns import Annotators
from evaluation.simulation.open_world.rank_campaigns import rank_campaign

from design_campaigns import ranking_dataset, synthetic_dataset


def reference_gram(parts, state):
    """The Gram matrix as computed before: one column per item of the task, twice."""
    n = state.n_items
    rows, cols, data = [], [], []
    for a, part in enumerate(parts):
        pi = part.inclusion
        design = np.sqrt(np.clip(1.0 - pi, 0.0, 1.0)) * part.coefficients * part.residuals
        label = part.coefficients * np.sqrt(np.maximum(part.variances, 0.0))
        for offset, values in ((0, design), (n, label)):
            keep = values != 0.0
            rows.append(np.full(int(keep.sum()), a))
            cols.append(part.items[keep] + offset)
            data.append(values[keep])
    k = len(parts)
    m = sparse.csr_matrix(
        (np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))), shape=(k, 2 * n)
    )
    return np.asarray((m @ m.T).todense())


def reference_identical(items):
    """Identical runs as found before: by size and a hash of all their items."""
    k = len(items)
    same = np.eye(k, dtype=bool)
    keys = [(a.size, hash(a.tobytes())) for a in items]
    for i in range(k):
        for j in range(i + 1, k):
            if keys[i] == keys[j] and np.array_equal(items[i], items[j]):
                same[i, j] = same[j, i] = True
    return same


def reference_paired(design, state, estimates, monkeypatch, **options):
    """``paired_differences`` as before: the design's pieces, the full-width Gram matrix."""
    stripped = [dataclasses.replace(e, precision_parts=None) for e in estimates]
    with monkeypatch.context() as patch:
        patch.setattr(paired_module, "_precision_gram", reference_gram)
        patch.setattr(paired_module, "_identical", reference_identical)
        return paired_differences(design, state, estimates=stripped, **options)


def assert_same_bits(new, old):
    for m in OPEN_MEASURES:
        assert new[m].runs == old[m].runs
        for name in ("values", "covariance"):
            a, b = getattr(new[m], name), getattr(old[m], name)
            assert a.shape == b.shape and a.dtype == b.dtype, (m, name)
            assert a.tobytes() == b.tobytes(), (m, name, np.abs(a - b).max())
        assert np.array_equal(new[m].identical, old[m].identical), m


WORLDS = [
    # (dataset, systems, annotators, seed)
    ("synthetic", None, None, 1),
    ("synthetic", None, "0.95x5", 2),
    ("synthetic", None, "0.98,0.95x2,0.9,0.5", 3),
    ("ranking", 4, None, 4),
    ("ranking", None, "0.9x3", 5),
]


@pytest.fixture(scope="module", params=WORLDS, ids=lambda w: f"{w[0]}-{w[2] or 'exact'}-{w[3]}")
def campaign(request):
    name, systems, spec, seed = request.param
    dataset = synthetic_dataset(seed) if name == "synthetic" else ranking_dataset(seed)
    annotators = Annotators(spec) if spec else None
    return rank_campaign(
        dataset, n_systems=systems, reference_size=200, seed=[seed, 0], annotators=annotators
    )


@pytest.mark.parametrize("recall_model", ["verified", "reference"])
def test_the_same_numbers_as_the_previous_computation(campaign, recall_model, monkeypatch):
    design, state = campaign.design, campaign.state
    k = state.n_runs
    for level in (None, bonferroni_level(0.95, k)):
        estimates = design.estimate(state, level=level)
        new = paired_differences(design, state, estimates=estimates, recall_model=recall_model)
        old = reference_paired(design, state, estimates, monkeypatch, recall_model=recall_model)
        assert_same_bits(new, old)


def test_the_label_part_is_exercised_with_fallible_annotators(campaign):
    # Otherwise the worlds above would test only the design part of the Gram matrix.
    design, state = campaign.design, campaign.state
    noisy = design.labels(state).noisy
    variances = np.concatenate([p.variances for p in design.precision_parts(state)])
    assert (variances > 0).any() == noisy


def test_the_estimate_carries_its_precision_pieces(campaign):
    design, state = campaign.design, campaign.state
    estimates = design.estimate(state)
    for estimate, part in zip(estimates, design.precision_parts(state), strict=True):
        carried = estimate.precision_parts
        assert carried is not None
        assert carried.estimate == estimate.precision
        for name in ("items", "coefficients", "residuals", "inclusion", "variances"):
            assert getattr(carried, name).tobytes() == getattr(part, name).tobytes(), name
        assert carried.variance == part.variance or (
            np.isnan(carried.variance) and np.isnan(part.variance)
        )
    # Not part of the result's identity: comparisons and the repr are as before.
    stripped = dataclasses.replace(estimates[0], precision_parts=None)
    assert stripped == estimates[0] and repr(stripped) == repr(estimates[0])


def test_the_pieces_are_not_computed_again(campaign, monkeypatch):
    design, state = campaign.design, campaign.state
    estimates = design.estimate(state)

    def refuse(*args, **kwargs):
        raise AssertionError("precision_parts computed again")

    monkeypatch.setattr(design, "precision_parts", refuse)
    paired_differences(design, state, estimates=estimates)
    # Estimates without pieces (another design's, or made by hand) still get the design's.
    stripped = [dataclasses.replace(e, precision_parts=None) for e in estimates]
    with pytest.raises(AssertionError, match="computed again"):
        paired_differences(design, state, estimates=stripped)


def test_identical_runs_are_found_among_runs_of_one_size():
    rng = np.random.default_rng(7)
    base = np.sort(rng.choice(100_000, 5_000, replace=False))
    late = base.copy()
    late[-2] += 1 if late[-2] + 1 < late[-1] else -1  # differs at one position, not a spread one
    early = base.copy()
    early[1] -= 1 if early[1] - 1 > early[0] else -1
    runs = [base, base.copy(), late, early, base[:-1], np.sort(rng.choice(100_000, 5_000, False))]
    runs += [base.copy(), np.empty(0, np.int64), np.empty(0, np.int64)]
    same = paired_module._identical(runs)
    assert np.array_equal(same, reference_identical(runs))
    assert same[0, 1] and same[0, 6] and same[1, 6] and same[7, 8]
    assert not same[0, 2] and not same[0, 3] and not same[0, 4] and not same[0, 5]
