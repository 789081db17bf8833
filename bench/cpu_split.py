"""Where a benchmark's CPU went, from ``/proc``: the benchmark itself, a server's process tree,
PostgreSQL, and the whole machine (with what the host stole).

Read at the start and the end of a timed window (:class:`CpuWindow`). PostgreSQL's share is its
postmaster's own time, the time of its children that ended meanwhile (a backend's time goes to
the postmaster's ``cutime`` when it exits) and of those still running, so it counts every
database on the server: measure on a quiet machine. Linux only; no hardware counters (this
machine's hypervisor exposes none, so cycles and instructions cannot be told apart here).
"""

from __future__ import annotations

import os
import subprocess
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: fields start after it.
    return text[text.rindex(")") + 2 :].split()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return found


def tree_ticks(pid: int, *, reaped: bool = False) -> int:
    """User + system ticks of ``pid`` and every live descendant (plus, with ``reaped``, the
    children each has waited for)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        fields = _stat(p)
        if fields is None:
            continue
        # utime, stime, cutime, cstime are fields 14-17 of stat(5); 11-14 after the name.
        total += int(fields[11]) + int(fields[12])
        if reaped:
            total += int(fields[13]) + int(fields[14])
        todo += _children(p)
    return total


def postmaster_pid() -> int | None:
    out = subprocess.run(["pgrep", "-o", "-x", "postgres"], capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.stdout.strip() else None


def machine_ticks() -> tuple[int, int]:
    """(busy, stolen) ticks of the whole machine: user, nice, system; steal."""
    with open("/proc/stat") as fh:
        cpu = [int(v) for v in fh.readline().split()[1:]]
    return cpu[0] + cpu[1] + cpu[2], cpu[7]


class CpuWindow:
    """CPU seconds spent between :meth:`start` and :meth:`stop`, split by who spent them."""

    def __init__(self, server_pid: int):
        self.server_pid, self.pg = server_pid, postmaster_pid()

    def _read(self) -> dict[str, float]:
        busy, stolen = machine_ticks()
        return {
            "wall": time.perf_counter(),
            "benchmark": time.process_time(),
            "server": tree_ticks(self.server_pid) / TICK,
            "postgres": tree_ticks(self.pg, reaped=True) / TICK if self.pg else float("nan"),
            "machine": busy / TICK,
            "stolen": stolen / TICK,
        }

    def start(self) -> None:
        self.first = self._read()

    def stop(self) -> dict[str, float]:
        last = self._read()
        spent = {k: round(last[k] - self.first[k], 2) for k in last}
        spent["other"] = round(
            spent["machine"] - spent["benchmark"] - spent["server"] - spent["postgres"], 2
        )
        return spent
