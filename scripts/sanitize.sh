#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build (Open MPI) running the
# quick matrix at a few rank counts. Leak checking is off: Open MPI's
# components are dlclose'd before exit, so their allocations show up as leaks
# of "<unknown module>" that no suppression can name.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/asan -DCOLLKIT_SANITIZE=ON -DCOLLKIT_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
      -DMPI_C_COMPILER=/usr/bin/mpicc.openmpi -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.openmpi >/dev/null
cmake --build build/asan -j "$(nproc)" >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for p in ${COLLKIT_SANITIZE_RANKS:-1 3 4 6}; do
    echo "sanitized matrix (quick) at p=$p"
    timeout 900 mpirun.openmpi --oversubscribe -n "$p" build/asan/tests/ck_matrix --level quick 2>&1 \
        | grep -v '^ck_matrix: p=' | tail -n 3
    test "${PIPESTATUS[0]}" -eq 0
done
# collkit-bench's own tests (every collective, both backends, mutants, failures)
# under the sanitizers. The out-of-memory test needs malloc to return NULL.
ASAN_OPTIONS="$ASAN_OPTIONS:allocator_may_return_null=1" ctest --test-dir build/asan -R "bench|trace" --output-on-failure -j "$((2 * $(nproc)))"
