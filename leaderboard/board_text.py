"""The board's plain words, written once for the pages, the API and the exports: where a run may
rank, what its state says was met, and the reference sample its recall rests on.

Everything is read from a stored snapshot (its rows, its details, its reference counts), never
computed anew. The CLI, standard library only, prints the API's texts and builds a rank range
from the numbers the same way when a server gave none (``leaderboard_cli.output.rank_text``;
``tests/cli/test_cli_output.py`` holds both to one notation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evaluation.core.measures import OPEN_MEASURES

from .kinds import kind_for
from .models import LeaderboardSnapshot, Run, Task
from .selectors import REFERENCE_MIN_DOCUMENTS, REFERENCE_MIN_ITEMS, ReferenceSize

__all__ = [
    "EN_DASH",
    "RECALL_MEASURES",
    "ReferenceSupport",
    "RunWords",
    "SnapshotTerms",
    "rank_of",
    "rank_text",
    "snapshot_measures",
]

EN_DASH = "\u2013"
# An open task's measures that rest on its reference sample (F1 through recall).
RECALL_MEASURES = frozenset({"recall", "f1"})


def rank_text(best: int, worst: int) -> str:
    """Where a run may rank, in the one notation of the board, the run pages, the API, the
    exports and the CLI: ``"3"`` when its interval is one rank, else ``"2\u20135"`` (an en dash)."""
    return str(best) if worst <= best else f"{best}{EN_DASH}{worst}"


def rank_of(data: Any) -> tuple[int, int] | None:
    """A stored rank interval ``{"best", "worst"}`` as ``(best, worst)``; ``None`` if there is
    none (a run without a value, a snapshot from before ranks)."""
    if not isinstance(data, dict):
        return None
    try:
        best, worst = int(data["best"]), int(data["worst"])
    except (KeyError, TypeError, ValueError):
        return None
    return best, max(best, worst)


def snapshot_measures(details: Any) -> tuple[str, ...]:
    """The measures a snapshot's rows carry: a closed pool's (its details), else the three."""
    pool = details.get("closed_pool") if isinstance(details, dict) else None
    if isinstance(pool, dict) and isinstance(pool.get("measures"), list):
        return tuple(str(m) for m in pool["measures"])
    return OPEN_MEASURES


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class ReferenceSupport:
    """The reference sample an open task's recall rests on in one snapshot, and whether it is
    large enough to present recall on (:class:`leaderboard.selectors.ReferenceSize`'s rule)."""

    items: int
    documents: int | None  # None: stored before documents were counted
    min_items: ClassVar[int] = REFERENCE_MIN_ITEMS
    min_documents: ClassVar[int] = REFERENCE_MIN_DOCUMENTS

    @property
    def enough(self) -> bool:
        # Documents unknown: judged on the items alone (each at most a document of its own).
        documents = self.items if self.documents is None else self.documents
        return ReferenceSize(version=0, items=self.items, documents=documents).enough

    @property
    def size_text(self) -> str:
        """``"6 reference items in 3 documents"``."""
        text = _count(self.items, "reference item")
        if self.documents is not None and self.items:
            text += f" in {_count(self.documents, 'document')}"
        return text

    @property
    def _short(self) -> tuple[bool, bool]:
        """Whether the items, and the documents (when counted), are under the minimum."""
        documents = self.documents is not None and self.documents < self.min_documents
        return self.items < self.min_items, documents

    @property
    def needed_text(self) -> str:
        """What is missing: ``"30 needed"``, ``"10 documents needed"`` or both; else empty."""
        items, documents = self._short
        if items and documents:
            return f"{self.min_items} items in {self.min_documents} documents needed"
        if items:
            return f"{self.min_items} needed"
        return f"{self.min_documents} documents needed" if documents else ""

    @property
    def text(self) -> str:
        """What recall rests on, and what is missing when that is too little."""
        if not self.items:
            return "no reference sample yet: recall cannot be estimated"
        needed = self.needed_text
        return f"recall rests on {self.size_text}" + (f" ({needed})" if needed else "")

    @property
    def note(self) -> str:
        """:attr:`text` in brief, beside a value or a state: ``"recall not settled: 6 of 30
        reference items, 3 of 10 documents"``; empty when the sample is enough."""
        if self.enough:
            return ""
        if not self.items:
            return "recall not settled: no reference sample yet"
        items, documents = self._short
        parts = [f"{self.items:,} of {self.min_items} reference items"] if items else []
        if documents:
            parts.append(f"{self.documents:,} of {self.min_documents} documents")
        return "recall not settled: " + ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "documents": self.documents,
            "min_items": self.min_items,
            "min_documents": self.min_documents,
            "enough": self.enough,
            "text": self.text,
        }


# What a run in a state that claims nothing is doing, in plain words.
STATE_TEXTS: dict[str, str] = {
    Run.State.RECEIVED: "received: the file waits to be checked",
    Run.State.VALIDATING: "checking the file",
    Run.State.REJECTED: "rejected: the file has problems, by line on the run's page",
    Run.State.QUEUED: "accepted: waiting for its items to be chosen",
    Run.State.PLANNING: "choosing items for the annotators to verify",
    Run.State.AWAITING_LABELS: "waiting for the annotators",
    Run.State.ESTIMATING: "computing its final scores",
    Run.State.FAILED: "failed on the platform's side; the submission is refunded",
}
# Why a run ended partial (``Run.outcome``); an unknown one (held from participants) says less.
PARTIAL_CAUSES = {
    "budget_exhausted": "budget spent",
    "annotator_limited": "annotators' error rates still uncertain",
    "gave_up": "planning stopped after its last round",
}


@dataclass(frozen=True)
class SnapshotTerms:
    """What a snapshot's words rest on: the target its runs' states were decided on, its
    measures, and (open tasks) the reference sample recall rests on."""

    target: float
    measures: tuple[str, ...] = OPEN_MEASURES
    closed_pool: bool = False
    reference: ReferenceSupport | None = None  # None: a closed pool, or no snapshot yet

    @classmethod
    def of(
        cls, task: Task, snapshot: LeaderboardSnapshot | None, details: Any = None
    ) -> SnapshotTerms:
        """``snapshot``'s terms (``details``: its details, when they were loaded apart), or
        ``task``'s when there is no snapshot; a snapshot from before the target was stored is
        read against the task's current target."""
        if snapshot is None:
            kind = kind_for(task)
            return cls(
                target=task.target_half_width,
                measures=kind.board_measures(task),
                closed_pool=kind.has_pool,
            )
        details = snapshot.details if details is None else details
        details = details if isinstance(details, dict) else {}
        target = details.get("target_half_width")
        pool = isinstance(details.get("closed_pool"), dict)
        return cls(
            target=float(target) if isinstance(target, int | float) else task.target_half_width,
            measures=snapshot_measures(details),
            closed_pool=pool,
            reference=None
            if pool
            else ReferenceSupport(snapshot.n_reference, snapshot.n_reference_documents),
        )

    @property
    def target_text(self) -> str:
        return f"±{self.target:g}"

    def reference_short(self, metric: str) -> bool:
        """Whether ``metric`` rests on a reference sample too small to present it on."""
        return (
            metric in RECALL_MEASURES and self.reference is not None and not self.reference.enough
        )

    def reference_note(self, metric: str) -> str:
        """Why ``metric``'s value is not to be taken as settled, in brief; or empty."""
        return self.reference.note if self.reference and self.reference_short(metric) else ""

    def half_width(self, row: Mapping[str, Any]) -> float | None:
        """What the target is held against: precision's half-width (a closed pool's widest
        measure's), from a snapshot row."""
        widths = []
        for metric in ("precision",) if not self.closed_pool else self.measures:
            cell = row.get(metric)
            if not isinstance(cell, dict):
                continue
            low, high = cell.get("low"), cell.get("high")
            if isinstance(low, int | float) and isinstance(high, int | float):
                widths.append((high - low) / 2)
        return max(widths) if widths else None

    def state_text(
        self,
        state: str,
        *,
        outcome: str | None = None,
        row: Mapping[str, Any] | None = None,
        n_verified: int | None = None,
        n_requested: int | None = None,
    ) -> str:
        """What ``state`` means for this run, in plain words: what was met and what was not
        (``row``: the run's row of the snapshot, for its half-width). The machine state stays
        as it is; this is the text shown next to it."""
        if state in (Run.State.SCORED, Run.State.PARTIAL):
            text = self._finished(state, outcome, self.half_width(row or {}))
            if self.reference is not None and not self.reference.enough:
                text += f"; {self.reference.note}"
            return text
        if state == Run.State.AWAITING_LABELS and n_requested:
            return (
                f"waiting for the annotators: {n_verified or 0:,} of {n_requested:,} items verified"
            )
        return STATE_TEXTS.get(state, str(state).replace("_", " "))

    def row_state_text(self, row: Mapping[str, Any]) -> str:
        """:meth:`state_text` of a run as the snapshot ``row`` lists it (the public's view)."""
        return self.state_text(
            str(row.get("state", "")),
            outcome=row.get("outcome"),
            row=row,
            n_verified=row.get("n_verified"),
            n_requested=row.get("n_requested"),
        )

    def run_state_text(self, run: Run, row: Mapping[str, Any] | None) -> str:
        """:meth:`state_text` of ``run`` as the viewer sees it, ``row`` its snapshot row."""
        return self.state_text(
            run.state,
            outcome=run.outcome,
            row=row,
            n_verified=run.n_verified,
            n_requested=run.n_requested,
        )

    def _finished(self, state: str, outcome: str | None, width: float | None) -> str:
        measure = "widest interval" if self.closed_pool else "precision"
        target = f"target {self.target_text}"
        if width is None:
            if state == Run.State.SCORED:
                return f"{measure} within the {target}: met"
            return f"{PARTIAL_CAUSES.get(outcome or '', 'target not met')}: {target} not reached"
        reached = f"{measure} ±{width:.3f}, {target}"
        if state == Run.State.PARTIAL:
            return f"{PARTIAL_CAUSES.get(outcome or '', 'target not met')}: {reached}"
        if round(width, 3) <= self.target:  # as shown: +-0.0500000001 reads +-0.050, met
            return f"{reached}: met"
        if outcome == "exhausted":
            return f"every predicted item verified: {reached}"
        return f"scored at {reached}"


@dataclass(frozen=True)
class RunWords:
    """The words of a task's runs as one viewer sees them: their states read against the
    newest snapshot that viewer may see (its rows give the half-widths)."""

    terms: SnapshotTerms
    rows: dict[int, dict] = field(default_factory=dict)  # run id -> its snapshot row

    @classmethod
    def of(cls, task: Task, snapshot: LeaderboardSnapshot | None) -> RunWords:
        rows = snapshot.rows if snapshot is not None else []
        return cls(
            terms=SnapshotTerms.of(task, snapshot),
            rows={r["run"]: r for r in rows or [] if isinstance(r, dict) and "run" in r},
        )

    def state_text(self, run: Run) -> str:
        """``run``'s state (as the viewer sees it: ``selectors.runs_seen_by``) in words."""
        return self.terms.run_state_text(run, self.rows.get(run.pk))
