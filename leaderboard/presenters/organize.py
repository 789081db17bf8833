"""Reads behind the organizer page: the budget spent and left, and what each run drew."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Item, Run, Task
from ..selectors import label_spend


@dataclass(frozen=True)
class RunCost:
    run: Run
    share: float | None  # of the items the task's runs drew

    @property
    def share_text(self) -> str:
        return "—" if self.share is None else f"{self.share * 100:.1f}%"


@dataclass(frozen=True)
class BudgetSummary:
    budget: int | None
    requested: int  # judgments asked of annotators, gold answers included (what the budget pays)
    verified: int  # of them, judgments in
    remaining: int | None
    labelled_items: int  # distinct items of the task judged at least once (runs share them)
    runs: list[RunCost]

    @property
    def spent_percent(self) -> str:
        if not self.budget:
            return ""
        return f"{min(1.0, self.requested / self.budget) * 100:.1f}%"


def budget_summary(task: Task) -> BudgetSummary:
    """The budget in judgments (:func:`~leaderboard.selectors.label_spend`), and the items
    each run's own rounds drew (an item a run re-uses from earlier answers costs it nothing)."""
    spend = label_spend(task)
    runs = list(Run.objects.filter(task=task).select_related("team").order_by("-n_requested", "id"))
    drawn = sum(r.n_requested for r in runs)
    return BudgetSummary(
        budget=spend.budget,
        requested=spend.requested,
        verified=spend.verified,
        remaining=spend.remaining,
        labelled_items=Item.objects.filter(task=task, verified_at__isnull=False).count(),
        runs=[RunCost(run=r, share=(r.n_requested / drawn) if drawn else None) for r in runs],
    )
