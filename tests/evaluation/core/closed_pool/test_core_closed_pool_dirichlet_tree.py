"""Paper 000's Dirichlet-tree oracle model: CSF bins, the pruned tree, the prior and EM.

The EM values on the two-leaf tree are worked out by hand in the comments; the multi-level case
is checked against a small top-down implementation written here from the paper's model (§4.1:
``theta ~ Dirichlet(alpha)``, a block drawn down the tree with one Dirichlet per internal node).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.core.closed_pool.dirichlet_tree import csf_bin_edges, em_fit, tree_model

TWO_LEAVES = {"depth": 1, "n_bins": 2, "edges": [-math.inf, 0.5, math.inf]}
SCORES = np.array([0.1, 0.2, 0.8, 0.9])


def test_csf_edges_follow_the_cumulative_square_root_of_the_histogram():
    # 4 histogram bins over [0, 4] with counts 9, 1, 0, 16: sqrt 3, 1, 0, 4, cumulated 3, 4, 4, 8.
    # Three strata: thresholds 0, 8/3, 16/3. Bin 0 reaches 0 (edge 0), bin 1 reaches 8/3 (edge 1),
    # bin 3 reaches 16/3 (edge 3) and the loop ends; the ends open to -inf and inf, which
    # replaces edge 3: two bins, not three (activeeval's rule can give fewer bins than strata).
    values = np.r_[0.0, np.full(8, 0.5), 1.5, np.full(15, 3.5), 4.0]
    assert np.histogram(values, bins=4)[0].tolist() == [9, 1, 0, 16]
    assert csf_bin_edges(values, 3, hist_bins=4).tolist() == [-math.inf, 1.0, math.inf]
    # two strata: thresholds 0, 4, 8; bins 0 and 1 give edges 0 and 1, then the count is reached
    assert csf_bin_edges(values, 2, hist_bins=4).tolist() == [-math.inf, 1.0, math.inf]
    # A flat histogram (one value in each of 8 unit bins), 4 strata: csf 1..8, thresholds
    # 0, 2, 4, 6, 8. The edge is the *left* edge of the bin whose count reaches a threshold
    # (bins 0, 1, 3, 5), and the loop stops once 4 edges are placed: [-inf, 1, 3, 5, inf].
    flat = np.arange(0.5, 8.0)
    assert csf_bin_edges(flat, 4, hist_bins=np.arange(9.0)).tolist() == [
        -math.inf,
        1.0,
        3.0,
        5.0,
        math.inf,
    ]


def _csf_walk(values, n_bins, hist_bins):
    """The rule as a walk over the histogram bins, one edge at most per bin."""
    counts, hist_edges = np.histogram(values, bins=hist_bins)
    csf = np.cumsum(np.sqrt(counts))
    edges, j = [], 0
    for idx, value in enumerate(csf):
        if j == n_bins:
            edges.append(hist_edges[-1])
            break
        if value >= j * (csf[-1] / n_bins):
            edges.append(hist_edges[idx])
            j += 1
    edges[0], edges[-1] = -math.inf, math.inf
    return edges


@pytest.mark.parametrize("seed", range(30))
def test_csf_edges_equal_the_walk_over_the_histogram(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 3000))
    values = rng.choice([rng.beta(0.3, 4.0, n), np.round(rng.normal(size=n), 1)], axis=0)
    n_bins = int(rng.choice([2, 4, 8, 16, 32]))
    hist_bins = int(rng.integers(n_bins + 1, 8 * n_bins))
    assert csf_bin_edges(values, n_bins, hist_bins=hist_bins).tolist() == _csf_walk(
        values, n_bins, hist_bins
    )


def test_csf_refuses_a_histogram_coarser_than_the_strata():
    with pytest.raises(ValueError, match="too coarse"):
        csf_bin_edges(np.arange(100.0), 8, hist_bins=8)


def test_empty_leaves_are_pruned_and_single_child_nodes_removed():
    # Depth 3, branching 2: slots 0..7; items in slots 0, 1 and 5 only. The left subtree keeps
    # the node over slots {0, 1}; the right one shrinks to slot 5, which moves up to the root.
    edges = [-math.inf, 1, 2, 3, 4, 5, 6, 7, math.inf]
    values = np.array([0.5, 0.6, 1.5, 5.5, 5.2])
    model = tree_model(np.full(5, 0.5), depth=3, n_bins=8, bin_values=values, edges=edges)
    assert model.n_blocks == 3
    assert model.blocks.tolist() == [0, 0, 1, 2, 2]
    assert model.block_sizes.tolist() == [2, 1, 2]
    assert model.n_nodes == 4  # three leaves and the node over slots {0, 1}
    inner = 3
    assert model.parent.tolist() == [inner, inner, 4, 4]  # 4 is the root
    assert model.depth.tolist() == [2, 2, 1, 1]
    # beta = depth(v) ** (children of the parent) + c0 under v; c0 = s + 1 = [1.5, 1.5]
    np.testing.assert_allclose(model.beta[:, 0], [4 + 1.5, 4 + 1.5, 1 + 1.5, 1 + 3.0])
    np.testing.assert_allclose(model.leaves_under, [1, 1, 1, 2])


def test_prior_of_the_paper():
    # alpha_y = 1 + sum_k s(y|k); c0[k, y] = s(y|k) + 1 with s(1|k) the block's mean score.
    model = tree_model(SCORES, **TWO_LEAVES)
    np.testing.assert_allclose(model.prior_counts, [[1.85, 1.15], [1.15, 1.85]])
    np.testing.assert_allclose(model.alpha, [2.0, 2.0])
    np.testing.assert_allclose(model.beta, [[2.85, 2.15], [2.15, 2.85]])


def test_em_with_every_label_known_by_hand():
    # Block 0: two negatives; block 1: one positive, one negative. No latent label, so EM stops
    # after its second step (the log posterior no longer moves).
    # theta ∝ counts + alpha - 1 = [3, 1] + [1, 1] -> [2/3, 1/3].
    # branch ∝ beta + counts - leaves: node 0 [2.85 + 2 - 1, 2.15 - 1] = [3.85, 1.15],
    # node 1 [2.15 + 1 - 1, 2.85 + 1 - 1] = [2.15, 2.85]; per label over siblings: / [6, 4].
    model = tree_model(SCORES, **TWO_LEAVES)
    fit = em_fit(model, [0, 1], [2, 1])
    np.testing.assert_allclose(fit.theta, [2 / 3, 1 / 3])
    joint = np.array([[2 / 3 * 3.85 / 6, 1 / 3 * 1.15 / 4], [2 / 3 * 2.15 / 6, 1 / 3 * 2.85 / 4]])
    np.testing.assert_allclose(fit.joint, joint)
    np.testing.assert_allclose(fit.positive_rate, joint[:, 1] / joint.sum(axis=1))
    assert fit.positive_rate[0] == pytest.approx(0.18302, abs=1e-5)
    assert fit.positive_rate[1] == pytest.approx(0.49854, abs=1e-5)
    assert fit.iterations == 2 and fit.converged


def test_one_em_step_with_a_latent_label_by_hand():
    # One item of block 0 unverified. The start is c0 normalised per block: P(y | block 0) =
    # [1.85, 1.15] / 3, so its expected counts are [0.61667, 0.38333].
    # theta ∝ [2, 1] + [0.61667, 0.38333] + [1, 1] = [3.61667, 2.38333].
    # node 0: [2.85 + 1 + 0.61667 - 1, 2.15 + 0.38333 - 1] = [3.46667, 1.53333];
    # node 1: [2.15, 2.85] as before.
    model = tree_model(SCORES, **TWO_LEAVES)
    fit = em_fit(model, [0, 1], [1, 1], max_iter=1)
    theta = np.array([3.61667, 2.38333]) / 6.0
    np.testing.assert_allclose(fit.theta, theta, rtol=1e-5)
    sib = np.array([3.46667 + 2.15, 1.53333 + 2.85])
    joint = theta * np.array([[3.46667, 1.53333], [2.15, 2.85]]) / sib
    np.testing.assert_allclose(fit.joint, joint, rtol=1e-5)
    assert fit.iterations == 1 and not fit.converged


def _reference_step(model, pos, neg, joint):
    """One EM step, top-down over an explicit tree (children lists), for the comparison."""
    n_nodes = model.n_nodes
    children = {v: [] for v in range(n_nodes + 1)}
    for v, p in enumerate(model.parent):
        children[int(p)].append(v)
    unobserved = model.block_sizes - pos - neg
    cond = joint / joint.sum(axis=1, keepdims=True)
    counts = np.column_stack([neg, pos]) + unobserved[:, None] * cond
    theta = counts.sum(axis=0) + model.alpha - 1
    theta = theta / theta.sum()

    def under(v):  # blocks below node v
        if v < model.n_blocks:
            return [v]
        return [k for c in children[v] for k in under(c)]

    out = np.zeros((model.n_blocks, 2))

    def descend(v, mass):
        if v < model.n_blocks:
            out[v] = mass
            return
        kids = children[v]
        tot = np.array([model.beta[c] + counts[under(c)].sum(axis=0) - len(under(c)) for c in kids])
        for c, share in zip(kids, tot / tot.sum(axis=0), strict=True):
            descend(c, mass * share)

    descend(n_nodes, theta)
    return out


def test_em_steps_match_a_top_down_implementation_on_a_deeper_tree():
    rng = np.random.default_rng(5)
    scores = rng.beta(0.5, 3.0, size=400)
    model = tree_model(scores, depth=3, n_bins=8)
    assert model.n_blocks >= 5 and model.depth.max() >= 2
    sizes = model.block_sizes
    pos = np.minimum(rng.integers(0, 3, model.n_blocks), sizes)
    neg = np.minimum(rng.integers(0, 5, model.n_blocks), sizes - pos)
    joint = model.initial_joint()
    fit = None
    for _ in range(5):
        expected = _reference_step(model, pos, neg, joint)
        fit = em_fit(model, pos, neg, joint=joint, max_iter=1)
        np.testing.assert_allclose(fit.joint, expected, rtol=1e-12)
        joint = fit.joint
    assert fit is not None


def test_em_reaches_a_fixed_point():
    rng = np.random.default_rng(6)
    model = tree_model(rng.beta(0.5, 3.0, size=400), depth=3, n_bins=8)
    pos = np.minimum(1, model.block_sizes)
    neg = np.minimum(2, model.block_sizes - pos)
    fit = em_fit(model, pos, neg, tol=1e-13, max_iter=100_000)
    assert fit.converged
    again = em_fit(model, pos, neg, joint=fit.joint, max_iter=1)
    np.testing.assert_allclose(again.joint, fit.joint, rtol=1e-6)
    # every block keeps both labels possible (the model never rules an unverified item out)
    assert np.all((fit.positive_rate > 0) & (fit.positive_rate < 1))


def test_tree_model_validates_its_shape():
    with pytest.raises(ValueError, match="b \\*\\* depth"):
        tree_model(np.linspace(0, 1, 100), depth=3, n_bins=12)
    with pytest.raises(ValueError, match="more verified"):
        em_fit(tree_model(SCORES, **TWO_LEAVES), [3, 0], [0, 0])
