/* Bruck alltoall (Bruck, Ho, Kipnis, Upfal, Weathersby 1997; as in MPICH and
 * Open MPI coll/base): ceil(log2 p) steps for any p, at the cost of sending
 * every block about log2(p)/2 times. It wins for small blocks, where the
 * p-1 start-ups of the pairwise or linear exchanges dominate.
 *
 * 1. Rotate locally: work block j holds the input block for rank + j, so a
 *    block's index is the distance it still has to travel.
 * 2. At step k, every work block whose index has bit k set moves 2^k ranks
 *    forward: packed into one message to rank + 2^k, while the same positions
 *    are refilled from rank - 2^k. Summing the bits of j moves block j exactly
 *    j ranks, so afterwards work block j holds what rank - j sent to us.
 * 3. Rotate back: work block j goes to rbuf block rank - j.
 *
 * The work buffer is separate from rbuf, so MPI_IN_PLACE needs nothing extra:
 * step 1 reads rbuf before step 3 overwrites it. */
#include "../core/ck_core.h"
#include "collkit/spans.h"

int ck_alltoall_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp work = {0}, spack = {0}, rpack = {0};

    /* A step packs up to p/2 blocks into one message. Every rank computes
     * the same bound, so all of them refuse together. */
    const void *src;
    CK_TRY(ck_alltoall_blocks_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &src,
                                   &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLTOALL);
    const size_t half = (size_t)(size / 2) * count; /* most blocks with one bit set */
    CK_TRY(ck_tmp_alloc(&work, (size_t)size * count, dt));
    CK_TRY(ck_tmp_alloc(&spack, half, dt));
    CK_TRY(ck_tmp_alloc(&rpack, half, dt));

    CK_SPAN_BEGIN("rotate");
    CK_TRY(ck_rotate(src, work.buf, rank, size, count, dt));
    CK_SPAN_END("rotate");

    CK_SPAN_BEGIN("exchange");
    for (int dist = 1; dist < size; dist <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(dist));
        size_t nb = 0;
        for (int j = dist; j < size; j++) {
            if (!(j & dist)) continue;
            CK_TRY(ck_copy(ck_elem(work.buf, (size_t)j * count, extent),
                           ck_elem(spack.buf, nb * count, extent), count, dt));
            nb++;
        }
        CK_TRY(ck_sendrecv(spack.buf, nb * count, (rank + dist) % size, rpack.buf,
                           nb * count, (rank - dist + size) % size, dt, tag, comm));
        nb = 0;
        for (int j = dist; j < size; j++) {
            if (!(j & dist)) continue;
            CK_TRY(ck_copy(ck_elem(rpack.buf, nb * count, extent),
                           ck_elem(work.buf, (size_t)j * count, extent), count, dt));
            nb++;
        }
        CK_SPAN_END("step");
    }
    CK_SPAN_END("exchange");

    CK_SPAN_BEGIN("unrotate");
    for (int j = 0; j < size; j++)
        CK_TRY(ck_copy(ck_elem(work.buf, (size_t)j * count, extent),
                       ck_elem(rbuf, (size_t)((rank - j + size) % size) * count, extent),
                       count, dt));
    CK_SPAN_END("unrotate");
out:
    ck_tmp_free(&work);
    ck_tmp_free(&spack);
    ck_tmp_free(&rpack);
    return rc;
}
