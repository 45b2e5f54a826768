#!/usr/bin/env bash
# The traffic-analysis speed benchmark of issue #5: 10,000 synthetic Leonardo
# allocations of 2..2,048 nodes (scripts/gen_allocations.py, fixed seed), two
# allreduce algorithms, `collkit traffic --jobs`. Runs it twice: with an empty
# trace cache (every trace made by ck_trace) and again with the cache filled.
# Prints the wall time of each; the target is under 60 s.
#
#   bash scripts/bench_traffic.sh [JOBS_DIR]     (default /tmp/collkit-traffic-jobs)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${1:-/tmp/collkit-traffic-jobs}
MAP=${COLLKIT_LEONARDO_MAP:-data/leonardo/nodes.txt}
ALGS=(--algorithm recursive_doubling --algorithm bine_latency)

if [[ ! -f "$JOBS/job9999.csv" ]]; then
    .venv/bin/python scripts/gen_allocations.py --out "$JOBS" --map "$MAP" --jobs 10000
fi
CACHE=$(mktemp -d)
OUT=$(mktemp -d)
trap 'rm -rf "$CACHE" "$OUT"' EXIT

for run in cold warm; do
    # wall time, and CPU time of collkit and its ck_trace children (less
    # sensitive to other load on the machine)
    COLLKIT_TRACE_CACHE="$CACHE" .venv/bin/python - "$run" "$OUT/$run.csv" "$JOBS" "$MAP" "${ALGS[@]}" <<'PY'
import resource, subprocess, sys, time
run, out, jobs, map_, *algs = sys.argv[1:]
cmd = [".venv/bin/collkit", "traffic", "--jobs", jobs, "--map", map_, "--collective", "allreduce",
       *algs, "--out", out]
t = time.monotonic()
subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
rows = sum(1 for _ in open(out)) - 1
print(f"{run} cache: {wall:.1f} s wall, {ru.ru_utime + ru.ru_stime:.1f} s CPU, {rows} jobs")
PY
done
cmp -s "$OUT/cold.csv" "$OUT/warm.csv" || { echo "cold and warm runs differ" >&2; exit 1; }
.venv/bin/python - "$OUT/warm.csv" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["reduction_pct"]]
pct = [float(r["reduction_pct"]) for r in rows]
print(f"{len(rows)} jobs span more than one group; inter-group reduction of bine_latency vs "
      f"recursive_doubling: median {statistics.median(pct):.1f} %, min {min(pct):.1f} %, max {max(pct):.1f} %")
PY
