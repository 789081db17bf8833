"""Sampling designs behind one interface: ``plan(state, run, rng=...)`` and ``estimate(state)``.

``published`` reproduces paper 003 (the baseline); ``default`` is the product's design.
"""

from __future__ import annotations

from .coordinated import CoordinatedPoissonDesign
from .published import PublishedDesign

__all__ = ["DESIGNS", "CoordinatedPoissonDesign", "PublishedDesign", "make_design"]

DESIGNS = {"default": CoordinatedPoissonDesign, "published": PublishedDesign}


def make_design(name: str, **options):
    """Build the design called ``name`` (``"default"`` or ``"published"``) with its options."""
    try:
        cls = DESIGNS[name]
    except KeyError:
        raise ValueError(f"unknown design {name!r}; choose one of {sorted(DESIGNS)}") from None
    return cls(**options)
