"""The design a task's settings configure: one pure factory for the worker and the validator.

A task names its design (``default``, or a closed pool's ``adaptive``) and may override the
design's options; its precision target, confidence, label budget, judgments per item and (closed
pools) measures and beta fill in the rest. :func:`open_world_design` and
:func:`closed_pool_design` build the engine design from those settings; :func:`design_problem`
says which setting the engine refuses and why, without raising.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from .closed_pool import PoolDesign, make_pool_design
from .designs import SERVICE_DESIGNS, ServiceDesign, make_service_design
from .measures import OPEN_MEASURES

__all__ = [
    "CLOSED_POOL",
    "MAX_JUDGMENTS_PER_ITEM",
    "OPEN_WORLD",
    "POOL_DESIGN_NAMES",
    "DesignSettings",
    "closed_pool_design",
    "design_names",
    "design_problem",
    "open_world_design",
]

# The two kinds of task (the ``kind`` setting's values).
OPEN_WORLD = "open"
CLOSED_POOL = "closed_pool"
# Most judgments the planner may ask of one item (each by a different annotator).
MAX_JUDGMENTS_PER_ITEM = 5
# The closed-pool design a task's ``design`` names ("default": the adaptive one, the only one
# whose sampling record the pipeline stores).
POOL_DESIGN_NAMES = {"default": "adaptive", "adaptive": "adaptive"}


@dataclass(frozen=True)
class DesignSettings:
    """The settings of a task that configure its design.

    Attributes
    ----------
    kind : str
        ``"open"`` (open world) or ``"closed_pool"``.
    design : str
        The design's name (``"default"``; closed pools also ``"adaptive"``).
    options : Mapping[str, Any]
        The design's own options, overriding what the other settings give it.
    target_half_width, confidence : float
        What every run's intervals must reach.
    label_budget : int or None
        Most judgments the task may ask for (open world; None: no limit).
    judgments_per_item : int
        Judgments each new item gets at first (open world).
    measures : tuple of str
        The measures a closed pool targets.
    f_beta : float
        The beta of the measure ``fbeta`` (closed pools).
    """

    kind: str
    design: str
    options: Mapping[str, Any] = field(default_factory=dict)
    target_half_width: float = 0.05
    confidence: float = 0.95
    label_budget: int | None = None
    judgments_per_item: int = 1
    measures: tuple[str, ...] = OPEN_MEASURES
    f_beta: float = 1.0


def open_world_design(
    settings: DesignSettings, *, annotators: int = MAX_JUDGMENTS_PER_ITEM
) -> ServiceDesign:
    """The engine design of an open-world task, for ``annotators`` annotators at work on it.

    The ``default`` design asks ``judgments_per_item`` judgments of each new item and may ask
    further looks up to one judgment per annotator (at most :data:`MAX_JUDGMENTS_PER_ITEM`);
    the design's options override both.

    Parameters
    ----------
    settings : DesignSettings
        The task's settings.
    annotators : int, optional
        Annotators at work on the task (answered and not paused).

    Returns
    -------
    ServiceDesign
        The design, ready to plan and estimate.

    Raises
    ------
    ValueError, TypeError
        For a design or options the engine refuses.

    References
    ----------
    docs/STATISTICS.md, "Two designs behind one interface".
    """
    options = dict(settings.options)
    if settings.design == "default":
        first = options.setdefault("judgments_per_item", settings.judgments_per_item)
        options.setdefault(
            "max_judgments_per_item", max(first, min(MAX_JUDGMENTS_PER_ITEM, annotators))
        )
    return make_service_design(
        settings.design,
        target_half_width=settings.target_half_width,
        confidence=settings.confidence,
        budget=settings.label_budget,
        **options,
    )


def closed_pool_design(settings: DesignSettings) -> PoolDesign:
    """The engine design of a closed pool: its targets are the task's measures.

    Parameters
    ----------
    settings : DesignSettings
        The task's settings.

    Returns
    -------
    PoolDesign
        The design, ready to plan and estimate.

    Raises
    ------
    ValueError, TypeError
        For a design or options the engine refuses.

    References
    ----------
    docs/STATISTICS.md, "Closed pools in the product".
    """
    try:
        name = POOL_DESIGN_NAMES[settings.design]
    except KeyError:
        raise ValueError(
            f"closed pools offer the designs {', '.join(sorted(POOL_DESIGN_NAMES))}, "
            f"not {settings.design!r}"
        ) from None
    options = {
        "targets": tuple(settings.measures),
        "beta": float(settings.f_beta),
        **settings.options,
    }
    return make_pool_design(
        name,
        confidence=settings.confidence,
        target_half_width=settings.target_half_width,
        **options,
    )


def design_names(kind: str) -> tuple[str, ...]:
    """The designs a task of ``kind`` may name (``"open"`` or ``"closed_pool"``), sorted."""
    return tuple(sorted(_designs_of(kind).names))


def design_problem(settings: DesignSettings) -> tuple[str, str] | None:
    """Which setting the engine refuses, and why: ``(setting, message)``, or None if the design
    can be built.

    The setting is ``design_options`` when the task has options (they may be at fault),
    otherwise ``design``; an open-world design the engine does not run a task with is the
    ``design``'s fault whatever the options.

    Parameters
    ----------
    settings : DesignSettings
        The task's settings.

    Returns
    -------
    tuple of (str, str) or None
        The setting at fault and the engine's message.
    """
    return _designs_of(settings.kind).problem(settings)


def _options_or_design(settings: DesignSettings) -> str:
    return "design_options" if settings.options else "design"


def _build_problem(
    build: Callable[[DesignSettings], object], settings: DesignSettings
) -> tuple[str, str] | None:
    try:
        build(settings)
    except (ValueError, TypeError) as exc:
        return _options_or_design(settings), str(exc)
    return None


def _open_world_problem(settings: DesignSettings) -> tuple[str, str] | None:
    if settings.design in SERVICE_DESIGNS:
        return _build_problem(open_world_design, settings)
    try:
        make_service_design(settings.design)  # says why it cannot run a task
    except ValueError as exc:
        return "design", str(exc)
    except TypeError as exc:
        return _options_or_design(settings), str(exc)
    return None


def _closed_pool_problem(settings: DesignSettings) -> tuple[str, str] | None:
    return _build_problem(closed_pool_design, settings)


@dataclass(frozen=True)
class _KindDesigns:
    """What a kind of task may name as its design, and what the engine says of the settings."""

    names: Collection[str]
    problem: Callable[[DesignSettings], tuple[str, str] | None]


# Per kind of task (the ``kind`` setting's values).
_KIND_DESIGNS = {
    OPEN_WORLD: _KindDesigns(SERVICE_DESIGNS, _open_world_problem),
    CLOSED_POOL: _KindDesigns(POOL_DESIGN_NAMES, _closed_pool_problem),
}


def _designs_of(kind: str) -> _KindDesigns:
    # A kind the model does not offer is checked as an open world's, as it always was: the
    # model's own validators say what is wrong with the kind.
    return _KIND_DESIGNS.get(kind, _KIND_DESIGNS[OPEN_WORLD])
