#!/usr/bin/env bash
# Everything CI runs: set up, then the correctness matrix under Open MPI and
# MPICH at p = 1..17, 24, 32, the sanitizer build on a subset, the install and
# package-config check, what a cluster user does (scripts/cluster_user_check.sh),
# and the Python tests. Ends with `N passed, M failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests || exit $?

passed=0; failed=0
step() {  # step <label> <command...>
    local label=$1; shift
    printf '\n=== %s\n' "$label"
    local start=$SECONDS
    if "$@"; then
        passed=$((passed + 1)); printf '=== %s: ok (%ds)\n' "$label" $((SECONDS - start))
    else
        failed=$((failed + 1)); printf '=== %s: FAILED (%ds)\n' "$label" $((SECONDS - start))
    fi
}

step "matrix under Open MPI" ctest --test-dir build/openmpi --output-on-failure
step "matrix under MPICH" ctest --test-dir build/mpich --output-on-failure
step "sanitizers (ASan+UBSan)" bash scripts/sanitize.sh
step "install + find_package + pkg-config" bash scripts/install_check.sh
step "GPU variant: collkit-bench-nccl builds, GPU-free tests" bash scripts/gpu_check.sh
step "cluster user: sdist, pip install as an unprivileged user, campaigns, a second MPI, Slurm, bad input" \
    bash scripts/cluster_user_check.sh
step "python tests" .venv/bin/python -m pytest -q

printf '\n%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
