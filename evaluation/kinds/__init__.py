"""The engine wing of each kind of task: what the pipeline does differently for an open-world
task and for a closed pool.

The services keep the frame (``plan_run``, ``estimate_task``: the engine lease, which runs may be
planned, failures, the estimate flag) and ask :func:`.registry.engine_for` for the task's
:class:`.base.KindEngine`; each wing (:mod:`.open_world`, :mod:`.closed_pool`) loads its state,
plans and estimates. What the wings share is written once beside them: the rows a state is built
from (:mod:`.engine_rows`), storing a round's draws (:mod:`.rounds`), moving runs on
(:mod:`.progress`), snapshots (:mod:`.snapshots`) and stored values (:mod:`.values`).
docs/ARCHITECTURE.md, "Task kinds: the engine wing", says what a third kind takes.
"""
