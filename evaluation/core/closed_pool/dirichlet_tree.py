"""Paper 000's Dirichlet-tree model of the oracle response, for a pool binned by one run's scores.

The pool is cut into ``n_bins`` blocks by the cumulative square-root frequency (CSF) rule on the
scores; the blocks become the leaves, left to right, of a complete tree of depth ``depth`` and
branching ``n_bins ** (1 / depth)`` (paper 000, §5.2: ``Ours-8`` is depth 8, branching 2;
``Ours-1`` is depth 1, branching 256). A label ``y`` is drawn from ``theta ~ Dirichlet(alpha)``
and an item's block from a Dirichlet-tree distribution ``psi_y`` over the leaves (§4.1). The
labels not yet verified are latent; EM gives a MAP ``theta``, the tree's branch probabilities and,
per block, ``P(y = 1 | block)`` (§4.2).

Where the paper is silent this module follows the authors' library, ngmarchant/activeeval
(``pools/_stratified.py``: ``csf_bin_edges``, ``HierarchicalStratifiedPool``;
``proposals/_oracle_estimators.py``: ``HierarchicalDeterministicOE``, ``_initialize_internal_tree``)
with the settings of ngmarchant/activeeval-experiments (``run_f1-score.py``):

* the score histogram behind CSF uses numpy's ``"fd"`` bins, or ``4 * n_bins`` bins when that
  gives no more bins than strata (or, an addition, more than ``2 ** 22`` bins: scores piled on a
  few values have a tiny IQR, and numpy would try to allocate billions of bins); an edge is the
  left edge of the first histogram bin whose cumulative ``sqrt(count)`` reaches the next
  multiple of ``total / n_bins``, so a pool may get fewer than ``n_bins`` blocks;
* empty leaves are pruned, then every internal node with a single child is removed (its child
  moves up a level); depths are counted in the tree that remains;
* prior pseudo-counts per block are ``c0[k, y] = s(y|k) * prior_strength / K + 1`` with
  ``prior_strength = K`` (the number of non-empty blocks), so ``alpha_y = 1 + sum_k s(y|k)``
  and, for a non-root node ``v`` under a parent with ``m`` children,
  ``beta_yv = depth(v) ** m + sum_{k under v} c0[k, y]`` (``depth(v) ** 2`` in a binary tree);
* the M-step takes ``theta`` at its MAP (``counts + alpha - 1``) but each node's branch
  probabilities as ``beta_yv + counts_yv - leaves(v)`` normalised over siblings, which is the
  posterior mean under the paper's ``beta_yv = depth(v)^2 + sum_k s(y|k) delta_v(k)``;
* EM runs until the relative change of the log posterior is at most ``tol`` (``1e-6``) or for
  ``max_iter`` (1000) steps; the previous fit's joint distribution and log posterior seed the
  next fit (so a fit after new labels may stop after one step).

References
----------
N. G. Marchant and B. I. P. Rubinstein, "Needle in a haystack: label-efficient evaluation under
extreme class imbalance", KDD 2021, §4 and §5.2.
T. Dalenius and J. L. Hodges, "Minimum variance stratification", JASA 54(285), 1959.
T. Minka, "The Dirichlet-tree distribution", technical report, 1999.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse

__all__ = ["EMFit", "TreeModel", "csf_bin_edges", "em_fit", "tree_model"]

_MAX_HIST_BINS = 1 << 22


def csf_bin_edges(
    values: npt.ArrayLike, n_bins: int, *, hist_bins: int | str | npt.ArrayLike = "fd"
) -> npt.NDArray[np.float64]:
    """Bin edges by the cumulative square-root frequency rule (first edge ``-inf``, last ``inf``).

    A faithful copy of activeeval's ``csf_bin_edges``: at most ``n_bins`` bins, fewer when a
    histogram bin holds more than one stratum's share of ``sqrt(count)``.

    Raises
    ------
    ValueError
        If the histogram has no more bins than ``n_bins`` or ``n_bins >= len(values)``.
    """
    values = np.asarray(values, dtype=float)
    if not 0 < n_bins < values.size:
        raise ValueError("n_bins must be a positive integer smaller than the pool")
    counts, hist_edges = np.histogram(values, bins=hist_bins)
    if n_bins >= counts.size:
        raise ValueError(
            f"score histogram too coarse: {counts.size} bins for {n_bins} strata; "
            "give hist_bins explicitly"
        )
    csf = np.cumsum(np.sqrt(counts))
    thresholds = np.arange(n_bins) * (csf[-1] / n_bins)
    # activeeval walks the histogram bins and places edge j at the first bin, after edge j - 1's,
    # whose cumulative sqrt(count) reaches threshold j: idx_j = max(first_j, idx_{j-1} + 1),
    # i.e. j + running max of (first_i - i); it stops once n_bins edges are placed and adds
    # the histogram's last edge if a bin is left.
    first = np.searchsorted(csf, thresholds, side="left")
    steps = np.arange(n_bins)
    idx = steps + np.maximum.accumulate(first - steps)
    idx = idx[idx < counts.size]
    edges = hist_edges[idx].tolist()
    if idx.size == n_bins and idx[-1] + 1 < counts.size:
        edges.append(hist_edges[-1])
    edges[0], edges[-1] = -math.inf, math.inf
    return np.asarray(edges)


def _fd_bin_count(values: npt.NDArray[np.float64]) -> int:
    """How many bins numpy's ``"fd"`` rule gives ``values`` (width ``2 IQR n^(-1/3)``)."""
    q75, q25 = np.percentile(values, [75, 25])
    width = 2.0 * (q75 - q25) * values.size ** (-1.0 / 3.0)
    span = float(values.max() - values.min())
    return 1 if width == 0 else math.ceil(span / width)


@dataclass(frozen=True, eq=False)
class TreeModel:
    """A pool's blocks, the pruned tree over them and the Dirichlet-tree prior.

    Attributes
    ----------
    blocks : numpy.ndarray
        Block (leaf) of every item, ``0 .. n_blocks - 1`` in increasing score order.
    block_sizes : numpy.ndarray
        Items per block.
    parent : numpy.ndarray
        Parent of each non-root node (nodes ``0 .. n_nodes - 1``; ``n_nodes`` is the root).
    depth : numpy.ndarray
        Depth of each non-root node in the pruned tree (the root's children have depth 1).
    paths : numpy.ndarray
        ``(n_blocks, max_depth)`` non-root nodes from the root's child down to the leaf of each
        block, padded with ``n_nodes`` (a slot that holds log-probability 0).
    leaves_under : numpy.ndarray
        Blocks under each non-root node.
    alpha : numpy.ndarray
        ``(2,)`` Dirichlet prior of ``theta`` (index 0 negative, 1 positive).
    beta : numpy.ndarray
        ``(n_nodes, 2)`` branch pseudo-counts as activeeval stores them (leaf smoothing included).
    prior_counts : numpy.ndarray
        ``(n_blocks, 2)`` per-block pseudo-counts ``c0``.
    edges : numpy.ndarray
        The CSF bin edges on the binned values.
    incidence, incidence_t : scipy.sparse.csr_matrix
        ``(n_nodes, n_blocks)`` and its transpose: 1 where the block lies under the node (node
        counts are ``incidence @ block counts``, a block's log-probability
        ``incidence_t @ log branch``).
    siblings : scipy.sparse.csr_matrix
        ``(n_nodes, n_nodes)``: 1 where two nodes share a parent (a node is its own sibling).
    """

    blocks: npt.NDArray[np.int64]
    block_sizes: npt.NDArray[np.int64]
    parent: npt.NDArray[np.int64]
    depth: npt.NDArray[np.int64]
    paths: npt.NDArray[np.int64]
    leaves_under: npt.NDArray[np.float64]
    alpha: npt.NDArray[np.float64]
    beta: npt.NDArray[np.float64]
    prior_counts: npt.NDArray[np.float64]
    edges: npt.NDArray[np.float64]
    incidence: sparse.csr_matrix
    incidence_t: sparse.csr_matrix
    siblings: sparse.csr_matrix

    @property
    def n_blocks(self) -> int:
        return int(self.block_sizes.size)

    @property
    def n_nodes(self) -> int:
        return int(self.parent.size)

    def initial_joint(self) -> npt.NDArray[np.float64]:
        """activeeval's starting point: ``P(y | block)`` from ``c0`` times the block's share."""
        c0 = self.prior_counts
        share = self.block_sizes / self.block_sizes.sum()
        joint: npt.NDArray[np.float64] = c0 / c0.sum(axis=1, keepdims=True) * share[:, None]
        return joint


def _pruned_tree(  # noqa: C901 (one walk over the tree's levels)
    slots_used: npt.NDArray[np.bool_], depth: int, branching: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Pruned, collapsed tree over the occupied leaf slots of a complete tree.

    Returns the parent and depth of every kept non-root node (leaves first, one per occupied
    slot in slot order), and each leaf's path of non-root nodes.
    """
    occupied = np.flatnonzero(slots_used)
    # Ancestors of each occupied slot at levels 0 (root) .. depth (the slot itself), as
    # (level, index-in-level) pairs encoded as one integer per level.
    levels = np.arange(depth + 1)
    anc = occupied[:, None] // branching ** (depth - levels)[None, :]  # (n_occ, depth + 1)
    # A node is kept (non-empty) iff it is an ancestor of an occupied slot. Count its kept
    # children; internal nodes with exactly one kept child are removed.
    chains: list[list[tuple[int, int]]] = []
    child_count: dict[tuple[int, int], int] = {}
    kept: set[tuple[int, int]] = set()
    for row in anc:
        for level, index in zip(levels, row, strict=True):
            kept.add((int(level), int(index)))
    for lv, ix in kept:
        if lv > 0:
            key = (lv - 1, ix // branching)
            child_count[key] = child_count.get(key, 0) + 1
    for row in anc:
        chain = [
            (int(level), int(index))
            for level, index in zip(levels, row, strict=True)
            if level == depth or child_count.get((int(level), int(index)), 0) != 1
        ]
        chains.append(chain[1:])  # drop the (final) root: all chains start at the same node
    # Number the kept non-root nodes: leaves first (in slot order), then internal nodes.
    ids: dict[tuple[int, int], int] = {}
    for chain in chains:
        if chain:
            ids[chain[-1]] = len(ids)
    for chain in chains:
        for node in chain[:-1]:
            if node not in ids:
                ids[node] = len(ids)
    n_nodes = len(ids)
    parent = np.full(n_nodes, n_nodes, dtype=np.int64)  # n_nodes: the root
    node_depth = np.zeros(n_nodes, dtype=np.int64)
    max_depth = max((len(c) for c in chains), default=0)
    paths = np.full((len(chains), max(max_depth, 1)), n_nodes, dtype=np.int64)
    for k, chain in enumerate(chains):
        for d, node in enumerate(chain):
            v = ids[node]
            paths[k, d] = v
            node_depth[v] = d + 1
            parent[v] = ids[chain[d - 1]] if d > 0 else n_nodes
    return parent, node_depth, paths


def tree_model(
    scores: npt.ArrayLike,
    *,
    depth: int = 8,
    n_bins: int = 256,
    bin_values: npt.ArrayLike | None = None,
    edges: npt.ArrayLike | None = None,
    tree_smoothing: float = 1.0,
) -> TreeModel:
    """Bin a pool by ``bin_values`` (default ``scores``), build the tree, set the prior.

    Parameters
    ----------
    scores : array_like
        The run's score per item in [0, 1], the prior ``s(1 | x)``.
    depth, n_bins : int, keyword-only
        Tree depth and number of CSF strata; ``n_bins`` must be a power ``b ** depth``, ``b >= 2``.
    bin_values : array_like, optional
        Values binned by CSF (activeeval bins an SVM's margin, not its probability).
    edges : array_like, optional
        Bin edges to use instead of CSF's (at most ``n_bins + 1``; bin ``k`` is
        ``[edges[k], edges[k + 1])``, values outside the edges are an error).
    tree_smoothing : float, keyword-only
        activeeval's ``tree_smoothing_constant`` (1): multiplies ``depth(v) ** m``.
    """
    scores = np.asarray(scores, dtype=float)
    values = scores if bin_values is None else np.asarray(bin_values, dtype=float)
    branching = round(n_bins ** (1.0 / depth)) if depth > 0 else 0
    if tree_smoothing <= 0:
        raise ValueError("tree_smoothing must be positive")
    if depth < 1 or branching < 2 or branching**depth != n_bins:
        raise ValueError(f"n_bins={n_bins} is not b ** depth with b >= 2 and depth={depth} >= 1")
    if edges is not None:
        edges = np.asarray(edges, dtype=float)
        if edges.size > n_bins + 1 or values.min() < edges[0] or values.max() >= edges[-1]:
            raise ValueError("edges: at most n_bins + 1 of them, covering every value")
    else:
        try:
            if _fd_bin_count(values) > _MAX_HIST_BINS:
                raise ValueError("numpy would allocate too many histogram bins")
            edges = csf_bin_edges(values, n_bins, hist_bins="fd")
        except ValueError:  # activeeval-experiments' fallback (run_f1-score.py)
            edges = csf_bin_edges(values, n_bins, hist_bins=4 * n_bins)
    slots = np.digitize(values, edges) - 1
    slot_sizes = np.bincount(slots, minlength=n_bins)
    used = slot_sizes > 0
    parent, node_depth, paths = _pruned_tree(used, depth, branching)
    blocks = np.cumsum(used)[slots] - 1
    sizes = slot_sizes[used]
    n_blocks = sizes.size
    mean_pos = np.bincount(blocks, weights=scores, minlength=n_blocks) / sizes
    s = np.column_stack([1.0 - mean_pos, mean_pos])
    # c0 = s * prior_strength / n_blocks + smoothing, with prior_strength = n_blocks, smoothing 1
    prior_counts = s + 1.0
    alpha = (prior_counts - 1.0).sum(axis=0) + 1.0
    n_nodes = parent.size
    dense = np.zeros((n_nodes + 1, n_blocks))
    dense[paths, np.arange(n_blocks)[:, None]] = 1.0
    dense = dense[:n_nodes]  # drop the padding slot
    leaves_under = dense.sum(axis=1)
    c0_under = dense @ prior_counts
    siblings = (parent[:, None] == parent[None, :]).astype(float)
    n_children = np.bincount(parent, minlength=n_nodes + 1)
    const = tree_smoothing * node_depth.astype(float) ** n_children[parent]
    beta = const[:, None] + c0_under
    return TreeModel(
        blocks=blocks,
        block_sizes=sizes,
        parent=parent,
        depth=node_depth,
        paths=paths,
        leaves_under=leaves_under,
        alpha=alpha,
        beta=beta,
        prior_counts=prior_counts,
        edges=edges,
        incidence=sparse.csr_matrix(dense),
        incidence_t=sparse.csr_matrix(dense.T),
        siblings=sparse.csr_matrix(siblings),
    )


@dataclass(frozen=True, eq=False)
class EMFit:
    """One EM fit: ``positive_rate[k] = P(y = 1 | block k)``, the joint it came from, and more."""

    positive_rate: npt.NDArray[np.float64]
    joint: npt.NDArray[np.float64]
    theta: npt.NDArray[np.float64]
    log_posterior: float
    iterations: int
    converged: bool


def _em_step(
    model: TreeModel,
    obs: npt.NDArray[np.float64],
    obs_global: npt.NDArray[np.float64],
    unobserved: npt.NDArray[np.float64],
    joint: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
    cond = joint / joint.sum(axis=1, keepdims=True)
    unobs = unobserved[:, None] * cond
    tot_global = obs_global + unobs.sum(axis=0) + model.alpha - 1.0
    theta = tot_global / tot_global.sum()
    log_post = float(np.sum(tot_global * np.log(theta, where=tot_global > 0, out=np.zeros(2))))
    # tot >= depth(v) ** m > 0 (beta holds the leaves' smoothing), so every log is finite
    tot = model.beta + model.incidence @ (obs + unobs) - model.leaves_under[:, None]
    sibling_sum = model.siblings @ tot
    log_branch = np.log(tot / sibling_sum)
    log_post += float(np.sum(tot * log_branch))
    joint = theta[None, :] * np.exp(model.incidence_t @ log_branch)
    return joint, theta, log_post


def em_fit(
    model: TreeModel,
    positives: npt.ArrayLike,
    negatives: npt.ArrayLike,
    *,
    joint: npt.ArrayLike | None = None,
    log_posterior: float | None = None,
    tol: float = 1e-6,
    max_iter: int = 1000,
) -> EMFit:
    """EM for the Dirichlet-tree model given verified positives and negatives per block.

    Parameters
    ----------
    model : TreeModel
        From :func:`tree_model`.
    positives, negatives : array_like
        Verified items per block by label (each item counted once: a deterministic oracle).
    joint, log_posterior : optional, keyword-only
        The previous fit's ``joint`` and ``log_posterior`` (activeeval keeps both between
        updates); by default :meth:`TreeModel.initial_joint` and none.
    tol, max_iter : keyword-only
        Stop once ``|Δ log posterior| / max(previous, current) <= tol``, or after ``max_iter``.

    Returns
    -------
    EMFit
    """
    pos = np.asarray(positives, dtype=float)
    neg = np.asarray(negatives, dtype=float)
    obs = np.column_stack([neg, pos])
    obs_global = obs.sum(axis=0)
    unobserved = model.block_sizes - pos - neg
    if np.any(unobserved < 0):
        raise ValueError("more verified items than a block holds")
    joint = model.initial_joint() if joint is None else np.asarray(joint, dtype=float)
    if max_iter < 1:
        raise ValueError("max_iter must be at least 1")
    previous, change, iteration = log_posterior, math.inf, 0
    theta = np.full(2, 0.5)
    current = math.nan
    while change > tol and iteration < max_iter:
        joint, theta, current = _em_step(model, obs, obs_global, unobserved, joint)
        if previous is not None:
            scale = max(previous, current)
            change = abs((current - previous) / scale) if scale != 0 else 0.0
        previous = current
        iteration += 1
    rate = joint[:, 1] / joint.sum(axis=1)
    return EMFit(rate, joint, theta, float(current), iteration, bool(change <= tol))
