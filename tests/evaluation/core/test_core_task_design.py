"""The design a task's settings configure (``evaluation.core.task_design``): what the worker
builds and the settings validator checks, with no Django."""

from __future__ import annotations

import pytest

from evaluation.core.closed_pool import AdaptivePoolDesign
from evaluation.core.designs import CoordinatedPoissonDesign
from evaluation.core.task_design import (
    CLOSED_POOL,
    OPEN_WORLD,
    DesignSettings,
    closed_pool_design,
    design_problem,
    open_world_design,
)


def test_an_open_tasks_design_asks_its_judgments_and_looks_up_to_its_annotators():
    settings = DesignSettings(kind=OPEN_WORLD, design="default", judgments_per_item=2)
    design = open_world_design(settings, annotators=3)
    assert isinstance(design, CoordinatedPoissonDesign)
    assert (design.judgments_per_item, design.max_judgments_per_item) == (2, 3)
    assert open_world_design(settings, annotators=40).max_judgments_per_item == 5
    assert open_world_design(settings, annotators=0).max_judgments_per_item == 2
    options = {"judgments_per_item": 1, "max_judgments_per_item": 4}
    overridden = open_world_design(
        DesignSettings(kind=OPEN_WORLD, design="default", options=options)
    )
    assert (overridden.judgments_per_item, overridden.max_judgments_per_item) == (1, 4)


def test_a_closed_pools_design_targets_its_measures_with_its_beta():
    settings = DesignSettings(
        kind=CLOSED_POOL,
        design="default",
        measures=("mcc", "fbeta"),
        f_beta=2.0,
        options={"round_size": 20},
    )
    design = closed_pool_design(settings)
    assert isinstance(design, AdaptivePoolDesign)
    assert design.targets == ("mcc", "fbeta") and design.round_size == 20
    with pytest.raises(ValueError, match="closed pools offer the designs adaptive, default"):
        closed_pool_design(DesignSettings(kind=CLOSED_POOL, design="passive"))


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (DesignSettings(kind=OPEN_WORLD, design="default"), None),
        (DesignSettings(kind=CLOSED_POOL, design="adaptive"), None),
        (DesignSettings(kind=OPEN_WORLD, design="published"), ("design", "simulation baseline")),
        (DesignSettings(kind=OPEN_WORLD, design="adaptive"), ("design", "unknown design")),
        (
            DesignSettings(kind=OPEN_WORLD, design="nonsense", options={"growth": 3}),
            ("design", "unknown design"),
        ),
        (
            DesignSettings(kind=OPEN_WORLD, design="default", options={"x": 1}),
            ("design_options", "x"),
        ),
        (
            DesignSettings(kind=OPEN_WORLD, design="default", target_half_width=0.5),
            ("design", "half-width"),
        ),
        (DesignSettings(kind=CLOSED_POOL, design="passive"), ("design", "closed pools offer")),
        (
            DesignSettings(kind=CLOSED_POOL, design="adaptive", options={"defensive_share": 2}),
            ("design_options", "defensive_share"),
        ),
        (DesignSettings(kind=CLOSED_POOL, design="adaptive", measures=()), ("design", "targets")),
    ],
)
def test_design_problem_names_the_setting_at_fault(settings, problem):
    found = design_problem(settings)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found[0] == problem[0] and problem[1] in found[1], found
