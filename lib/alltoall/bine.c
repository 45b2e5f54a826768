/* Bine alltoall: Bruck's store-and-forward scheme (ceil(log2 p) steps, any
 * p) with the distances of a Bine butterfly written in negabinary (De Sensi
 * et al., "Bine Trees: Enhancing Collective Operations by Optimizing
 * Communication Locality").
 *
 * Work block j holds a block that still has to travel j ranks forward. Bruck
 * writes j in binary and moves it 2^k ranks at step k; here j is written in
 * negabinary on s = ceil(log2 p) digits by the modulo-p rule of
 * lib/core/bine.h (j itself when it is representable as a positive s-digit
 * negabinary number, j - p otherwise), and step k moves the blocks whose
 * digit k is set by (-2)^k: +1, -2, +4, -8, ... Summing the digits moves a
 * block exactly j mod p ranks, but a block for a rank in the left part of the
 * ring travels leftwards (net displacement j - p), so data goes the short way
 * round, as Bine trees do.
 *
 * Every rank uses the same slot layout of the work buffer, rebuilt at each
 * step: the blocks to keep move left (in order) and the blocks to send right,
 * so the send is one contiguous region and the received blocks land
 * contiguously right after the kept ones. A final permutation puts the block
 * in the slot of offset j to rbuf block rank - j.
 *
 * Cost: ceil(log2 p) steps; each step sends the blocks with one digit set,
 * about p/2 blocks, i.e. about (n/2) ceil(log2 p) bytes in all (n = p *
 * count * extent), plus one local copy of the work buffer per step. */
#include <stdlib.h>

#include "../core/ck_core.h"
#include "../core/bine.h"
#include "collkit/spans.h"

int ck_alltoall_bine(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                     MPI_Comm comm)
{
    int rc, rank, size, done;
    MPI_Aint extent;
    ck_tmp wa = {0}, wb = {0}, spack = {0};
    int *slot = NULL, *next = NULL;
    uint32_t *digits = NULL;

    /* A step may send up to p - 1 blocks in one message; every rank computes
     * the same bound, so all of them refuse together. */
    const void *src;
    CK_TRY(ck_alltoall_blocks_open(sbuf, rbuf, count, dt, comm, &rank, &size, &extent, &src,
                                   &done));
    if (done) goto out;

    const int tag = CK_TAG(CK_ALLTOALL), p = size, s = ck_log2_ceil(p);
    const size_t total = (size_t)p * count;
    slot = malloc((size_t)p * sizeof *slot);
    next = malloc((size_t)p * sizeof *next);
    digits = malloc((size_t)p * sizeof *digits);
    if (slot == NULL || next == NULL || digits == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    /* s-digit negabinary covers the 2^s >= p consecutive integers
     * [max - 2^s + 1, max], so j or j - p always fits. */
    const int64_t max = ck_nb_max_positive(s);
    for (int j = 0; j < p; j++) {
        digits[j] = ck_nb_encode(j <= max ? j : (int64_t)j - p);
        slot[j] = j; /* slot i holds offset slot[i] */
    }
    CK_TRY(ck_tmp_alloc(&wa, total, dt));
    CK_TRY(ck_tmp_alloc(&wb, total, dt));
    CK_TRY(ck_tmp_alloc(&spack, total, dt));

    /* Rotate: slot j holds the input block for rank + j. */
    CK_SPAN_BEGIN("rotate");
    CK_TRY(ck_rotate(src, wa.buf, rank, p, count, dt));
    CK_SPAN_END("rotate");

    char *cur = wa.buf, *oth = wb.buf;
    CK_SPAN_BEGIN("exchange");
    for (int k = 0; k < s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int64_t d = (k % 2 == 0) ? ((int64_t)1 << k) : -((int64_t)1 << k);
        const int to = (int)((((int64_t)rank + d) % p + p) % p);
        const int from = (int)((((int64_t)rank - d) % p + p) % p);
        /* Stable partition of the slots: kept blocks to the left of oth,
         * blocks to send packed in spack, runs of slots copied at once. */
        int nkeep = 0, nsend = 0;
        for (int i = 0; i < p;) {
            const int sending = (digits[slot[i]] >> k) & 1;
            int e = i + 1;
            while (e < p && (int)((digits[slot[e]] >> k) & 1) == sending) e++;
            const size_t n = (size_t)(e - i) * count;
            char *dst = sending ? ck_elem(spack.buf, (size_t)nsend * count, extent)
                                : ck_elem(oth, (size_t)nkeep * count, extent);
            CK_TRY(ck_copy(ck_elem(cur, (size_t)i * count, extent), dst, n, dt));
            for (int t = i; t < e; t++) {
                if (sending) next[p - 1 - nsend++] = slot[t];
                else next[nkeep++] = slot[t];
            }
            i = e;
        }
        /* next[] filled the sent offsets from the right end backwards. */
        for (int a = nkeep, b = p - 1; a < b; a++, b--) {
            int t = next[a];
            next[a] = next[b];
            next[b] = t;
        }
        CK_TRY(ck_sendrecv(spack.buf, (size_t)nsend * count, to,
                           ck_elem(oth, (size_t)nkeep * count, extent), (size_t)nsend * count,
                           from, dt, tag, comm));
        int *ts = slot;
        slot = next;
        next = ts;
        char *tb = cur;
        cur = oth;
        oth = tb;
        CK_SPAN_END("step");
    }
    CK_SPAN_END("exchange");

    CK_SPAN_BEGIN("unrotate");
    for (int i = 0; i < p; i++)
        CK_TRY(ck_copy(ck_elem(cur, (size_t)i * count, extent),
                       ck_elem(rbuf, (size_t)((rank - slot[i] + p) % p) * count, extent), count,
                       dt));
    CK_SPAN_END("unrotate");
out:
    free(slot);
    free(next);
    free(digits);
    ck_tmp_free(&wa);
    ck_tmp_free(&wb);
    ck_tmp_free(&spack);
    return rc;
}
