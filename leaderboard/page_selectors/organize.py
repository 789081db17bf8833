"""Reads behind the organizer page: label budget spent and left, and what each run cost."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Sum

from ..models import Item, Run, Task


@dataclass(frozen=True)
class RunCost:
    run: Run
    share: float | None  # of the items requested so far

    @property
    def share_text(self) -> str:
        return "—" if self.share is None else f"{self.share * 100:.1f}%"


@dataclass(frozen=True)
class BudgetSummary:
    budget: int | None
    requested: int  # items sent to annotators for the task's runs (what the budget pays for)
    verified: int
    labelled_items: int  # distinct items of the task with a label (runs share them)
    runs: list[RunCost]

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else max(0, self.budget - self.requested)

    @property
    def spent_percent(self) -> str:
        if not self.budget:
            return ""
        return f"{min(1.0, self.requested / self.budget) * 100:.1f}%"


def budget_summary(task: Task) -> BudgetSummary:
    """Items requested per run (an item a run re-uses from earlier labels costs nothing)."""
    runs = list(Run.objects.filter(task=task).select_related("team").order_by("-n_requested",
                                                                               "id"))
    totals = Run.objects.filter(task=task).aggregate(requested=Sum("n_requested"),
                                                     verified=Sum("n_verified"))
    requested = totals["requested"] or 0
    return BudgetSummary(
        budget=task.label_budget, requested=requested, verified=totals["verified"] or 0,
        labelled_items=Item.objects.filter(task=task, label__isnull=False).count(),
        runs=[RunCost(run=r, share=(r.n_requested / requested) if requested else None)
              for r in runs])
