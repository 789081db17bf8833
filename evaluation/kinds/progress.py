"""Moving a task's runs on after an estimation, for every kind of task.

Every estimation, with the engine lease held and in the snapshot's transaction, looks at each run
of the engine: a run whose round's answers are all in is planned again; a run in final
estimation ends ``scored`` (its target met, or nothing left to verify) or ``partial`` with what
stopped it; any other run only has its counts brought up to date. The kinds differ in what a
run's answers and its half-width are (:mod:`.open_world.estimation`,
:mod:`.closed_pool.estimation`) and in how its reason words them, not in these steps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from leaderboard.jobs import enqueue_plan
from leaderboard.models import Run, Task
from leaderboard.services.lifecycle import transition_run


def move_runs_on(
    runs: Sequence[Run],
    *,
    counts: Callable[[Run], tuple[int, int]],
    answers_in: Callable[[int], bool],
    final_state: Callable[[int, Run], tuple[str, str]],
    rescored: Callable[[int, Run], str | None] | None = None,
) -> None:
    """Move every run of ``runs`` (the engine's, by index) on (see the module).

    Parameters
    ----------
    runs : sequence of Run
        The task's runs in the engine, re-read here under the caller's lease.
    counts : callable
        A run's items requested and verified, stored on it.
    answers_in : callable
        Whether every answer run ``index`` waits for is in (asked only of a run awaiting labels).
    final_state : callable
        The state and reason a run in final estimation ends with (:func:`final_state`).
    rescored : callable, optional
        The reason a finished run becomes ``scored`` now, or ``None`` (asked only of runs
        neither awaiting labels nor in final estimation).
    """
    for index, run in enumerate(runs):
        run.refresh_from_db()
        requested, verified = counts(run)
        fields = {"n_requested": requested, "n_verified": verified}
        if run.state == Run.State.AWAITING_LABELS and answers_in(index):
            transition_run(
                run, Run.State.PLANNING, "answers are in: planning the next round", **fields
            )
            enqueue_plan(run.pk)
        elif run.state == Run.State.ESTIMATING:
            state, reason = final_state(index, run)
            transition_run(run, state, reason, **fields)
        elif rescored is not None and (scored := rescored(index, run)) is not None:
            transition_run(run, Run.State.SCORED, scored, **fields)
        elif (run.n_requested, run.n_verified) != (requested, verified):
            Run.objects.filter(pk=run.pk).update(**fields)
            run.n_requested, run.n_verified = requested, verified


def final_state(
    run: Run, half_width: float, task: Task, reasons: Mapping[str, str]
) -> tuple[str, str]:
    """The state a run in final estimation ends in, and its reason.

    ``scored`` when the planner met the target or ran out of items to verify, or the
    ``half_width`` now meets the target; otherwise ``partial``, for what stopped the run: its
    outcome (``budget_exhausted``, ``annotator_limited``) or the round limit (``gave_up``, also
    for an outcome ``reasons`` does not word). ``reasons`` maps ``met`` and each of those to the
    kind's wording, a format string of ``width``, ``target``, ``budget`` and ``rounds``.
    """
    target = task.target_half_width
    state, verdict = Run.State.PARTIAL, "gave_up"
    if run.outcome in ("met", "exhausted") or half_width <= target:
        state, verdict = Run.State.SCORED, "met"
    elif run.outcome in reasons:
        verdict = run.outcome
    words = reasons[verdict].format(
        width=half_width, target=target, budget=task.label_budget, rounds=run.rounds
    )
    return state, words
