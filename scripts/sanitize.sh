#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build (Open MPI) running the
# quick matrix at a few rank counts. Leaks inside Open MPI itself are
# suppressed; leaks in libcollkit or the matrix are reported.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/asan -DCOLLKIT_SANITIZE=ON -DCOLLKIT_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
      -DMPI_C_COMPILER=/usr/bin/mpicc.openmpi -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.openmpi >/dev/null
cmake --build build/asan -j "$(nproc)" >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for p in ${COLLKIT_SANITIZE_RANKS:-1 3 4 6}; do
    echo "sanitized matrix (quick) at p=$p"
    timeout 900 mpirun.openmpi --oversubscribe -n "$p" build/asan/tests/ck_matrix --level quick 2>&1 \
        | grep -v '^ck_matrix: p=' | tail -n 3
    test "${PIPESTATUS[0]}" -eq 0
done
