/* Pairwise-exchange alltoall (MPICH; Thakur, Rabenseifner, Gropp 2005; Open
 * MPI coll/base pairwise): p-1 steps of one sendrecv each.
 *
 * When p is a power of two, step i pairs rank with rank XOR i: every step is
 * a perfect matching, so each rank talks to exactly one peer in both
 * directions, which suits networks where a node has a single port. For other
 * p, step i sends to rank + i and receives from rank - i (mod p); each step is
 * then a shift permutation and still contention-free in the logical sense.
 *
 * In place, a step would receive into the very block it sends (XOR partner)
 * or into a block whose input is still to be sent (rank - i = rank + j for a
 * later step j), so the input is copied aside once. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_alltoall_pairwise(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                         MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint extent;
    ck_tmp tmp = {0};
    const void *src;

    CK_TRY(ck_alltoall_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &tmp, &src));
    if (src == NULL) goto out;
    const int tag = CK_TAG(CK_ALLTOALL);
    if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(ck_elem(sbuf, (size_t)rank * count, extent),
                       ck_elem(rbuf, (size_t)rank * count, extent), count, dt));

    const int pow2 = ck_is_pow2(size);
    CK_SPAN_BEGIN("exchange");
    for (int i = 1; i < size; i++) {
        CK_SPAN_BEGIN_STEP("step", i - 1);
        int to, from;
        if (pow2) {
            to = from = rank ^ i;
        } else {
            to = (rank + i) % size;
            from = (rank - i + size) % size;
        }
        CK_TRY(ck_sendrecv(ck_elem(src, (size_t)to * count, extent), count, to,
                           ck_elem(rbuf, (size_t)from * count, extent), count, from, dt,
                           tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("exchange");
out:
    ck_tmp_free(&tmp);
    return rc;
}
