#!/bin/bash
# Ten runs of bench/annotation_queue.py one after the other (--items 1000, each its own fresh
# database and server), and per run what the machine spent: the CPU time of all processes in
# user mode and stolen by the host (jiffies, from /proc/stat), and a fixed Python loop's CPU ms
# and a memory-bound one's before and after the run (probes of the machine's speed). Tells a run slowed by lost CPU
# (steal), by slower CPU (the probe) or by more work (user time for the same answers).
#
#   bench/ten_runs_cpu.sh [RUNS] [PORT_BASE] [SET]  results: bench/results/ten_runs_cpu[-SET]-run<i>.json
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}; port=${2:-8890}; set=${3:+-$3}
py=.venv/bin/python
probe() { "$py" -c 'import time; t=time.process_time(); s=sum(i*i%7 for i in range(3_000_000)); print(round((time.process_time()-t)*1000))'; }
# The same for memory: 4 million random reads over 256 MB (cache misses, as a database's and a
# web server's working sets make them; the loop above stays in the core's caches).
memprobe() { "$py" -c 'import time, numpy as np; a=np.ones(2**25); i=np.random.default_rng(0).integers(0, a.size, 4_000_000); a[i].sum(); t=time.process_time(); [a[i].sum() for _ in range(3)]; print(round((time.process_time()-t)*1000))'; }
for i in $(seq 1 "$runs"); do
  p1=$(probe); m1=$(memprobe); a=($(head -1 /proc/stat))
  "$py" bench/annotation_queue.py --items 1000 --port $((port + i)) \
      --json "bench/results/ten_runs_cpu$set-run$i.json" > "/tmp/ten_runs_cpu-run$i.log" 2>&1
  b=($(head -1 /proc/stat)); p2=$(probe); m2=$(memprobe)
  user=$(( (b[1] + b[2]) - (a[1] + a[2]) )); steal=$(( b[8] - a[8] ))
  echo "run$i $(grep -o 'answers/s: [0-9.]*' "/tmp/ten_runs_cpu-run$i.log") user $user steal $steal probe_ms $p1 $p2 memprobe_ms $m1 $m2 $(grep -o 'cpu s: .*' "/tmp/ten_runs_cpu-run$i.log")"
done
