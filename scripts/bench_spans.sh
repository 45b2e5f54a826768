#!/usr/bin/env bash
# Instrumentation cost (issue #7, docs/benchmarks.md "Instrumentation cost"):
# the time of one enabled tag pair (BEGIN + END, recording on), the same
# code with recording off, the plain build (macros compiled out), and one
# clock read; then the object-code identity test that shows disabled tags
# cost nothing. Usage: scripts/bench_spans.sh [BUILD_DIR] [N] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/openmpi}
n=${2:-1000000}
reps=${3:-21}
cmake --build "$build" -j2 --target ck_span_cost collkit_objects collkit_spanfree_objects >/dev/null
echo "date: $(date -u +%Y-%m-%d)  machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
echo "compiler: $(${CC:-cc} --version | head -1)"
"$build/tests/instrument/ck_span_cost" "$n" "$reps"
ctest --test-dir "$build" -R '^spans_free_objects$' -V 2>&1 | grep -E 'objects identical|Passed|Failed' || true
