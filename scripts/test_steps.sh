# The steps of `make test` (scripts/test.sh sources this; tests/python/test_test_steps.py
# runs a broken step through it): each step's verdict, time and the final count.
#
# A step passes only when it ran something and all of it passed: a pytest step
# that selects no test (pytest's exit status 5) and a ctest step whose selection
# is empty (--no-tests=error) fail, so a marker or label that no longer matches
# cannot turn a step into an "ok" that tested nothing.
# Needs RESULTS (a folder for steps.tsv and the JUnit files).

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
    printf '%s\t%d\n' "$label" $((SECONDS - start)) >> "$RESULTS/steps.tsv"
}

pytest_step() {  # pytest_step <junit name> <pytest arguments...>
    local junit=$1; shift
    .venv/bin/python -m pytest -q "$@" --junitxml "$RESULTS/$junit.xml"
    local rc=$?
    ((rc == 5)) && printf 'this step selected no test (pytest %s): a marker or path that matches nothing\n' "$*"
    return "$rc"
}

ctest_step() {  # ctest_step <tree> <ctest arguments...>
    local tree=$1 junit; shift
    junit="$(cd "$RESULTS" && pwd)/ctest-${tree##*/}.xml"    # ctest writes it relative to the tree
    ctest --test-dir "build/$tree" --output-on-failure --no-tests=error "$@" --output-junit "$junit"
}

finish() {  # the count, and the status make test exits with
    printf '\n%d passed, %d failed\n' "$passed" "$failed"
    ((failed == 0))
}
