#!/usr/bin/env bash
# The full libcollkit-preload sweep (docs/preload.md): every libcollkit algorithm
# forced alone, one at a time, on each program under each MPI, at
# COLLKIT_PRELOAD_FULL_RANKS (default 1..8): the correctness matrix through the
# plain MPI_* names, the Fortran programs and hpcc (Open MPI). Hours on a
# 2-core machine; CI runs the reduced set (ctest -L preload).
set -uo pipefail
cd "$(dirname "$0")/.."
RANKS="${COLLKIT_PRELOAD_FULL_RANKS:-1,2,3,4,5,6,7,8}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export MPIR_CVAR_CH4_PROGRESS_THROTTLE=1 MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT=1 \
       MPIR_CVAR_POLLS_BEFORE_YIELD=1
status=0
sweep() {  # sweep <mpi> <mpirun> <program> <path> [ranks]
    local mpi=$1 mpirun=$2 prog=$3 path=$4 ranks=${5:-$RANKS}
    [[ -x $path ]] || { echo "skip $prog under $mpi: $path not built"; return; }
    python3 tests/preload/sweep.py --mpi "$mpi" --mpirun "$mpirun" \
        --preload "build/$mpi/preload/libcollkit-preload.so" --registry "build/$mpi/registry.json" \
        --ranks "$ranks" --program "$prog" -- "$path" || status=1
}
for mpi in openmpi mpich; do
    cmake --build "build/$mpi" -j2 >/dev/null || exit 1
done
sweep openmpi /usr/bin/mpirun.openmpi matrix build/openmpi/tests/preload/ck_matrix_library
sweep mpich "$PWD/.mpich/bin/mpirun" matrix build/mpich/tests/preload/ck_matrix_library
sweep openmpi /usr/bin/mpirun.openmpi fortran_use_mpi build/openmpi/tests/preload/ck_fortran_use_mpi
sweep openmpi /usr/bin/mpirun.openmpi fortran_mpif build/openmpi/tests/preload/ck_fortran_mpif
# hpcc's HPL needs a P x Q grid of all ranks; it runs at the same counts.
sweep openmpi /usr/bin/mpirun.openmpi hpcc "$(command -v hpcc || echo /usr/bin/hpcc)"
# mpi4py's own collective tests (buffers, objects, intercommunicators) under
# MPICH: mpi4py built from source against the MPICH wheel (about 13 minutes
# here, so not in `make setup` or CI), into build/mpi4py-mpich, once.
M4P=build/mpi4py-mpich
M4P_VERSION=4.1.2
if [[ ! -x $M4P/venv/bin/python ]] || ! "$M4P/venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
    echo "building mpi4py $M4P_VERSION against MPICH into $M4P (about 13 minutes)"
    python3 -m venv "$M4P/venv"
    MPICC="$PWD/.mpich/bin/mpicc" "$M4P/venv/bin/pip" install -q --no-binary mpi4py "mpi4py==$M4P_VERSION" || exit 1
fi
if [[ ! -f $M4P/mpi4py-$M4P_VERSION/test/runtests.py ]]; then
    "$M4P/venv/bin/pip" download -q --no-deps --no-binary :all: "mpi4py==$M4P_VERSION" -d "$M4P" || exit 1
    tar -xzf "$M4P/mpi4py-$M4P_VERSION.tar.gz" -C "$M4P" || exit 1
fi
python3 tests/preload/sweep.py --mpi mpich --mpirun "$PWD/.mpich/bin/mpirun" \
    --preload build/mpich/preload/libcollkit-preload.so --registry build/mpich/registry.json \
    --ranks "$RANKS" --program mpi4py -- "$PWD/$M4P/venv/bin/python" \
    "$PWD/$M4P/mpi4py-$M4P_VERSION/test/runtests.py" -q test_cco_buf test_cco_obj \
    test_cco_buf_inter test_cco_obj_inter || status=1
exit $status
