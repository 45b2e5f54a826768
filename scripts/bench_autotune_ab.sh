#!/usr/bin/env bash
# Two builds of the shim side by side (docs/benchmarks.md, "The autotuner's
# cost"): per round, scripts/bench_profile_cost.sh's MODE at 1 rank under
# AFTER's shim in pass-through, then BEFORE's and AFTER's with the autotuner
# settled (the library its one candidate), so that drift hits all three
# alike. BEFORE and AFTER are directories holding openmpi/libcollkit-preload.so
# and mpich/libcollkit-preload.so, e.g. copies of build/openmpi/preload and
# build/mpich/preload made at two commits. Each line: the median of the paired
# per-call differences over PMPI. Not a test: timing.
#
#   scripts/bench_autotune_ab.sh BEFORE AFTER [MODE] [BATCHES] [CALLS_PER_BATCH] [ROUNDS]   (default cold 100 100 5)
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 && -d $1 && -d $2 ]] || { echo "usage: $0 BEFORE_DIR AFTER_DIR [MODE] [BATCHES] [CALLS] [ROUNDS]" >&2; exit 2; }
BEFORE=$1 AFTER=$2 MODE=${3:-cold} BATCHES=${4:-100} PER=${5:-100} ROUNDS=${6:-5}
one() {  # one <dir> <setting> <label> <round>
    PRELOAD_DIR=$1 scripts/bench_profile_cost.sh 1 "$BATCHES" "$PER" "$2" "$MODE" | sed "s/ $2 run=1:/ $3 round=$4:/"
}
for i in $(seq "$ROUNDS"); do
    one "$AFTER" off pass-through "$i"
    one "$BEFORE" autotune before "$i"
    one "$AFTER" autotune after "$i"
done
