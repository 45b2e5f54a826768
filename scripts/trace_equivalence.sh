#!/usr/bin/env bash
# The exhaustive check behind issue #5: for every p (default 1..32) and both
# MPIs, ck_trace (libcollkit against the stand-in MPI) must print exactly the
# messages that ck_trace_mpi records under real MPI, for every registered
# algorithm (cases: tests/trace/run_equivalence.cmake). Run it before
# resolving the issue; ctest runs the same check at a few p.
#   scripts/trace_equivalence.sh [--mpi openmpi|mpich|both] [--from P] [--to P]
# Ends with `N passed, M failed`, counting traces (one algorithm, count,
# root); a launch that fails outright counts as one failure. Runs niced: the
# machine is shared.
set -uo pipefail
cd "$(dirname "$0")/.."
mpis="openmpi mpich"; from=1; to=32
while (($#)); do
    case $1 in
        --mpi) [[ $2 == both ]] && mpis="openmpi mpich" || mpis=$2; shift 2 ;;
        --from) from=$2; shift 2 ;;
        --to) to=$2; shift 2 ;;
        *) echo "usage: $0 [--mpi openmpi|mpich|both] [--from P] [--to P]" >&2; exit 2 ;;
    esac
done

passed=0; failed=0
for mpi in $mpis; do
    b=build/$mpi
    case $mpi in
        openmpi)
            launch="mpirun.openmpi|-n|@P@|--oversubscribe"
            env=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) ;;
        mpich)
            launch="$PWD/.mpich/bin/mpirun|-n|@P@"
            env=(MPIR_CVAR_CH4_PROGRESS_THROTTLE=1 MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT=1
                 MPIR_CVAR_POLLS_BEFORE_YIELD=1) ;;
        *) echo "unknown MPI '$mpi'" >&2; exit 2 ;;
    esac
    for t in tools/trace/ck_trace tools/trace/ck_trace_mpi tests/trace/ck_trace_diff; do
        if [[ ! -x $b/$t ]]; then
            echo "$b/$t is missing: run cmake --build $b first" >&2
            exit 2
        fi
    done
    work=$b/tests/trace/equivalence_full
    for ((p = from; p <= to; p++)); do
        start=$SECONDS
        log=$(env "${env[@]}" nice -n 10 cmake -DTRACE="$b/tools/trace/ck_trace" \
              -DTRACE_MPI="$b/tools/trace/ck_trace_mpi" -DDIFF="$b/tests/trace/ck_trace_diff" \
              -DLAUNCH="$launch" -DRANKS=$p -DWORKDIR="$work" -DLARGE_MAX_P=16 \
              -P tests/trace/run_equivalence.cmake 2>&1)
        rc=$?
        counts=$(grep -oE '[0-9]+ equal, [0-9]+ differ' <<<"$log" | tail -1)
        if [[ -n $counts ]]; then
            read -r eq _ df _ <<<"${counts//,/}"
            passed=$((passed + eq)); failed=$((failed + df))
        fi
        if ((rc != 0)); then
            [[ -z $counts || ${df:-0} -eq 0 ]] && failed=$((failed + 1))
            printf '%s p=%d: FAILED (%ds)\n%s\n' "$mpi" $p $((SECONDS - start)) "$log"
        else
            printf '%s p=%d: %s (%ds)\n' "$mpi" $p "$counts" $((SECONDS - start))
        fi
        unset eq df
    done
done
printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
