"""Sampling designs behind one interface: ``plan(state, run, rng=...)`` and ``estimate(state)``.

``published`` reproduces paper 003 (the baseline, for simulations); ``default`` is the product's
design and the only one that runs tasks in the service (:class:`.interface.ServiceDesign`).
"""

from __future__ import annotations

from typing import Any

from .coordinated import CoordinatedPoissonDesign
from .interface import ServiceDesign
from .published import PublishedDesign

__all__ = [
    "DESIGNS",
    "SERVICE_DESIGNS",
    "CoordinatedPoissonDesign",
    "PublishedDesign",
    "ServiceDesign",
    "make_design",
    "make_service_design",
]

DESIGNS: dict[str, type[CoordinatedPoissonDesign] | type[PublishedDesign]] = {
    "default": CoordinatedPoissonDesign,
    "published": PublishedDesign,
}
# Designs that can plan, replay and estimate a task in the service (``ServiceDesign``).
SERVICE_DESIGNS = {"default": CoordinatedPoissonDesign}


def make_design(name: str, **options: Any) -> CoordinatedPoissonDesign | PublishedDesign:
    """Build the design called ``name`` (``"default"`` or ``"published"``) with its options."""
    try:
        cls = DESIGNS[name]
    except KeyError:
        raise ValueError(f"unknown design {name!r}; choose one of {sorted(DESIGNS)}") from None
    return cls(**options)


def make_service_design(name: str, **options: Any) -> ServiceDesign:
    """Build the design called ``name`` for a task; raises ``ValueError`` for a design that
    cannot run one (unknown, or a simulation baseline that keeps no replayable record)."""
    if name not in SERVICE_DESIGNS:
        if name in DESIGNS:
            raise ValueError(
                f"design {name!r} is a simulation baseline (python -m evaluation.simulate "
                f"--design {name}) and cannot run a task: it keeps no record the service can "
                f"replay; choose one of {', '.join(sorted(SERVICE_DESIGNS))}"
            )
        raise ValueError(
            f"unknown design {name!r}; choose one of {', '.join(sorted(SERVICE_DESIGNS))}"
        )
    design = SERVICE_DESIGNS[name](**options)
    if not isinstance(design, ServiceDesign):  # a registry entry that lost part of the interface
        raise TypeError(f"design {name!r} does not implement ServiceDesign")
    return design
