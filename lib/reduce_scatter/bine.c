/*
 * Bine reduce-scatter (MPI_Reduce_scatter_block semantics; De Sensi et al.,
 * "Bine Trees", SC'25): a distance-doubling Bine butterfly, the time reverse
 * of the Bine allgather. At steps k = 0..s-1 a rank splits the blocks it is
 * still responsible for in two halves, sends the half its partner
 * ck_bine_partner(rank, k) keeps, and reduces the half it keeps with what the
 * partner sends: log2 p steps, n/2 + n/4 + ... bytes, at partner distances
 * 1, 1, 3, 5, 11, ... The partners of a rank are not ordered by rank, so the
 * op must be commutative (CK_REQUIRES_COMMUTATIVE).
 *
 * Before step k a rank is responsible for {q : nu(q) = nu(rank) mod 2^k}
 * (lib/core/bine_butterfly.h), a set that is contiguous only in "slot" order
 * sigma(q) = bit_reverse(nu(q)). The three variants differ in the layout:
 *
 *  bine_permute  the accumulator is filled in slot order from the start (the
 *                copy of the input that every variant makes anyway, done
 *                block by block), so every step sends one contiguous range;
 *                the own block ends in the rank's slot. Extra cost: the
 *                permuted first copy runs in p pieces instead of one.
 *  bine_remap    the accumulator stays in rank order and the butterfly
 *                treats positions as slots: rank r keeps the half around
 *                position sigma(r), so every step sends one contiguous range
 *                and r ends with the fully reduced block of rank sigma(r).
 *                The final fix-up exchange sends that block to rank sigma(r)
 *                and receives r's own block from rank sigma^-1(r): one extra
 *                message of n/p bytes per rank (none for fixed points).
 *  bine_noncontig  the accumulator stays in rank order and each step sends
 *                the scattered set of blocks the partner keeps, packed into a
 *                temporary buffer (runs of consecutive blocks merged); what
 *                arrives is reduced run by run straight from the receive
 *                buffer. Extra cost: about n/2 + n/4 + ... bytes packed, and
 *                one more n-sized temporary buffer.
 *
 * Non-power-of-two p: folding onto the p2 = 2^floor(log2 p) core, with the
 * neighbouring pairs (2i, 2i+1), i < p - p2, acting as one virtual rank
 * (lib/core/bine_butterfly.h). 2i+1 sends its whole input to 2i, which
 * reduces it into its own, and gets its result block back at the end: two
 * extra steps for the pairs, n and n/p extra bytes. In bine_remap the final
 * fix-up sends each result block straight to its real rank, so the folded
 * rank's block comes with the fix-up and folding costs only the first step.
 */
#include "../core/bine_butterfly.h"
#include "collkit/spans.h"

/* Checks, trivial cases and the fold, shared by the three variants. Returns 1
 * when the call is complete (or failed: *rc then holds the error); a rank
 * that drops out of the fold hands over its input here and, unless the
 * variant delivers its block itself (fold_here 0), gets its block back and is
 * complete. Otherwise bf is set up for the caller to free. */
static int prologue(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Op op,
                    MPI_Comm comm, int fold_here, int xor_pairs, int *rank, MPI_Aint *ext, ck_bine_bf *bf,
                    ck_fold *f, int *rc)
{
    int size, done;
    *rc = ck_reduce_scatter_open(sbuf, rbuf, count, dt, op, 1, comm, rank, &size, &done);
    if (*rc != MPI_SUCCESS || done) return 1;
    *rc = ck_type_extent(dt, ext);
    if (*rc != MPI_SUCCESS) return 1;
    *f = ck_fold_of(*rank, 0, size, CK_FOLD_KEEP_EVEN);
    if (f->vrank < 0) {
        /* the send completes before the receive may overwrite an in-place input */
        const int tag = CK_TAG(CK_REDUCE_SCATTER);
        *rc = ck_fold_in(f, sbuf == MPI_IN_PLACE ? rbuf : sbuf, NULL, NULL, (size_t)size * count,
                         dt, op, tag, comm);
        if (*rc != MPI_SUCCESS) return 1;
        if (fold_here) {
            *rc = ck_fold_out(f, NULL, rbuf, count, dt, tag, comm);
            return 1;
        }
    }
    *rc = xor_pairs ? ck_bine_bf_init_xor(bf, size) : ck_bine_bf_init(bf, size);
    return *rc != MPI_SUCCESS;
}

/* bine_permute, and with xor_pairs butterfly_doubling: the same code on XOR pairs. */
static int reduce_scatter_in_slots(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                   MPI_Op op, MPI_Comm comm, int xor_pairs)
{
    int rc, rank;
    MPI_Aint ext = 0;
    ck_bine_bf bf = {0};
    ck_fold f;
    ck_tmp acc = {0}, tmp = {0};
    size_t *off = NULL;
    if (prologue(sbuf, rbuf, count, dt, op, comm, 1, xor_pairs, &rank, &ext, &bf, &f, &rc))
        return rc;

    const int tag = CK_TAG(CK_REDUCE_SCATTER), v = f.vrank;
    const size_t total = (size_t)bf.size * count;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;

    off = ck_bine_bf_slot_offsets(&bf);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&acc, total, dt));
    CK_TRY(ck_tmp_alloc(&tmp, total, dt));

    /* Permute up front: slot x of acc holds the blocks of virtual rank
     * slot_rank[x]. The folded partner's vector arrives in rank order and is
     * reduced slot by slot (inside the fold phase). */
    CK_SPAN_BEGIN("permute");
    CK_TRY(ck_bine_bf_permute(&bf, off, CK_BINE_BF_TO_SLOTS, in, acc.buf, count, dt, op));
    CK_SPAN_END("permute");
    CK_TRY(ck_fold_in(&f, NULL, tmp.buf, NULL, total, dt, op, tag, comm));
    if (f.partner >= 0) {
        CK_SPAN_BEGIN("fold");
        CK_TRY(ck_bine_bf_permute(&bf, off, CK_BINE_BF_REDUCE_TO_SLOTS, tmp.buf, acc.buf, count,
                                  dt, op));
        CK_SPAN_END("fold");
    }

    const int slot = bf.sigma[v];
    CK_SPAN_BEGIN("reduce_scatter");
    for (int k = 0; k < bf.s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int len = 1 << (bf.s - 1 - k);
        const int keep = slot & ~(len - 1), give = keep ^ len;
        const size_t kn = (off[keep + len] - off[keep]) * count;
        CK_TRY(ck_sendrecv(ck_elem(acc.buf, off[give] * count, ext),
                           (off[give + len] - off[give]) * count, ck_bine_bf_peer(&bf, v, k),
                           ck_elem(tmp.buf, off[keep] * count, ext), kn,
                           ck_bine_bf_peer(&bf, v, k), dt, tag, comm));
        CK_TRY(ck_reduce_local(ck_elem(tmp.buf, off[keep] * count, ext),
                               ck_elem(acc.buf, off[keep] * count, ext), kn, dt, op));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    CK_TRY(ck_copy(ck_elem(acc.buf, off[slot] * count, ext), rbuf, count, dt));
    CK_TRY(ck_fold_out(&f, ck_elem(acc.buf, (off[slot] + 1) * count, ext), NULL, count, dt,
                       tag, comm));
out:
    free(off);
    ck_tmp_free(&acc);
    ck_tmp_free(&tmp);
    ck_bine_bf_free(&bf);
    return rc;
}

int ck_reduce_scatter_bine_permute(const void *sbuf, void *rbuf, size_t count,
                                   MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_in_slots(sbuf, rbuf, count, dt, op, comm, 0);
}

/* The classic butterfly of bine_permute's structure (the Bine paper's
 * baseline): distances 1, 2, ..., p/2 between XOR partners while the data
 * halves, the reduce-scatter half of MPICH's Rabenseifner allreduce. Run by
 * the same code, so the two differ in their pairs alone. */
int ck_reduce_scatter_butterfly_doubling(const void *sbuf, void *rbuf, size_t count,
                                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_in_slots(sbuf, rbuf, count, dt, op, comm, 1);
}

int ck_reduce_scatter_bine_remap(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                 MPI_Op op, MPI_Comm comm)
{
    int rc, rank;
    MPI_Aint ext = 0;
    ck_bine_bf bf = {0};
    ck_fold f;
    ck_tmp acc = {0}, tmp = {0};
    MPI_Request req[3];
    if (prologue(sbuf, rbuf, count, dt, op, comm, 0, 0, &rank, &ext, &bf, &f, &rc)) return rc;

    const int tag = CK_TAG(CK_REDUCE_SCATTER), v = f.vrank;
    const size_t total = (size_t)bf.size * count;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    /* My block belongs to virtual rank u; the core rank whose butterfly role
     * ends at position u is the one with sigma = u. */
    const int src = ck_bine_bf_first(&bf, bf.slot_rank[ck_bine_bf_owner(&bf, rank)]);
    if (v < 0) {
        /* Its input went to its partner in the prologue. */
        CK_SPAN_BEGIN("remap");
        CK_TRY(ck_recv(rbuf, count, dt, src, tag, comm));
        CK_SPAN_END("remap");
        goto out;
    }

    CK_TRY(ck_tmp_alloc(&acc, total, dt));
    CK_TRY(ck_tmp_alloc(&tmp, total, dt));
    CK_TRY(ck_copy(in, acc.buf, total, dt));
    CK_TRY(ck_fold_in(&f, NULL, tmp.buf, acc.buf, total, dt, op, tag, comm));

    const int t = bf.sigma[v];
    CK_SPAN_BEGIN("reduce_scatter");
    for (int k = 0; k < bf.s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        const int len = 1 << (bf.s - 1 - k);
        const int keep = t & ~(len - 1), give = keep ^ len;
        const size_t klo = (size_t)ck_bine_bf_first(&bf, keep) * count;
        const size_t glo = (size_t)ck_bine_bf_first(&bf, give) * count;
        const size_t kn = (size_t)ck_bine_bf_first(&bf, keep + len) * count - klo;
        CK_TRY(ck_sendrecv(ck_elem(acc.buf, glo, ext),
                           (size_t)ck_bine_bf_first(&bf, give + len) * count - glo,
                           ck_bine_bf_peer(&bf, v, k), ck_elem(tmp.buf, klo, ext), kn,
                           ck_bine_bf_peer(&bf, v, k), dt, tag, comm));
        CK_TRY(ck_reduce_local(ck_elem(tmp.buf, klo, ext), ck_elem(acc.buf, klo, ext), kn, dt,
                               op));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    /* Fix-up: the reduced blocks of virtual rank t go to their real ranks
     * (t's core rank and, for a pair, its folded neighbour); my own block
     * comes from the core rank whose sigma is my virtual rank. */
    int n = 0;
    CK_SPAN_BEGIN("remap");
    if (src != rank) CK_TRY(ck_irecv(rbuf, count, dt, src, tag, comm, &req[n++]));
    for (int j = 0; j < ck_bine_bf_width(&bf, t); j++) {
        const int dst = ck_bine_bf_first(&bf, t) + j;
        const void *blk = ck_elem(acc.buf, (size_t)dst * count, ext);
        if (dst == rank)
            CK_TRY(ck_copy(blk, rbuf, count, dt));
        else
            CK_TRY(ck_isend(blk, count, dt, dst, tag, comm, &req[n++]));
    }
    CK_TRY(ck_waitall(n, req));
    CK_SPAN_END("remap");
out:
    ck_tmp_free(&acc);
    ck_tmp_free(&tmp);
    ck_bine_bf_free(&bf);
    return rc;
}

int ck_reduce_scatter_bine_noncontig(const void *sbuf, void *rbuf, size_t count,
                                     MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int rc, rank;
    MPI_Aint ext = 0;
    ck_bine_bf bf = {0};
    ck_fold f;
    ck_tmp acc = {0}, spack = {0}, rpack = {0};
    if (prologue(sbuf, rbuf, count, dt, op, comm, 1, 0, &rank, &ext, &bf, &f, &rc)) return rc;

    const int tag = CK_TAG(CK_REDUCE_SCATTER), v = f.vrank;
    const size_t total = (size_t)bf.size * count;
    const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    CK_TRY(ck_reduce_scatter_fold_in(&f, in, rbuf, count, bf.size, dt, op, comm, &acc, &rpack));
    CK_TRY(ck_tmp_alloc(&spack, total, dt));

    CK_SPAN_BEGIN("reduce_scatter");
    for (int k = 0; k < bf.s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        /* Responsible before step k: the virtual ranks whose slot agrees with
         * mine in the bits above bit s-1-k; keep those that also agree in
         * bit s-1-k, send the others (the partner's half). */
        const int shift = bf.s - 1 - k, keep = bf.sigma[v] >> shift, give = keep ^ 1;
        size_t ns, nr;
        CK_TRY(ck_bine_bf_move(&bf, shift, give, CK_BINE_BF_PACK, acc.buf, spack.buf, count, dt,
                               op, &ns));
        CK_TRY(ck_bine_bf_move(&bf, shift, keep, CK_BINE_BF_COUNT, NULL, NULL, count, dt, op,
                               &nr));
        CK_TRY(ck_sendrecv(spack.buf, ns, ck_bine_bf_peer(&bf, v, k), rpack.buf, nr,
                           ck_bine_bf_peer(&bf, v, k), dt, tag, comm));
        CK_TRY(ck_bine_bf_move(&bf, shift, keep, CK_BINE_BF_REDUCE, acc.buf, rpack.buf, count,
                               dt, op, &nr));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("reduce_scatter");

    CK_TRY(ck_copy(ck_elem(acc.buf, (size_t)rank * count, ext), rbuf, count, dt));
    CK_TRY(ck_fold_out(&f, ck_elem(acc.buf, (size_t)(rank + 1) * count, ext), NULL, count, dt,
                       tag, comm));
out:
    ck_tmp_free(&acc);
    ck_tmp_free(&spack);
    ck_tmp_free(&rpack);
    ck_bine_bf_free(&bf);
    return rc;
}
