/* Neighbour-exchange allgather (Chen et al. 2005, Open MPI's "neighbor"):
 * for even p, ranks 2j and 2j+1 form a pair. Step 0 swaps single blocks
 * inside each pair, so both hold the aligned pair of blocks {2j, 2j+1}. In
 * each of the p/2-1 later steps a rank alternately talks to its other and
 * its own-pair neighbour and forwards the two-block pair it received in the
 * previous step; even ranks collect pairs j-1, j+1, j-2, j+2, ... and odd
 * ranks the mirror order, so every pair arrives exactly once after p/2 steps
 * in total. Two-block messages halve the ring's step count at the same
 * volume. The pairing is undefined for odd p, where, as Open MPI does, the
 * ring algorithm runs instead. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_allgather_neighbor_exchange(const void *sbuf, void *rbuf, size_t count,
                                   MPI_Datatype dt, MPI_Comm comm)
{
    int rc, rank, size;
    MPI_Aint ext;
    CK_TRY(ck_check_exchange(sbuf, rbuf, count, dt, comm, &rank, &size));
    if (size % 2 != 0) return ck_allgather_ring(sbuf, rbuf, count, dt, comm);
    if (count == 0) return MPI_SUCCESS;
    CK_TRY(ck_type_extent(dt, &ext));
    if (sbuf != MPI_IN_PLACE)
        CK_TRY(ck_copy(sbuf, ck_elem(rbuf, (size_t)rank * count, ext), count, dt));

    const int tag = CK_TAG(CK_ALLGATHER);
    const int even = rank % 2 == 0;
    const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    const int mate = even ? right : left; /* the other rank of this pair */
    const int other = even ? left : right; /* neighbour in the adjacent pair */
    const int npairs = size / 2, pair = rank / 2;

    CK_SPAN_BEGIN("allgather");
    CK_SPAN_BEGIN_STEP("step", 0);
    CK_TRY(ck_sendrecv(ck_elem(rbuf, (size_t)rank * count, ext), count, mate,
                       ck_elem(rbuf, (size_t)mate * count, ext), count, mate, dt, tag, comm));
    CK_SPAN_END("step");

    int last = pair; /* pair received in the previous step, forwarded next */
    for (int i = 1; i < npairs; i++) {
        CK_SPAN_BEGIN_STEP("step", i);
        const int odd_step = i % 2;
        const int dist = (i + 1) / 2;
        const int partner = odd_step ? other : mate;
        /* even ranks look left on odd steps, odd ranks look right */
        const int toward_left = odd_step == even;
        int next = toward_left ? pair - dist : pair + dist;
        next = ((next % npairs) + npairs) % npairs;
        CK_TRY(ck_sendrecv(ck_elem(rbuf, (size_t)(2 * last) * count, ext), 2 * count, partner,
                           ck_elem(rbuf, (size_t)(2 * next) * count, ext), 2 * count, partner,
                           dt, tag, comm));
        last = next;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
out:
    return rc;
}
