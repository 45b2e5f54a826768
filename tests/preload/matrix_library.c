/* ck_matrix_library: the correctness matrix (tests/matrix.c, unchanged)
 * compiled with ck_algorithm_call renamed to this function, which calls the
 * plain MPI_* collective instead (ck_library_call). Run under the preload with
 * an algorithm forced, every matrix case goes through the shim to that
 * algorithm (or a counted fallback) and the matrix checks the result. Pick a
 * constraint-free algorithm as the matrix's label, so that it expects no
 * refusal (tests/preload/sweep.py does). */
#include <collkit/collkit.h>
#include <limits.h>

int ckp_matrix_call(const ck_algorithm *a, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                    MPI_Op op, int root, MPI_Comm comm);

int ckp_matrix_call(const ck_algorithm *a, const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                    MPI_Op op, int root, MPI_Comm comm)
{
    if (!a) return MPI_ERR_ARG;
    if (count > INT_MAX) return MPI_ERR_COUNT;
    return ck_library_call(a->collective, sbuf, rbuf, count, dt, op, root, comm);
}
