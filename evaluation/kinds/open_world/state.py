"""Rebuild the engine's view of a task (:class:`evaluation.core.state.TaskState`) from the database.

The database is the only source of truth. Runs enter the engine in submission order (by id), their
packed predictions load with ``numpy.frombuffer``; the judgments and gold answers are the task's
judgment set as of its version (every answer with ``seq <= v`` not withdrawn by ``v``), the gold
items' known answers are exact; the sampling record is replayed from the stored rounds
(:meth:`CoordinatedPoissonDesign.replay`), so any worker on any machine sees the same state, bit
for bit, and a crashed worker loses nothing.

Runs' predictions and stored rounds never change once written, so each worker process keeps the
part of the state built from them (runs, score strata, the replayed record) for its most recently
used tasks, within ``ENGINE_STATE_CACHE_MB``, and on the next job only adds the runs and replays
the rounds stored since. At 100 runs x 1,000,000 predictions that part costs 25-36 s to build and
0.24 s to bring up to date (docs/BENCHMARKS.md, service scale). Judgments, gold items and the
reference sample are re-read every time, and every job works on a fork of the cached state, so
nothing a job does (a plan that is never stored) can leak into the next one. Anything that does
not extend what was cached (a run or round that disappeared or changed, a smaller item count,
other design settings, a re-created database) rebuilds the task from scratch.

A plan job loads its state before it takes the task's engine lease, so that two workers on one
task load in parallel; under the lease :func:`catch_up` replays on it the rounds other jobs stored
meanwhile, the only part of the state the next round depends on that a job of another worker
writes (docs/ARCHITECTURE.md, "One job per task at a time").
"""

from __future__ import annotations

import json
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt
from django.conf import settings

from annotation.selectors import stuck_items, working_annotators
from annotation.services.judgments import number_judgments
from evaluation.core.designs import ServiceDesign
from evaluation.core.designs.interface import ServiceRecord
from evaluation.core.results import RoundRecord
from evaluation.core.state import TaskState
from evaluation.core.task_design import open_world_design
from leaderboard.models import ReferenceItem, Run, RunPredictions, Task

from ...models import Draw, Look, PlanRound
from ..engine_rows import LoadedEngine, engine_runs, load_answers


@dataclass
class LoadedTask(LoadedEngine[TaskState, ServiceDesign]):
    """An open-world task's engine state with the mapping between engine indices and database
    rows."""

    rounds: list[RoundRecord]  # in planning order
    round_runs: list[int]  # Run.pk of each entry of ``rounds``
    reference_version: int  # the reference sample's version when loading began
    annotators_at_work: int  # who answered on the task and is not paused
    # (PlanRound pk, created_at) of every round replayed in ``state``, planning order
    round_keys: list[tuple[int, datetime]] = field(default_factory=list)
    stuck: np.ndarray | None = None  # items no annotator can be given now, read when needed

    def record(self) -> ServiceRecord:
        return self.design.record(self.state)

    def pending_in_run(self, index: int) -> int:
        """Items of run ``index`` with judgments asked (by any round) and not all in yet.

        Items whose request no annotator can be given now (each has judged it, or conflicts
        with it: :func:`annotation.selectors.stuck_items`) are left out while annotators are at
        work: they do not hold the run back, and the engine estimates with the answers they have.
        With nobody at work, the run waits for an organizer instead (a lifted pause, a new
        annotator) rather than planning rounds nobody can answer.
        """
        rec = self.record()
        items = self.state.runs[index].items
        items = items[rec.requested[items]]
        received = np.bincount(self.state.judgments.items, minlength=self.state.n_items)
        waiting = items[rec.asked[items] > received[items]]
        if not waiting.size:
            return 0
        if self.stuck is None:
            self.stuck = np.array(
                sorted(stuck_items(task=self.task)) if self.annotators_at_work else [],
                dtype=np.int64,
            )
        return int(np.count_nonzero(~np.isin(waiting, self.stuck)))

    def drawn_for_run(self, run_pk: int) -> tuple[int, int]:
        """(items drawn by this run's own rounds, how many of them are verified)."""
        drawn = verified = 0
        judged = self.state.verified
        for rnd, pk in zip(self.rounds, self.round_runs, strict=True):
            if pk == run_pk and rnd.items.size:
                drawn += int(rnd.items.size)
                verified += int(np.count_nonzero(judged[rnd.items]))
        return drawn, verified


def load_task_state(task: Task) -> LoadedTask:
    """Load ``task``'s runs, judgments, gold, reference sample and replayed sampling record."""
    # The version first (numbering the answers committed so far): later ones are left out, so
    # the state rests on exactly the judgment set ``labels_version`` names, however busy the
    # queue. The item count is read after the runs and the reference sample, so it covers every
    # item they name even if an upload commits meanwhile.
    labels_version = number_judgments(task.pk)
    reference_version = (
        Task.objects.filter(pk=task.pk).values_list("reference_version", flat=True).get()
    )
    runs = list(engine_runs(task))
    reference = list(
        ReferenceItem.objects.filter(task=task).order_by("id").values_list("item__index", "group")
    )
    n_items = Task.objects.filter(pk=task.pk).values_list("n_items", flat=True).get()
    # Further looks go up to one judgment per annotator at work (who answered on the task and
    # is not paused), so that a look never waits for someone who is not there.
    at_work = working_annotators(task=task)
    design = open_world_design(task.design_settings(), annotators=at_work)
    run_index = {run.pk: i for i, run in enumerate(runs)}
    cached = _up_to_date(task, design, runs, run_index, int(n_items))
    state = cached.state.fork()
    state.withdraw_runs(i for i, run in enumerate(runs) if run.state == Run.State.WITHDRAWN)
    load_answers(state, task, labels_version)
    if reference:
        items = np.array([r[0] for r in reference], dtype=np.int64)
        _, groups = np.unique(
            np.array([r[1] or f"#{i}" for i, r in enumerate(reference)], dtype=object),
            return_inverse=True,
        )
        state.set_reference(items, groups.astype(np.int64))
    return LoadedTask(
        task,
        state,
        design,
        runs,
        run_index,
        labels_version,
        rounds=list(cached.rounds),
        round_runs=list(cached.round_runs),
        reference_version=reference_version,
        annotators_at_work=at_work,
        round_keys=list(cached.round_keys),
    )


def catch_up(loaded: LoadedTask) -> LoadedTask:
    """``loaded``, read before the caller took the engine lease, brought up to the sampling
    record stored now: the rounds stored since are replayed on its state (the same replay, bit
    for bit, as a load would do). Anything else that changed what the state rests on (a run
    added, withdrawn or gone, new items, a new reference sample, other design settings, a round
    that vanished) loads the task again. Answers that came in meanwhile are not read: like any
    plan, the round rests on the judgment set of ``loaded.labels_version``, which it records.
    """
    task = Task.objects.get(pk=loaded.task.pk)
    runs = list(engine_runs(task))
    if (
        _run_marks(runs) != _run_marks(loaded.runs)
        or task.n_items != loaded.state.n_items
        or task.reference_version != loaded.reference_version
        or _config(task) != _config(loaded.task)
    ):
        return load_task_state(task)
    replayed = _CachedTask(
        (), loaded.state, [], list(loaded.round_keys), loaded.rounds, loaded.round_runs
    )
    if not _replay_new_rounds(replayed, task, loaded.design, loaded.run_index):
        return load_task_state(task)
    loaded.round_keys = replayed.round_keys
    loaded.stuck = None
    return loaded


def _run_marks(runs: list[Run]) -> list[tuple[int, datetime, bool]]:
    return [(run.pk, run.created_at, run.state == Run.State.WITHDRAWN) for run in runs]


@dataclass
class _CachedTask:
    """The immutable-input part of a task's state: runs and the record replayed from rounds."""

    config: tuple[object, ...]
    state: TaskState
    # (pk, created_at, n_predictions) per run
    run_keys: list[tuple[int, datetime, int]] = field(default_factory=list)
    # (PlanRound pk, created_at), replay order
    round_keys: list[tuple[int, datetime]] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)  # per replayed round
    round_runs: list[int] = field(default_factory=list)  # Run.pk per replayed round


_cache: OrderedDict[int, _CachedTask] = OrderedDict()
# Runs whose predictions one query fetches: bounds the transient memory of a first load.
_PREDICTIONS_PER_QUERY = 8


def forget_cached_states() -> None:
    """Drop every cached task state of this process."""
    _cache.clear()


def _config(task: Task) -> tuple[object, ...]:
    # Creation times tell a task, run or round from another that reuses its id (a restored or
    # re-created database).
    return (
        task.created_at,
        task.design,
        task.target_half_width,
        task.confidence,
        task.label_budget,
        json.dumps(task.design_options or {}, sort_keys=True),
    )


def _up_to_date(
    task: Task, design: ServiceDesign, runs: list[Run], run_index: dict[int, int], n_items: int
) -> _CachedTask:
    budget = settings.ENGINE_STATE_CACHE_MB * 2**20
    entry = _cache.pop(task.pk, None)
    run_keys = [(run.pk, run.created_at, run.n_predictions) for run in runs]
    if (
        entry is None
        or entry.config != _config(task)
        or n_items < entry.state.n_items
        or run_keys[: len(entry.run_keys)] != entry.run_keys
    ):
        entry = _CachedTask(_config(task), TaskState(0))
    # The entry is out of the cache until it is complete: one a failure left half-updated is
    # never reused.
    _add_runs(entry, runs, run_keys, n_items)
    if not _replay_new_rounds(entry, task, design, run_index):
        entry = _CachedTask(_config(task), TaskState(0))
        _add_runs(entry, runs, run_keys, n_items)
        _replay_new_rounds(entry, task, design, run_index)
    if budget > 0:
        _cache[task.pk] = entry
        # Least recently used first; the entry just used always stays.
        while len(_cache) > 1 and sum(_nbytes(e) for e in _cache.values()) > budget:
            _cache.popitem(last=False)
    return entry


def _nbytes(entry: _CachedTask) -> int:
    """Memory held by a cached entry's arrays (runs, record), not counting shared ones twice."""
    state = entry.state
    arrays = [state.labels, state.in_union]
    for run in state.runs:
        arrays += [run.items, run.scores]
    for extra in state.design_state.values():
        arrays += [v for v in vars(extra).values() if isinstance(v, np.ndarray)]
        arrays += [
            a
            for v in vars(extra).values()
            if isinstance(v, list)
            for a in v
            if isinstance(a, np.ndarray)
        ]
    return sum(a.nbytes for a in arrays)


def _add_runs(
    entry: _CachedTask, runs: list[Run], run_keys: list[tuple[int, datetime, int]], n_items: int
) -> None:
    state = entry.state
    if n_items > state.n_items:
        state.add_items(n_items - state.n_items)
    new = runs[len(entry.run_keys) :]
    for start in range(0, len(new), _PREDICTIONS_PER_QUERY):
        chunk = new[start : start + _PREDICTIONS_PER_QUERY]
        stored = {
            p.run_id: p for p in RunPredictions.objects.filter(run_id__in=[run.pk for run in chunk])
        }
        for run in chunk:
            items, scores = stored[run.pk].arrays()
            state.add_run(items, scores, name=run.name)
    entry.run_keys = list(run_keys)


_NONE = np.empty(0, np.int64)


def _items_by_round(
    model: type[Draw] | type[Look], round_ids: list[int]
) -> dict[int, npt.NDArray[np.int64]]:
    """Sorted item indices per round of a per-item table (draws, looks)."""
    found: defaultdict[int, list[int]] = defaultdict(list)
    rows = (
        model.objects.filter(plan_round_id__in=round_ids)
        .values_list("plan_round_id", "item__index")
        .iterator(chunk_size=20000)
    )
    for round_id, index in rows:
        found[round_id].append(index)
    return {pk: np.sort(np.array(v, dtype=np.int64)) for pk, v in found.items()}


def _replay_new_rounds(
    entry: _CachedTask, task: Task, design: ServiceDesign, run_index: dict[int, int]
) -> bool:
    """Replay the rounds stored since ``entry`` was last brought up to date; ``False`` when the
    stored rounds do not extend the replayed ones (the entry must be rebuilt)."""
    # The rounds' keys first, and the stored rounds themselves only for those not replayed yet:
    # reading every round's levels, bands and patterns (JSON) made a catch-up under the engine
    # lease 31-34 ms at 2,010 stored rounds, 19 ms this way (bench/catch_up_rounds.py).
    keys = list(PlanRound.objects.filter(task=task).order_by("id").values_list("pk", "created_at"))
    done = len(entry.round_keys)
    if keys[:done] != entry.round_keys:
        return False
    new_ids = [pk for pk, _ in keys[done:]]
    if not new_ids:
        design.record(entry.state)  # score strata of runs added since, kept with the entry
        return True
    wanted = set(new_ids)
    new = [
        row
        for row in PlanRound.objects.filter(task=task, pk__gte=new_ids[0], pk__lte=new_ids[-1])
        .order_by("id")
        .values_list(
            "pk",
            "run_id",
            "round",
            "levels",
            "fraction",
            "seed",
            "created_at",
            "judgments",
            "bands",
            "patterns",
        )
        if row[0] in wanted
    ]
    if [(row[0], row[6]) for row in new] != keys[done:]:
        return False  # a round vanished between the two reads: load again
    ids = [row[0] for row in new]
    drawn, looked = _items_by_round(Draw, ids), _items_by_round(Look, ids)
    records = [
        RoundRecord(
            run_index[run_id],
            number,
            drawn.get(pk, _NONE),
            levels,
            fraction,
            seed,
            again=looked.get(pk, _NONE),
            bands=(bands.get("cells", ()), bands.get("bands", ())),
            patterns=tuple((b, tuple(map(tuple, p))) for b, p in patterns),
            judgments=judgments,
        )
        for pk, run_id, number, levels, fraction, seed, _, judgments, bands, patterns in new
    ]
    design.replay(entry.state, records, extend=True)
    entry.round_keys += [(row[0], row[6]) for row in new]
    entry.rounds += records
    entry.round_runs += [row[1] for row in new]
    return True
