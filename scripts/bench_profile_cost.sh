#!/usr/bin/env bash
# The profiler's cost per intercepted call (docs/benchmarks.md, "The
# profiler's cost (issue #30)"): at 1 rank, an 8-byte MPI_Allreduce, the
# library's own PMPI_Allreduce (what the program runs without the preload)
# against MPI_Allreduce through libcollkit-preload, in alternating batches
# of one run (tests/preload/overhead.c, passthrough mode), with and without
# COLLKIT_PROFILE. RUNS runs per setting and MPI; each prints the median of
# the paired per-call differences. Not a test: timing. SETTINGS (default
# "off profile") may add "autotune": COLLKIT_AUTOTUNE=1 with the library as
# the one candidate (docs/benchmarks.md, "The autotuner's cost (issue #42)").
#
# MODE (default passthrough) "comms" makes a communicator per call instead
# (tests/preload/overhead.c): the cost per new communicator (issue #50);
# "alternate" goes round four communicators, "cold" reads 4 MiB between
# calls (a program's computation), each call timed alone; "classes" makes
# every call an allreduce of a new count (a new autotuner class).
#
#   scripts/bench_profile_cost.sh [RUNS] [BATCHES] [CALLS_PER_BATCH] [SETTINGS] [MODE]   (default 5 1000 1000 "off profile" passthrough)
#
# PRELOAD_DIR, when set, is a directory holding openmpi/libcollkit-preload.so
# and mpich/libcollkit-preload.so: another build of the shim than the test
# trees' (scripts/bench_autotune_ab.sh).
#
# Needs the test trees of scripts/setup.sh --tests (build/openmpi, build/mpich).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5} BATCHES=${2:-1000} PER=${3:-1000} SETTINGS=${4:-off profile} MODE=${5:-passthrough}
[[ $MODE =~ ^(passthrough|comms|alternate|cold|classes)$ ]] || { echo "MODE: passthrough, comms, alternate, cold or classes, not $MODE" >&2; exit 2; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

run() {  # run <mpi> <setting: off|profile|autotune>
    local mpi=$1 setting=$2 bin=build/$1/tests/preload/ck_preload_overhead
    local lib=build/$1/preload/libcollkit-preload.so
    [[ -z ${PRELOAD_DIR:-} ]] || lib=$PRELOAD_DIR/$1/libcollkit-preload.so
    local -a vars=()
    case $setting in
        off) ;;
        profile) vars=(COLLKIT_PROFILE "$DIR") ;;
        autotune) vars=(COLLKIT_AUTOTUNE 1 COLLKIT_AUTOTUNE_CANDIDATES "allreduce=library"
                        COLLKIT_AUTOTUNE_OUT "$DIR/autotune.rules") ;;
        *) echo "unknown setting $setting (off, profile, autotune)" >&2; exit 2 ;;
    esac
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

for mpi in openmpi mpich; do
    [[ -x build/$mpi/tests/preload/ck_preload_overhead ]] || { echo "$mpi: not built, skipped"; continue; }
    for i in $(seq "$RUNS"); do
        for setting in $SETTINGS; do  # alternate the settings, so drift hits both alike
            line=$(run "$mpi" "$setting" | grep 'difference median')
            echo "$mpi $setting run=$i: $line"
        done
    done
done
