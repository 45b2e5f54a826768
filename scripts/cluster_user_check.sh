#!/usr/bin/env bash
# What a cluster user does with collkit (issue #29), end to end, from an sdist:
# an unprivileged user with a fresh HOME and virtual environment, a working
# directory outside the checkout, a clean environment and one MPI put on PATH by
# an environment module (MPICH, the PyPI wheel in .mpich); then `pip install`,
# check, campaigns, preload, traffic, a second MPI (`collkit build`), and bad
# input, each of which must fail in one line with exit status 2 and leave
# nothing that later counts as good. Ends with "cluster user check: ok".
#
#   bash scripts/cluster_user_check.sh      # as root (creates the user); needs `make setup`
#
# Run as root it creates (and leaves) the system user $COLLKIT_TEST_USER
# (default collkituser, no home directory of its own, like a service account)
# and runs every step as that user; run as anyone else it runs the steps as
# itself. Everything else it makes lives in one temp dir, removed at exit.
# Needs PyPI (or a mirror pip is configured for): pip installs numpy,
# matplotlib and scikit-build-core as a first-time user would.
# Command lines for the user are single-quoted on purpose: they expand in the
# user's shell (SC2016).
# shellcheck disable=SC2016,SC2015
set -euo pipefail
CHECKOUT=$(cd "$(dirname "$0")/.." && pwd)
cd "$CHECKOUT"

TEST_USER=${COLLKIT_TEST_USER:-collkituser}
MPICH_PREFIX=$CHECKOUT/.mpich
OMPI_MPICC=/usr/bin/mpicc.openmpi
MODULES_INIT=/usr/share/modules/init/bash
PY=/usr/bin/python3   # this script's own checks

say() { printf '[cluster-user] %s\n' "$*" >&2; }
step() { printf '\n[cluster-user] === %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
show_log() { say "last lines of $1:"; tail -n "${2:-40}" "$1" | sed 's/^/    /' >&2; }

[[ -x $MPICH_PREFIX/bin/mpicc ]] || fail "$MPICH_PREFIX/bin/mpicc is missing: run make setup first"
[[ -x $OMPI_MPICC ]] || fail "$OMPI_MPICC is missing: run make setup first (openmpi-bin libopenmpi-dev)"
[[ -x .venv/bin/python ]] || fail ".venv is missing: run make setup first"

T=$(mktemp -d /tmp/collkit-cluster-user.XXXXXX)
chmod 755 "$T"
BG_PGID=""
SLURM_PIDS=""
cleanup() {
    local rc=$?
    # The build started in the background for the kill -9 test, if it is still there.
    if [[ -n $BG_PGID ]] && kill -0 -- "-$BG_PGID" 2>/dev/null; then
        kill -9 -- "-$BG_PGID" 2>/dev/null || true
    fi
    # The Slurm daemons step 11 started, by their pids.
    for pid in $SLURM_PIDS; do kill "$pid" 2>/dev/null || true; done
    for pid in $SLURM_PIDS; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$T"
    ((rc == 0)) || say "cluster user check FAILED (exit status $rc)"
}
trap cleanup EXIT

UHOME=$T/home
WORK=$UHOME/work
mkdir -p "$UHOME" "$T/sdist" "$T/modulefiles/mpich" "$T/readonly"

# --- the user ---------------------------------------------------------------
if [[ $(id -u) -eq 0 ]]; then
    if ! id "$TEST_USER" >/dev/null 2>&1; then
        say "creating the unprivileged user $TEST_USER (system account, no home; left for later runs)"
        useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /bin/bash "$TEST_USER"
    fi
    chown "$TEST_USER:" "$UHOME"
    AS=(runuser -u "$TEST_USER" --)
else
    TEST_USER=$(id -un)
    say "not root: running every step as $TEST_USER itself"
    AS=()
fi
chmod 555 "$T/readonly"   # a cache directory the user cannot write

# The user compiles through ccache, as many do (CMake reads
# CMAKE_C_COMPILER_LAUNCHER for pip's build and collkit build's alike), with a
# cache that outlives the check's temp HOME: the same sources compiled by the
# same compilers are not compiled again by the next run (pip install 51 s and
# the three builds about 30 s each with an empty cache, 2026-11-29). What is
# compiled, configured and refused is unchanged; the kill -9 build below
# compiles without it, so that it is slow enough to be killed half-way.
# COLLKIT_NO_CCACHE=1 compiles everything afresh.
USER_CCACHE=()
if [[ -z ${COLLKIT_NO_CCACHE:-} ]] && command -v ccache >/dev/null; then
    if [[ $(id -u) -eq 0 ]]; then
        CCACHE_OF_USER=/var/tmp/collkit-cluster-user-ccache
        install -d -m 700 -o "$TEST_USER" -g "$TEST_USER" "$CCACHE_OF_USER"
    else
        CCACHE_OF_USER=${XDG_CACHE_HOME:-$HOME/.cache}/collkit-cluster-user-ccache
        mkdir -p "$CCACHE_OF_USER"
    fi
    # pip builds in a new temp directory each time: paths under it are made
    # relative (basedir /tmp) and left out of the hash (nohashdir).
    USER_CCACHE=(CCACHE_DIR="$CCACHE_OF_USER" CCACHE_BASEDIR=/tmp CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
                 CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# as_user CMD: run the bash command line CMD as the user, in a clean
# environment (HOME, PATH=/usr/bin:/bin, LANG, the ccache settings above), with
# the MPI module loaded (~/.profile-mpi), in ~/work.
as_user() {
    "${AS[@]}" env -i HOME="$UHOME" PATH=/usr/bin:/bin LANG=C.UTF-8 USER="$TEST_USER" LOGNAME="$TEST_USER" \
        PIP_CACHE_DIR="$UHOME/.cache/pip" "${USER_CCACHE[@]}" \
        bash -c 'source "$HOME/.profile-mpi"; set -eo pipefail; cd "$HOME/work"; '"$1"
}
now() { date +%s.%N; }
since() { "$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }

# The user must reach MPICH; a checkout under a private directory (/root) is
# not reachable, so MPICH is copied (the wheel's tree is relocatable).
if ! "${AS[@]}" test -x "$MPICH_PREFIX/bin/mpicc" -a -r "$MPICH_PREFIX/lib/libmpi.so.12"; then
    say "$TEST_USER cannot read $MPICH_PREFIX: copying MPICH (bin, include, lib) to $T/mpich"
    mkdir "$T/mpich"
    cp -a "$MPICH_PREFIX/bin" "$MPICH_PREFIX/include" "$MPICH_PREFIX/lib" "$T/mpich/"
    chmod -R a+rX "$T/mpich"
    MPICH_PREFIX=$T/mpich
fi
MPICH_BIN=$MPICH_PREFIX/bin

# --- 1. the sdist -----------------------------------------------------------
step "1. sdist from the checkout (.venv/bin/python -m build --sdist)"
.venv/bin/python -I -c 'import build.util' 2>/dev/null || {
    say "installing the build package into .venv"
    .venv/bin/pip install -q build
}
# Built from a copy of the checkout (its files that git does not ignore, and
# .git for the commit stamp): the sdist's CMake step writes
# python/collkit/SOURCE into the tree it packs, and the checkout is not ours
# to write while others work in it.
mkdir "$T/src"
git -c safe.directory="$CHECKOUT" ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    if [[ -e $f || -L $f ]]; then printf '%s\0' "$f"; fi
done | tar -c --null -T - -f - | tar -x -C "$T/src"
cp -a .git "$T/src/.git"
if ! (cd "$T/src" && "$CHECKOUT/.venv/bin/python" -m build --sdist --outdir "$T/sdist" .) >"$T/sdist.log" 2>&1; then
    show_log "$T/sdist.log"; fail "python -m build --sdist"
fi
sdists=("$T"/sdist/collkit-*.tar.gz)
((${#sdists[@]} == 1)) && [[ -f ${sdists[0]} ]] || fail "expected one collkit-*.tar.gz in $T/sdist"
SDIST_NAME=$(basename "${sdists[0]}")
stamp=$(tar -xzOf "${sdists[0]}" "${SDIST_NAME%.tar.gz}/python/collkit/SOURCE")
[[ $stamp == "sdist of commit "* ]] || fail "the sdist's python/collkit/SOURCE says '$stamp'"
say "$SDIST_NAME ($(du -h "${sdists[0]}" | cut -f1), $stamp)"
rm -rf "$T/src"
# Handed to the user as a download would be: a copy the user owns.
cp "${sdists[0]}" "$UHOME/$SDIST_NAME"

# --- 2./3. the user's shell: one MPI, from a module -------------------------
step "2./3. $TEST_USER, HOME=$UHOME, MPICH through an environment module"
if [[ ! -f $MODULES_INIT && $(id -u) -eq 0 ]]; then
    say "installing Debian's Environment Modules (environment-modules)"
    { apt-get install -y -qq environment-modules || { apt-get update -qq && apt-get install -y -qq environment-modules; }; } \
        >"$T/apt.log" 2>&1 || say "apt-get install environment-modules failed: putting MPICH on PATH directly"
fi
if [[ -f $MODULES_INIT ]]; then
    cat > "$T/modulefiles/mpich/5.0.2" <<EOF
#%Module1.0
## MPICH 5.0.2, PyPI's mpich wheel (collkit's cluster user check)
module-whatis "MPICH 5.0.2 (PyPI wheel)"
conflict mpi
prepend-path PATH $MPICH_BIN
EOF
    chmod -R a+rX "$T/modulefiles"
    printf 'source %s\nmodule use %s\nmodule load mpich/5.0.2\n' "$MODULES_INIT" "$T/modulefiles" > "$UHOME/.profile-mpi"
    how="module load mpich/5.0.2 (Environment Modules $(dpkg-query -W -f='${Version}' environment-modules 2>/dev/null || echo '?'))"
else
    printf 'export PATH=%s:$PATH\n' "$MPICH_BIN" > "$UHOME/.profile-mpi"
    how="PATH=$MPICH_BIN:\$PATH (no Environment Modules here)"
fi
mkdir "$WORK"
[[ $(id -u) -eq 0 ]] && chown -R "$TEST_USER:" "$UHOME"
# /usr/bin holds Open MPI's mpicc and mpirun (Debian's alternatives): the
# module's bin must come first, so that the MPI on PATH is MPICH.
got=$(as_user 'echo "$(id -un) $PWD"; command -v mpicc; command -v mpiexec; echo "$PATH"')
say "as $(sed -n 1p <<<"$got"); $how"
[[ $(sed -n 2p <<<"$got") == "$MPICH_BIN/mpicc" ]] || fail "mpicc on PATH is $(sed -n 2p <<<"$got"), not MPICH's"
[[ $(sed -n 3p <<<"$got") == "$MPICH_BIN/mpiexec" ]] || fail "mpiexec on PATH is $(sed -n 3p <<<"$got"), not MPICH's"
say "PATH=$(sed -n 4p <<<"$got"): mpicc and mpiexec are MPICH's"
as_user "test -r ../$SDIST_NAME" || fail "the user cannot read the sdist"
[[ $(id -u) -ne 0 ]] || ! as_user "test -w $CHECKOUT" || fail "the user can write the checkout"

# --- 4. pip install of the sdist ---------------------------------------------
step "4. python3 -m venv v && v/bin/pip install $SDIST_NAME"
as_user 'python3 -m venv v'
t0=$(now)
if ! as_user "v/bin/pip install ../$SDIST_NAME" >"$T/pip.log" 2>&1; then
    show_log "$T/pip.log"; fail "pip install of the sdist"
fi
PIP_S=$(since "$t0")
say "pip install: ${PIP_S} s (empty pip cache: downloads numpy, matplotlib, scikit-build-core; compiles the C parts)"

# --- 5. version, mpis, check -------------------------------------------------
step "5. collkit --version, collkit mpis, collkit check --mpi mpich -n 5"
version=$(as_user 'v/bin/collkit --version')
say "$version"
[[ $version =~ ^collkit\ [0-9][0-9.]*\ \(sdist\ of\ commit\ [0-9a-f]{12} ]] || fail "collkit --version: '$version'"
as_user 'v/bin/collkit mpis' >&2
mpis_json() { as_user 'v/bin/collkit mpis --json'; }
# check_mpis PYTHON-ASSERTIONS: run over `collkit mpis --json` as `m` (by name) and `d` (all).
check_mpis() {
    mpis_json | "$PY" -c "
import json, sys
d = json.load(sys.stdin); m = {x['name']: x for x in d['mpis']}
HOME, MPICH_BIN = sys.argv[1], sys.argv[2]
$1" "$UHOME" "$MPICH_BIN" || fail "collkit mpis --json: $2"
}
check_mpis "
assert set(m) == {'mpich'}, sorted(m)
x = m['mpich']
assert x['origin'] == 'package' and x['family'] == 'mpich', x
assert x['mpicc'] == MPICH_BIN + '/mpicc', x['mpicc']          # pip's build used the module's mpicc
assert x['mpirun'].startswith(MPICH_BIN + '/'), x['mpirun']
assert x['build'].startswith(HOME + '/work/v/'), x['build']
assert not x['missing_parts'] and 'bench' in x['parts'] and 'preload' in x['parts'], x
cache = [i for i in d['installation'] if i['what'] == 'build cache'][0]['where']
assert cache == HOME + '/.cache/collkit', cache
" "the package's own build is not MPICH's, or incomplete"
say "collkit mpis: mpich, built by pip with $MPICH_BIN/mpicc, every part there"
# At run time nothing refers to the checkout (MPICH's own directory aside).
site=$(as_user 'v/bin/python -c "import collkit, os; print(os.path.dirname(collkit.__file__))"')
refs=$(LC_ALL=C grep -raoh "${CHECKOUT}[^[:space:][:cntrl:]\"':;,)]*" "$site" | LC_ALL=C grep -av "^$MPICH_PREFIX" \
       | sort -u | head -5 || true)
[[ -z $refs ]] || fail "the installed package refers to the checkout: $refs"
out=$(as_user 'v/bin/collkit check --mpi mpich -n 5 --level quick' 2>&1) || { echo "$out" >&2; fail "collkit check"; }
last=$(tail -n1 <<<"$out")
[[ $last =~ ^[1-9][0-9]*\ passed,\ 0\ failed$ ]] || { echo "$out" >&2; fail "collkit check: '$last'"; }
say "collkit check --mpi mpich -n 5 --level quick: $last"

# --- 6. a small campaign, mpi and collkit backends ---------------------------
step "6. a campaign with the mpi and collkit backends (MPICH)"
write_spec() {  # write_spec FILE NAME MPIS
    cat > "$WORK/$1" <<EOF
name = "$2"
collectives = ["allreduce"]
sizes = ["64B", "64KiB"]
ranks = [2]
mpi = $3

[backends]
mpi = ["default", "recursive_doubling"]
collkit = ["ring"]

[measure]
warmup = 1
min_iterations = 3
max_iterations = 20
time_budget_s = 0.01
timeout_s = 60
launches = 1
EOF
    [[ $(id -u) -ne 0 ]] || chown "$TEST_USER:" "$WORK/$1"
}
# check_campaign DIR N MPIS: N records, all ok, both backends under each MPI,
# the forced recursive_doubling read back from the library (records' `effective`).
check_campaign() {
    "$PY" - "$WORK/$1" "$2" "$3" <<'PY' || fail "campaign $1"
import json, sys
from pathlib import Path
d, n, mpis = Path(sys.argv[1]), int(sys.argv[2]), set(sys.argv[3].split(","))
# the last record of an id stands (a re-measure of an unstable point is appended)
recs = list({r["id"]: r for r in (json.loads(line) for line in
                                  (d / "records.jsonl").read_text().splitlines() if line.strip())}.values())
assert len(recs) == n, f"{len(recs)} points recorded, expected {n}"
# a point not ok says why (a failed Slurm job: its state, exit code and output's tail)
bad = [f'{r["id"]} {r["status"]}: {r.get("reason", "")[-800:]}' for r in recs if r["status"] != "ok"]
assert not bad, "not ok:\n" + "\n".join(bad)
assert {r["mpi"] for r in recs} == mpis, {r["mpi"] for r in recs}
for mpi in mpis:
    assert {r["backend"] for r in recs if r["mpi"] == mpi} == {"mpi", "collkit"}, mpi
    forced = [r for r in recs if r["mpi"] == mpi and r["backend"] == "mpi" and r["algorithm"] == "recursive_doubling"]
    assert forced and all("recursive_doubling" in r["effective"].values() for r in forced), \
        f"{mpi}: recursive_doubling not in effective {[r['effective'] for r in forced]}"
assert json.loads((d / "state.json").read_text())["status"] == "complete"
assert (d / "results.csv").is_file() and (d / "metadata.json").is_file()
PY
}
write_spec small.toml cluster-user '["mpich"]'
out=$(as_user 'v/bin/collkit run small.toml --out camp-mpich 2>run-mpich.log') || { echo "$out" >&2; fail "collkit run small.toml"; }
echo "$out" >&2
grep -q '^6 ok, 0 invalid, 0 failed, 0 skipped' <<<"$out" || fail "campaign summary: $(tail -n1 <<<"$out")"
check_campaign camp-mpich 6 mpich
say "campaign: 6 points ok, recursive_doubling forced in MPICH and read back"

# --- 7. preload under an MPI program -----------------------------------------
step "7. collkit preload --mpi mpich --algorithm allreduce=ring --report -- mpiexec -n 2 ./app"
cat > "$WORK/app.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, v[1024], sum[1024], ok = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 1024; i++) v[i] = rank + i;
    MPI_Allreduce(v, sum, 1024, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 1024; i++) ok &= sum[i] == size * (size - 1) / 2 + size * i;
    if (rank == 0) printf("app allreduce %s\n", ok ? "ok" : "WRONG");
    MPI_Finalize();
    return ok ? 0 : 1;
}
EOF
[[ $(id -u) -ne 0 ]] || chown "$TEST_USER:" "$WORK/app.c"
as_user 'mpicc -o app app.c'
out=$(as_user 'v/bin/collkit preload --mpi mpich --algorithm allreduce=ring --report -- mpiexec -n 2 ./app' 2>&1) \
    || { echo "$out" >&2; fail "collkit preload"; }
echo "$out" >&2
grep -q '^app allreduce ok$' <<<"$out" || fail "the program did not report a right allreduce"
grep -Eq '^allreduce +ring +1 ' <<<"$out" || fail "the preload report does not show allreduce forced to ring"
grep -q '^fallbacks to the library: none' <<<"$out" || fail "the preload fell back to the library"
# the autotuner (issue #42) as the same user: it explores from the first call, rank 0
# writes the learned rules in the working directory, and a second run reads them
out=$(as_user 'v/bin/collkit preload --mpi mpich --autotune --autotune-after 0 --autotune-out app.rules -- mpiexec -n 2 ./app' 2>&1) \
    || { echo "$out" >&2; fail "collkit preload --autotune"; }
grep -q '^app allreduce ok$' <<<"$out" || fail "the program under the autotuner did not report a right allreduce"
as_user 'grep -q "^mpi_library = MPICH" app.rules && grep -q "^# allreduce, 2 ranks (world), 4096 B, MPI_INT sum" app.rules' \
    || fail "the autotuner's rules lack the library or the class"
out=$(as_user 'v/bin/collkit preload --mpi mpich --rules app.rules -- mpiexec -n 2 ./app' 2>&1) \
    || { echo "$out" >&2; fail "collkit preload --rules of the learned rules"; }
grep -q '^app allreduce ok$' <<<"$out" || fail "the learned rules gave a wrong allreduce"
# predict, trial and replay read rules through collkit-rules of the user's build (the
# preload's own parser): the installed package finds it and reads the learned file alike
out=$(as_user 'v/bin/python -c "from collkit.program import rules_choice as r; print(len(r.load_rules(\"app.rules\", \"mpich\").lines))"' 2>&1) \
    || { echo "$out" >&2; fail "the installed package reading the learned rules (collkit-rules)"; }
want=$(as_user 'grep -cE "^(bcast|reduce|gather|scatter|allgather|reduce_scatter|allreduce|alltoall)[[:space:]]" app.rules' || true)
[[ $out == "$want" ]] || fail "the installed package read $out rules from app.rules, the file has $want"
say "preload --autotune: rules learned in the user's directory and read back (by the preload and by collkit-rules)"

# --- 8. traffic ---------------------------------------------------------------
step "8. collkit traffic --collective bcast --algorithm binomial_doubling --algorithm bine --ranks 16"
out=$(as_user 'v/bin/collkit traffic --collective bcast --algorithm binomial_doubling --algorithm bine --ranks 16' 2>&1) \
    || { echo "$out" >&2; fail "collkit traffic"; }
echo "$out" >&2
grep -Eq '^bcast +binomial_doubling +16 ' <<<"$out" && grep -Eq '^bcast +bine +16 ' <<<"$out" \
    || fail "collkit traffic: no row for each algorithm"

# --- 9. a second MPI ----------------------------------------------------------
step "9. collkit build --mpi openmpi --mpicc $OMPI_MPICC, then a campaign over both MPIs"
t0=$(now)
if ! as_user "v/bin/collkit build --mpi openmpi --mpicc $OMPI_MPICC" >"$T/build-openmpi.log" 2>&1; then
    show_log "$T/build-openmpi.log"; fail "collkit build --mpi openmpi"
fi
BUILD_S=$(since "$t0")
say "collkit build --mpi openmpi: ${BUILD_S} s"
check_mpis "
assert set(m) == {'mpich', 'openmpi'}, sorted(m)
x = m['openmpi']
assert x['family'] == 'openmpi' and x['mpicc'] == '$OMPI_MPICC' and not x['missing_parts'], x
assert x['build'].startswith(HOME + '/.cache/collkit/builds/openmpi-'), x['build']
" "openmpi is not known, or its build is incomplete"
write_spec two.toml cluster-user-two '["mpich", "openmpi"]'
out=$(as_user 'v/bin/collkit run two.toml --out camp-both 2>run-both.log') || { echo "$out" >&2; fail "collkit run two.toml"; }
echo "$out" >&2
grep -q '^12 ok, 0 invalid, 0 failed, 0 skipped' <<<"$out" || fail "campaign summary: $(tail -n1 <<<"$out")"
check_campaign camp-both 12 mpich,openmpi
say "campaign over both MPIs: 12 points ok, recursive_doubling forced in each and read back"

# --- 10. bad input --------------------------------------------------------------
step "10. bad input: one line, exit status 2, nothing left that counts as good"
# bad LABEL TEXT CMD: CMD exits 2 and its last line is collkit's one error line, containing TEXT.
bad() {
    local rc=0 out last
    out=$(as_user "$3" 2>&1) || rc=$?
    last=$(tail -n1 <<<"$out")
    if ((rc != 2)) || [[ $last != "collkit: error: "*"$2"* ]] || (($(grep -c '^collkit: error:' <<<"$out") != 1)); then
        echo "$out" >&2; fail "$1: exit status $rc (expected 2), last line: $last"
    fi
    say "$1: exit 2: ${last:0:150}"
    BAD_OUT=$out    # for checks of what else the refusal said
}
# pip install with MPICC naming a plain C compiler: pip's own exit status (1),
# CMake's error naming MPICC, and no collkit in that environment.
as_user 'python3 -m venv v-bad'
rc=0; as_user "MPICC=/usr/bin/gcc v-bad/bin/pip install --no-deps ../$SDIST_NAME" >"$T/pip-bad.log" 2>&1 || rc=$?
msg=$(tr -s ' \n' ' ' <"$T/pip-bad.log")
if ((rc == 0)) || [[ $msg != *"collkit: MPICC=/usr/bin/gcc (/usr/bin/gcc) cannot build an MPI program"*"set MPICC to an MPI compiler wrapper"* ]]; then
    show_log "$T/pip-bad.log"; fail "MPICC=/usr/bin/gcc pip install: exit status $rc, no line naming MPICC"
fi
as_user 'test ! -e v-bad/bin/collkit && ! v-bad/bin/python -c "import collkit" 2>/dev/null' \
    || fail "MPICC=/usr/bin/gcc pip install left a collkit behind"
say "MPICC=/usr/bin/gcc pip install: pip exit $rc: collkit: MPICC=/usr/bin/gcc (/usr/bin/gcc) cannot build an MPI program ..."
bad "--mpicc a plain C compiler" "--mpicc /usr/bin/gcc cannot build an MPI program" \
    'v/bin/collkit build --mpi x --mpicc /usr/bin/gcc'
bad "a cache directory that is not writable" "is not writable" \
    "COLLKIT_CACHE=$T/readonly/cache v/bin/collkit build --mpi y --mpicc $OMPI_MPICC"
bad "a name with a space" "is not a valid MPI name" "v/bin/collkit build --mpi 'a b' --mpicc $OMPI_MPICC"
bad "a name with /" "is not a valid MPI name" "v/bin/collkit build --mpi a/b --mpicc $OMPI_MPICC"
bad "a second MPI under a known name" "an MPI named 'mpich' is known already" \
    "v/bin/collkit build --mpi mpich --mpicc $OMPI_MPICC"
# An MPI whose programs cannot start: refused by the one-file probe, before
# anything is compiled.
bad "an MPI whose programs cannot start" "an MPI program does not start with /bin/false" \
    "v/bin/collkit build --mpi nostart --mpicc $OMPI_MPICC --mpirun /bin/false"
[[ $BAD_OUT != *"compiling"* ]] || { echo "$BAD_OUT" >&2; fail "a launcher that cannot start programs was found only after compiling"; }

# A build killed with kill -9 half-way (its whole process group: collkit,
# cmake, make, the compilers), then started again.
say "kill -9: collkit build --mpi openmpi-again, killed half-way through compiling"
setsid "${AS[@]}" env -i HOME="$UHOME" PATH=/usr/bin:/bin LANG=C.UTF-8 USER="$TEST_USER" LOGNAME="$TEST_USER" \
    bash -c 'source "$HOME/.profile-mpi"; cd "$HOME/work" && exec v/bin/collkit build --mpi openmpi-again --mpicc '"$OMPI_MPICC" \
    >"$T/build-killed.log" 2>&1 &
BG_PGID=$!
for _ in $(seq 3000); do  # a hang guard (10 min): the loop ends when the build does
    grep -Eq 'compiling: [4-9][0-9]%' "$T/build-killed.log" && break
    kill -0 "$BG_PGID" 2>/dev/null || break
    sleep 0.2
done
grep -Eq 'compiling: [4-9][0-9]%' "$T/build-killed.log" && kill -0 "$BG_PGID" 2>/dev/null \
    || { show_log "$T/build-killed.log"; fail "the build to kill never got half-way while running"; }
kill -9 -- "-$BG_PGID"
wait "$BG_PGID" 2>/dev/null || true
BG_PGID=""
say "killed at $(grep -Eo 'compiling: [0-9]+%' "$T/build-killed.log" | tail -n1)"
ls -d "$UHOME"/.cache/collkit/builds/openmpi-again-*/tree >/dev/null 2>&1 || fail "the killed build left no tree: killed too late?"
check_mpis "
assert 'openmpi-again' not in m or not m['openmpi-again']['build'], m.get('openmpi-again')
" "the killed build counts as good"
bad "a killed build is not usable" "no MPI named 'openmpi-again' is known" \
    'v/bin/collkit check --mpi openmpi-again -n 2 --level quick'
if ! as_user "v/bin/collkit build --mpi openmpi-again --mpicc $OMPI_MPICC" >"$T/build-again.log" 2>&1; then
    show_log "$T/build-again.log"; fail "the build started again after kill -9"
fi
say "started again: $(grep -Eo "'openmpi-again' is ready.*" "$T/build-again.log")"
write_spec again.toml cluster-user-again '["openmpi-again"]'
out=$(as_user 'v/bin/collkit run again.toml --out camp-again 2>run-again.log') || { echo "$out" >&2; fail "campaign on the rebuilt MPI"; }
grep -q '^6 ok, 0 invalid, 0 failed, 0 skipped' <<<"$out" || fail "campaign on the rebuilt MPI: $(tail -n1 <<<"$out")"
check_campaign camp-again 6 openmpi-again
say "the rebuilt openmpi-again runs a campaign: 6 points ok"
# Nothing of the bad input counts: the known MPIs are exactly the good ones,
# and the cache registers nothing else.
check_mpis "
assert set(m) == {'mpich', 'openmpi', 'openmpi-again'}, sorted(m)
assert all(x['build'] and not x['missing_parts'] for x in m.values()), m
" "the known MPIs are not exactly mpich, openmpi, openmpi-again"
regs=$(cd "$UHOME/.cache/collkit/mpis" && LC_ALL=C ls)
[[ $regs == $'openmpi-again.json\nopenmpi.json' ]] || fail "the cache registers: $(tr '\n' ' ' <<<"$regs")"

# --- 11. Slurm ------------------------------------------------------------------
step "11. a campaign through the local Slurm, with a platform file naming no bench path"
# A real one-node Slurm on localhost, started as root by the tests' fixture
# (tests/python/slurm_fixture.py) and stopped by its pids at exit. The user's
# platform file names the MPI by its mpicc and a module line, no bench path:
# collkit finds that MPI's build in the user's cache (step 9 made it: the same
# mpicc, the same identity) on the "login node", and the jobs run that
# collkit-bench as the user. (Building into a fresh cache on the way is
# tests/python/test_slurm.py's test_campaign_through_slurm_builds_the_bench_once_into_the_cache.)
if [[ $(id -u) -ne 0 ]]; then
    say "skipped: starting a Slurm needs root"
else
    read -r SLURM_CONF_PATH SLURM_PIDS < <(PYTHONPATH="$CHECKOUT/tests/python" "$CHECKOUT/.venv/bin/python" -c '
import pathlib, sys
import slurm_fixture as f
why = f.unavailable()
if why:
    print("none", why.replace(" ", "_")); sys.exit(0)
c = f.start(pathlib.Path(sys.argv[1]))
print(c.conf, " ".join(str(p.pid) for p in c.procs), c.munged_pid or "")
' "$T/slurm")
    [[ $SLURM_CONF_PATH != none ]] || fail "no local Slurm: $SLURM_PIDS (make setup-tests installs slurm-wlm munge)"
    printf '%s\n' 'name = "local-slurm"' '' '[mpi.openmpi]' "mpicc = \"$OMPI_MPICC\"" \
        'modules = ["export COLLKIT_USER_MODULE=loaded"]' '' '[slurm]' 'launcher = ["mpirun"]' \
        'time_limit = "5"' 'poll_s = 0.5' > "$WORK/slurm-platform.toml"
    chown "$TEST_USER:" "$WORK/slurm-platform.toml"
    write_spec slurm.toml cluster-user-slurm '["openmpi"]'
    start=$(now)
    out=$(as_user "export SLURM_CONF=$SLURM_CONF_PATH; "'v/bin/collkit run slurm.toml --platform slurm-platform.toml --out camp-slurm 2>run-slurm.log') \
        || { show_log "$WORK/run-slurm.log"; fail "the campaign through Slurm"; }
    # Seen once (2026-11-28, not reproduced since in 20 runs beside three CPU hogs): a job
    # exited non-zero and 2 of 6 points failed. A failure now shows each point's reason,
    # which carries the job's Slurm state, exit code and output tail, and the jobs' states.
    grep -q '^6 ok, 0 invalid, 0 failed, 0 skipped' <<<"$out" \
        || { show_log "$WORK/run-slurm.log"
             as_user "export SLURM_CONF=$SLURM_CONF_PATH; v/bin/collkit status camp-slurm" >&2 || true
             check_campaign camp-slurm 6 openmpi
             fail "campaign through Slurm: $(tail -n1 <<<"$out")"; }
    check_campaign camp-slurm 6 openmpi
    grep -q "'openmpi' is up to date ($UHOME/.cache/collkit/builds/openmpi-" "$WORK/run-slurm.log" \
        || fail "the Slurm campaign did not find openmpi's build in the user's cache on the login node"
    grep -q "$UHOME/.cache/collkit/builds/openmpi-[0-9a-f]*/prefix/bin/collkit-bench" "$WORK"/camp-slurm/jobs/job-*.sbatch \
        || fail "the job scripts do not run the cache's collkit-bench"
    grep -q "export COLLKIT_USER_MODULE=loaded" "$WORK"/camp-slurm/jobs/job-*.sbatch || fail "the module line is not in the job script"
    say "Slurm: the build found on the login node, 6 points ok through sbatch ($(since "$start") s)"
fi

printf '\n[cluster-user] timings (%s, %s cores): pip install of the sdist %s s, collkit build --mpi openmpi %s s\n' \
    "$(hostname)" "$(nproc)" "$PIP_S" "$BUILD_S" >&2
echo "cluster user check: ok"
