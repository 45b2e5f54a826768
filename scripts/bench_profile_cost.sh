#!/usr/bin/env bash
# The profiler's cost per intercepted call (docs/benchmarks.md, "The
# profiler's cost (issue #30)"): at 1 rank, an 8-byte MPI_Allreduce, the
# library's own PMPI_Allreduce (what the program runs without the preload)
# against MPI_Allreduce through libcollkit-preload, in alternating batches
# of one run (tests/preload/overhead.c, passthrough mode), with and without
# COLLKIT_PROFILE. RUNS runs per setting and MPI; each prints the median of
# the paired per-call differences. Not a test: timing.
#
#   scripts/bench_profile_cost.sh [RUNS] [BATCHES] [CALLS_PER_BATCH]   (default 5 1000 1000)
#
# Needs the test trees of scripts/setup.sh --tests (build/openmpi, build/mpich).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5} BATCHES=${2:-1000} PER=${3:-1000}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

run() {  # run <mpi> <profile on: 0|1>
    local mpi=$1 on=$2 bin=build/$1/tests/preload/ck_preload_overhead lib=build/$1/preload/libcollkit-preload.so
    local prof=()
    if [[ $mpi == openmpi ]]; then
        [[ $on == 1 ]] && prof=(-x "COLLKIT_PROFILE=$DIR")
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
            mpirun.openmpi -n 1 -x "LD_PRELOAD=$lib" "${prof[@]}" "$bin" passthrough "$BATCHES" "$PER"
    else
        [[ $on == 1 ]] && prof=(-genv COLLKIT_PROFILE "$DIR")
        MPIR_CVAR_CH4_PROGRESS_THROTTLE=1 MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT=1 \
            MPIR_CVAR_POLLS_BEFORE_YIELD=1 \
            .mpich/bin/mpirun -n 1 -genv LD_PRELOAD "$lib" "${prof[@]}" "$bin" passthrough "$BATCHES" "$PER"
    fi
}

for mpi in openmpi mpich; do
    [[ -x build/$mpi/tests/preload/ck_preload_overhead ]] || { echo "$mpi: not built, skipped"; continue; }
    for i in $(seq "$RUNS"); do
        for on in 0 1; do  # alternate the settings, so drift hits both alike
            line=$(run "$mpi" "$on" | grep 'difference median')
            echo "$mpi profile=$on run=$i: $line"
        done
    done
done
