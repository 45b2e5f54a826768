#!/usr/bin/env bash
# Two builds of the shim side by side (docs/benchmarks.md, "The autotuner's
# cost"): tests/preload/overhead.c MODE at 1 rank under BEFORE's and AFTER's
# libcollkit-preload.so, autotune with the library its one candidate
# (settled), and AFTER's in pass-through, interleaved run by run so drift hits
# all three alike. BEFORE and AFTER are directories holding
# openmpi/libcollkit-preload.so and mpich/libcollkit-preload.so, e.g. copies
# of build/openmpi/preload and build/mpich/preload made at two commits. Each
# line: the median of the paired per-call differences over PMPI. Not a test:
# timing.
#
#   scripts/bench_autotune_ab.sh BEFORE AFTER [MODE] [BATCHES] [CALLS_PER_BATCH] [RUNS]   (default cold 100 100 5)
#
# Needs the test trees of scripts/setup.sh --tests (the overhead program).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 && -d $1 && -d $2 ]] || { echo "usage: $0 BEFORE_DIR AFTER_DIR [MODE] [BATCHES] [CALLS] [RUNS]" >&2; exit 2; }
BEFORE=$1 AFTER=$2 MODE=${3:-cold} BATCHES=${4:-100} PER=${5:-100} RUNS=${6:-5}
[[ $MODE =~ ^(passthrough|comms|alternate|cold|classes)$ ]] || { echo "MODE: passthrough, comms, alternate, cold or classes, not $MODE" >&2; exit 2; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

run() {  # run <mpi> <lib> <autotune: 0|1>
    local mpi=$1 lib=$2 bin=build/$1/tests/preload/ck_preload_overhead
    local -a vars=()
    [[ $3 == 1 ]] && vars=(COLLKIT_AUTOTUNE 1 COLLKIT_AUTOTUNE_CANDIDATES "allreduce=library"
                           COLLKIT_AUTOTUNE_OUT "$DIR/autotune.rules")
    local -a flags=()
    local i
    for ((i = 0; i < ${#vars[@]}; i += 2)); do
        if [[ $mpi == openmpi ]]; then flags+=(-x "${vars[i]}=${vars[i+1]}")
        else flags+=(-genv "${vars[i]}" "${vars[i+1]}"); fi
    done
    if [[ $mpi == openmpi ]]; then
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            mpirun.openmpi -n 1 -x "LD_PRELOAD=$lib" "${flags[@]}" "$bin" "$MODE" "$BATCHES" "$PER"
    else
        MPIR_CVAR_CH4_PROGRESS_THROTTLE=1 MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT=1 \
            MPIR_CVAR_POLLS_BEFORE_YIELD=1 \
            .mpich/bin/mpirun -n 1 -genv LD_PRELOAD "$lib" "${flags[@]}" "$bin" "$MODE" "$BATCHES" "$PER"
    fi
}

for i in $(seq "$RUNS"); do
    for mpi in openmpi mpich; do
        [[ -x build/$mpi/tests/preload/ck_preload_overhead ]] || { echo "$mpi: not built, skipped"; continue; }
        echo "$MODE $mpi pass-through run=$i: $(run "$mpi" "$AFTER/$mpi/libcollkit-preload.so" 0 | grep -o 'difference median.*')"
        echo "$MODE $mpi before run=$i: $(run "$mpi" "$BEFORE/$mpi/libcollkit-preload.so" 1 | grep -o 'difference median.*')"
        echo "$MODE $mpi after run=$i: $(run "$mpi" "$AFTER/$mpi/libcollkit-preload.so" 1 | grep -o 'difference median.*')"
    done
done
