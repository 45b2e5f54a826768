#!/usr/bin/env bash
# The full libcollkit-preload sweep (docs/preload.md): every libcollkit algorithm
# forced alone, one at a time, on each program under each MPI, at
# COLLKIT_PRELOAD_FULL_RANKS (default 1..8): the correctness matrix through the
# plain MPI_* names, the Fortran programs (both MPIs) and hpcc (Open MPI). Hours on a
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
sweep openmpi /usr/bin/mpirun.openmpi fortran_f08 build/openmpi/tests/preload/ck_fortran_f08
# Under MPICH through Debian's Fortran binding on the wheel's libmpi.so.12
# (build/mpich-fortran, from scripts/setup.sh; skipped when not built).
sweep mpich "$PWD/.mpich/bin/mpirun" fortran_use_mpi build/mpich/tests/preload/ck_fortran_use_mpi
sweep mpich "$PWD/.mpich/bin/mpirun" fortran_mpif build/mpich/tests/preload/ck_fortran_mpif
sweep mpich "$PWD/.mpich/bin/mpirun" fortran_f08 build/mpich/tests/preload/ck_fortran_f08
# hpcc's HPL needs a P x Q grid of all ranks; it runs at the same counts.
sweep openmpi /usr/bin/mpirun.openmpi hpcc "$(command -v hpcc || echo /usr/bin/hpcc)"
# mpi4py's own collective tests (buffers, objects, intercommunicators) under
# MPICH: mpi4py's binary wheel in .mpich and its sdist's tests in build/,
# both installed by scripts/setup.sh (seconds; nothing is compiled).
M4P_VERSION=4.1.2
M4P_TESTS=build/mpi4py-$M4P_VERSION/test
if ! .mpich/bin/python -c 'from mpi4py import MPI' 2>/dev/null || [[ ! -f $M4P_TESTS/runtests.py ]]; then
    echo "mpi4py or its tests missing: run make setup"; exit 1
fi
python3 tests/preload/sweep.py --mpi mpich --mpirun "$PWD/.mpich/bin/mpirun" \
    --preload build/mpich/preload/libcollkit-preload.so --registry build/mpich/registry.json \
    --ranks "$RANKS" --program mpi4py -- "$PWD/.mpich/bin/python" \
    "$PWD/$M4P_TESTS/runtests.py" -q test_cco_buf test_cco_obj \
    test_cco_buf_inter test_cco_obj_inter || status=1
exit $status
