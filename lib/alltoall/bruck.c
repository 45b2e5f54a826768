/* Bruck alltoall (Bruck, Ho, Kipnis, Upfal, Weathersby 1997; as in MPICH and
 * Open MPI coll/base): ceil(log2 p) steps for any p, at the cost of sending
 * every block about log2(p)/2 times. It wins for small blocks, where the
 * p-1 start-ups of the pairwise or linear exchanges dominate.
 *
 * 1. Rotate locally: work block j holds the input block for rank + j, so a
 *    block's index is the distance it still has to travel.
 * 2. At step k, every work block whose index has bit k set moves 2^k ranks
 *    forward: one message to rank + 2^k, while the same positions are
 *    refilled from rank - 2^k. Summing the bits of j moves block j exactly
 *    j ranks, so afterwards work block j holds what rank - j sent to us.
 * 3. Rotate back: work block j goes to rbuf block rank - j.
 *
 * Where the blocks live (the schedule above is the same either way):
 *
 * - A step of few bytes packs its blocks into one buffer and unpacks what
 *   arrives: copying a few hundred bytes costs less than the datatype that
 *   would spare it (scattered.h). The last step's blocks are one run of the
 *   work buffer and leave from there.
 * - A larger step copies nothing. rbuf is free until step 3, so it serves as
 *   a second work buffer: each index j lives in the work buffer or in rbuf
 *   (in_rbuf[j]), a step sends its blocks from where they are and receives
 *   their replacements into the other buffer at the same index, through
 *   datatypes of the blocks' addresses (scattered.h), and step 3 then moves
 *   each block into its place in rbuf, swapping where both blocks of a place
 *   are in rbuf (rank - j is an involution of j: places pair up). The local
 *   copies are the two rotations (packing added two per block and step),
 *   and the only temporary is the p-block work buffer, as in Open MPI
 *   (packing needed two). Index 0 never moves, so a message's lowest block,
 *   the buffer it names, is never the start of an allocation: SimGrid's
 *   SMPI, which checks a message's extent against the allocation its buffer
 *   starts, accepts a datatype that spans both buffers.
 *
 * MPI_IN_PLACE needs nothing extra: step 1 reads rbuf before anything
 * writes it. */
#include "../core/ck_core.h"
#include "../core/scattered.h"
#include "collkit/spans.h"

#include <stdlib.h>

/* Step 3 when the blocks are spread over work and rbuf: block j (in work or
 * in rbuf at index j) goes to rbuf block (rank - j) mod p. */
static int unrotate_spread(char *work, char *rbuf, const unsigned char *in_rbuf, int rank, int size,
                           size_t count, MPI_Datatype dt, MPI_Aint extent)
{
    int rc = MPI_SUCCESS;
    for (int j = 0; j < size && rc == MPI_SUCCESS; j++) {
        const int d = (rank - j + size) % size;
        if (d < j) continue;   /* the pair {j, d} is done from its smaller index */
        char *wj = ck_elem(work, (size_t)j * count, extent), *wd = ck_elem(work, (size_t)d * count, extent);
        char *rj = ck_elem(rbuf, (size_t)j * count, extent), *rd = ck_elem(rbuf, (size_t)d * count, extent);
        if (d == j) {
            if (!in_rbuf[j]) rc = ck_copy(wj, rj, count, dt);
        } else if (in_rbuf[j] && in_rbuf[d]) {
            /* both in rbuf, each in the other's place: swap through work's
             * slot j, free since block j does not live there */
            rc = ck_copy(rj, wj, count, dt);
            if (rc == MPI_SUCCESS) rc = ck_copy(rd, rj, count, dt);
            if (rc == MPI_SUCCESS) rc = ck_copy(wj, rd, count, dt);
        } else if (in_rbuf[j]) {
            /* rbuf block d is free (block d lives in work) */
            rc = ck_copy(rj, rd, count, dt);
            if (rc == MPI_SUCCESS) rc = ck_copy(wd, rj, count, dt);
        } else if (in_rbuf[d]) {
            rc = ck_copy(rd, rj, count, dt);
            if (rc == MPI_SUCCESS) rc = ck_copy(wj, rd, count, dt);
        } else {
            rc = ck_copy(wj, rd, count, dt);
            if (rc == MPI_SUCCESS) rc = ck_copy(wd, rj, count, dt);
        }
    }
    return rc;
}

/* Step 2 for steps that pay for a datatype: no local copy. */
static int exchange_in_place(char *work, char *rbuf, unsigned char *in_rbuf, int rank, int size,
                             size_t count, MPI_Datatype dt, MPI_Aint extent, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    char **from = malloc((size_t)size * sizeof *from), **to = malloc((size_t)size * sizeof *to);
    MPI_Aint *disp = malloc((size_t)size * sizeof *disp);
    if (from == NULL || to == NULL || disp == NULL) rc = MPI_ERR_NO_MEM;
    for (int dist = 1; dist < size && rc == MPI_SUCCESS; dist <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(dist));
        int nb = 0;
        for (int j = dist; j < size; j++) {
            if (!(j & dist)) continue;
            char *w = ck_elem(work, (size_t)j * count, extent), *r = ck_elem(rbuf, (size_t)j * count, extent);
            from[nb] = in_rbuf[j] ? r : w;
            to[nb] = in_rbuf[j] ? w : r;
            in_rbuf[j] ^= 1;
            nb++;
        }
        ck_scattered s = {NULL, 1, MPI_DATATYPE_NULL, 0}, r = {NULL, 1, MPI_DATATYPE_NULL, 0};
        rc = ck_scattered_make(nb, from, disp, count, dt, &s);
        if (rc == MPI_SUCCESS) rc = ck_scattered_make(nb, to, disp, count, dt, &r);
        if (rc == MPI_SUCCESS)
            rc = ck_sendrecv_scattered(&s, (rank + dist) % size, &r, (rank - dist + size) % size, tag, comm);
        ck_scattered_free(&s);
        ck_scattered_free(&r);
        CK_SPAN_END("step");
    }
    free(from);
    free(to);
    free(disp);
    return rc;
}

/* Step 2 for small steps: pack, exchange, unpack. A step with 2 dist >= p
 * (the last; every step for p <= 3) moves blocks dist..p-1, one contiguous
 * run of the work buffer: it is sent from there, unpacked. */
static int exchange_packed(char *work, int rank, int size, size_t count, MPI_Datatype dt,
                           MPI_Aint extent, int tag, MPI_Comm comm)
{
    int rc;
    ck_tmp spack = {0}, rpack = {0};
    const size_t half = (size_t)(size / 2) * count; /* most blocks with one bit set */
    CK_TRY(ck_tmp_alloc(&rpack, half, dt));
    for (int dist = 1; dist < size; dist <<= 1) {
        CK_SPAN_BEGIN_STEP("step", ck_log2_ceil(dist));
        size_t nb = 0;
        const char *out = ck_elem(work, (size_t)dist * count, extent);
        if (2 * dist < size) {
            if (spack.mem == NULL) CK_TRY(ck_tmp_alloc(&spack, half, dt));
            for (int j = dist; j < size; j++) {
                if (!(j & dist)) continue;
                CK_TRY(ck_copy(ck_elem(work, (size_t)j * count, extent),
                               ck_elem(spack.buf, nb * count, extent), count, dt));
                nb++;
            }
            out = spack.buf;
        } else {
            nb = (size_t)(size - dist);
        }
        CK_TRY(ck_sendrecv(out, nb * count, (rank + dist) % size, rpack.buf,
                           nb * count, (rank - dist + size) % size, dt, tag, comm));
        nb = 0;
        for (int j = dist; j < size; j++) {
            if (!(j & dist)) continue;
            CK_TRY(ck_copy(ck_elem(rpack.buf, nb * count, extent),
                           ck_elem(work, (size_t)j * count, extent), count, dt));
            nb++;
        }
        CK_SPAN_END("step");
    }
out:
    ck_tmp_free(&spack);
    ck_tmp_free(&rpack);
    return rc;
}

int ck_alltoall_bruck(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                      MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp work = {0};
    unsigned char *in_rbuf = NULL;

    /* A step moves up to p/2 blocks in one message. Every rank computes
     * the same bound, so all of them refuse together. */
    const void *src;
    CK_TRY(ck_alltoall_blocks_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &src,
                                   &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLTOALL);
    CK_TRY(ck_tmp_alloc(&work, (size_t)size * count, dt));

    CK_SPAN_BEGIN("rotate");
    CK_TRY(ck_rotate(src, work.buf, rank, size, count, dt));
    CK_SPAN_END("rotate");

    /* A step's usual message (p/2 blocks) decides, from values equal on every rank. */
    const int typed = ck_scattered_pays(size / 2, count, dt);
    CK_SPAN_BEGIN("exchange");
    if (typed) {
        in_rbuf = calloc((size_t)size, 1);
        if (in_rbuf == NULL) CK_TRY(MPI_ERR_NO_MEM);
        CK_TRY(exchange_in_place(work.buf, rbuf, in_rbuf, rank, size, count, dt, extent, tag, comm));
    } else {
        CK_TRY(exchange_packed(work.buf, rank, size, count, dt, extent, tag, comm));
    }
    CK_SPAN_END("exchange");

    CK_SPAN_BEGIN("unrotate");
    if (typed) {
        CK_TRY(unrotate_spread(work.buf, rbuf, in_rbuf, rank, size, count, dt, extent));
    } else {
        for (int j = 0; j < size; j++)
            CK_TRY(ck_copy(ck_elem(work.buf, (size_t)j * count, extent),
                           ck_elem(rbuf, (size_t)((rank - j + size) % size) * count, extent), count, dt));
    }
    CK_SPAN_END("unrotate");
out:
    free(in_rbuf);
    ck_tmp_free(&work);
    return rc;
}
