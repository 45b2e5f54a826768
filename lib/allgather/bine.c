/*
 * Bine allgather (De Sensi et al., "Bine Trees", SC'25): a distance-halving
 * Bine butterfly. At steps k = s-1..0 a rank swaps everything it holds with
 * ck_bine_partner(rank, k), so the data doubles every step as in recursive
 * doubling, but partners sit at distances |rho(k)| = 1, 1, 3, 5, 11, ...
 * (largest ~p/3 instead of p/2), which keeps more traffic local.
 *
 * The catch is the data layout: the set of blocks a rank holds before step k
 * ({q : nu(q) = nu(rank) mod 2^(k+1)}, see lib/core/bine_butterfly.h) is not
 * a contiguous range of ranks. It is contiguous in "slot" order sigma(q) =
 * bit_reverse(nu(q)). The three variants differ only in how they cope:
 *
 *  bine_permute  works in a temporary buffer in slot order: the own block is
 *                placed at its slot up front (one block, so the "permutation"
 *                is free), every step sends one contiguous range, and at the
 *                end the whole vector is copied back to rank order (one extra
 *                local copy of n bytes, and n bytes of temporary memory).
 *  bine_remap    works directly in rbuf in rank order. Rank r plays the
 *                butterfly role that ends up holding the aligned range of
 *                positions around sigma(r) instead of around r, so what r
 *                must start from is the block of rank sigma(r), not its own.
 *                A fix-up exchange BEFORE the butterfly moves each block
 *                there: r sends its block to sigma^-1(r) and receives block
 *                sigma(r) (one extra message of n/p bytes per rank, skipped
 *                for fixed points). After it every step sends one contiguous
 *                range of rbuf and the result is already in rank order. (For
 *                allgather the fix-up has to come first: afterwards every
 *                rank holds everything, and moving "its result" would be the
 *                local permutation of bine_permute.)
 *  bine_noncontig  works directly in rbuf in rank order with no permutation:
 *                each step sends the scattered set of blocks the partner
 *                lacks, packed into a temporary buffer (runs of consecutive
 *                blocks merged), and unpacks what it receives: the same
 *                messages as the others, plus about n bytes packed and n
 *                unpacked in total over the steps, and 2n temporary memory.
 *
 * Non-power-of-two p: folding onto the p2 = 2^floor(log2 p) core, with the
 * neighbouring pairs (2i, 2i+1), i < p - p2, acting as one virtual rank
 * (lib/core/bine_butterfly.h). 2i+1 hands its block to 2i first and gets the
 * whole vector back from 2i at the end: two extra steps for the pairs, n/p
 * and n extra bytes. In bine_remap the folded rank instead sends its block
 * straight to the core rank that needs it during the fix-up exchange, so
 * folding costs only the final n-byte transfer there.
 */
#include "../core/bine_butterfly.h"
#include "collkit/spans.h"

/* The own block: in rbuf already for MPI_IN_PLACE. */
static const void *own_block(const void *sbuf, void *rbuf, int rank, size_t count,
                             MPI_Aint ext)
{
    return sbuf == MPI_IN_PLACE ? ck_elem(rbuf, (size_t)rank * count, ext) : sbuf;
}

/* Checks, trivial cases and the fold, shared by the three variants. Returns 1
 * when the call is complete (or failed: *rc then holds the error); a rank
 * that drops out of the fold is complete here unless the variant moves its
 * block itself (fold_here 0). Otherwise bf is set up for the caller to free. */
static int prologue(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt, MPI_Comm comm,
                    int fold_here, int xor_pairs, int *rank, MPI_Aint *ext, ck_bine_bf *bf, ck_fold *f,
                    int *rc)
{
    int size;
    *rc = ck_check_exchange(sbuf, rbuf, count, dt, comm, rank, &size);
    if (*rc != MPI_SUCCESS || count == 0) return 1;
    /* the last step moves up to size*count elements in one message */
    if ((size_t)size * count > CK_MAX_COUNT) {
        *rc = MPI_ERR_COUNT;
        return 1;
    }
    *rc = ck_type_extent(dt, ext);
    if (*rc != MPI_SUCCESS) return 1;
    if (size == 1) {
        if (sbuf != MPI_IN_PLACE) *rc = ck_copy(sbuf, rbuf, count, dt);
        return 1;
    }
    *f = ck_fold_of(*rank, 0, size, CK_FOLD_KEEP_EVEN);
    if (f->vrank < 0 && fold_here) {
        const int tag = CK_TAG(CK_ALLGATHER);
        *rc = ck_fold_in(f, own_block(sbuf, rbuf, *rank, count, *ext), NULL, NULL, count, dt,
                         MPI_OP_NULL, tag, comm);
        if (*rc == MPI_SUCCESS)
            *rc = ck_fold_out(f, NULL, rbuf, (size_t)size * count, dt, tag, comm);
        return 1;
    }
    *rc = xor_pairs ? ck_bine_bf_init_xor(bf, size) : ck_bine_bf_init(bf, size);
    return *rc != MPI_SUCCESS;
}

/* bine_permute, and with xor_pairs butterfly_halving: the same code on XOR pairs. */
static int allgather_in_slots(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                              MPI_Comm comm, int xor_pairs)
{
    int rc, rank;
    MPI_Aint ext = 0;
    ck_bine_bf bf = {0};
    ck_fold f;
    ck_tmp work = {0};
    size_t *off = NULL;
    if (prologue(sbuf, rbuf, count, dt, comm, 1, xor_pairs, &rank, &ext, &bf, &f, &rc)) return rc;

    const int tag = CK_TAG(CK_ALLGATHER), v = f.vrank;
    const size_t total = (size_t)bf.size * count;
    const void *mine = own_block(sbuf, rbuf, rank, count, ext);

    /* off[x]: first block of slot x in the work buffer (slots hold 1 or 2 blocks). */
    off = ck_bine_bf_slot_offsets(&bf);
    if (off == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&work, total, dt));

    const int slot = bf.sigma[v];
    CK_TRY(ck_copy(mine, ck_elem(work.buf, off[slot] * count, ext), count, dt));
    CK_TRY(ck_fold_in(&f, NULL, ck_elem(work.buf, (off[slot] + 1) * count, ext), NULL, count,
                      dt, MPI_OP_NULL, tag, comm));

    CK_SPAN_BEGIN("allgather");
    for (int k = bf.s - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", bf.s - 1 - k);
        const int len = 1 << (bf.s - 1 - k);
        const int have = slot & ~(len - 1), get = have ^ len;
        CK_TRY(ck_sendrecv(ck_elem(work.buf, off[have] * count, ext),
                           (off[have + len] - off[have]) * count, ck_bine_bf_peer(&bf, v, k),
                           ck_elem(work.buf, off[get] * count, ext),
                           (off[get + len] - off[get]) * count, ck_bine_bf_peer(&bf, v, k),
                           dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");

    CK_SPAN_BEGIN("unpermute");
    CK_TRY(ck_bine_bf_permute(&bf, off, CK_BINE_BF_FROM_SLOTS, work.buf, rbuf, count, dt,
                              MPI_OP_NULL));
    CK_SPAN_END("unpermute");
    CK_TRY(ck_fold_out(&f, rbuf, NULL, total, dt, tag, comm));
out:
    free(off);
    ck_tmp_free(&work);
    ck_bine_bf_free(&bf);
    return rc;
}

int ck_allgather_bine_permute(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                              MPI_Comm comm)
{
    return allgather_in_slots(sbuf, rbuf, count, dt, comm, 0);
}

/* The classic butterfly of bine_permute's structure (the Bine paper's
 * baseline): distances p/2, p/4, ..., 1 between XOR partners while the data
 * doubles, the allgather half of MPICH's Rabenseifner allreduce. Run by the
 * same code, so the two differ in their pairs alone. */
int ck_allgather_butterfly_halving(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                   MPI_Comm comm)
{
    return allgather_in_slots(sbuf, rbuf, count, dt, comm, 1);
}

int ck_allgather_bine_remap(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                            MPI_Comm comm)
{
    int rc, rank;
    MPI_Aint ext = 0;
    ck_bine_bf bf = {0};
    ck_fold f;
    MPI_Request req[3];
    if (prologue(sbuf, rbuf, count, dt, comm, 0, 0, &rank, &ext, &bf, &f, &rc)) return rc;

    const int tag = CK_TAG(CK_ALLGATHER), v = f.vrank;
    const size_t total = (size_t)bf.size * count;
    const void *mine = own_block(sbuf, rbuf, rank, count, ext);
    /* The core rank whose butterfly role starts from the position of my
     * block's owner u is the one with sigma = u. */
    const int dest = ck_bine_bf_first(&bf, bf.slot_rank[ck_bine_bf_owner(&bf, rank)]);
    if (v < 0) {
        CK_SPAN_BEGIN("remap");
        CK_TRY(ck_send(mine, count, dt, dest, tag, comm));
        CK_SPAN_END("remap");
        CK_TRY(ck_fold_out(&f, NULL, rbuf, total, dt, tag, comm));
        goto out;
    }

    /* Fix-up: gather the blocks of virtual rank t = sigma(v) (1 or 2 real
     * blocks, from their real ranks) at their final positions in rbuf. */
    const int t = bf.sigma[v];
    int n = 0;
    CK_SPAN_BEGIN("remap");
    for (int j = 0; j < ck_bine_bf_width(&bf, t); j++) {
        const int src = ck_bine_bf_first(&bf, t) + j;
        void *at = ck_elem(rbuf, (size_t)src * count, ext);
        if (src == rank)
            CK_TRY(ck_copy(mine, at, count, dt));
        else
            CK_TRY(ck_irecv(at, count, dt, src, tag, comm, &req[n++]));
    }
    if (dest != rank) CK_TRY(ck_isend(mine, count, dt, dest, tag, comm, &req[n++]));
    CK_TRY(ck_waitall(n, req));
    CK_SPAN_END("remap");

    CK_SPAN_BEGIN("allgather");
    for (int k = bf.s - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", bf.s - 1 - k);
        const int len = 1 << (bf.s - 1 - k);
        const int have = t & ~(len - 1), get = have ^ len;
        const size_t hlo = (size_t)ck_bine_bf_first(&bf, have) * count;
        const size_t glo = (size_t)ck_bine_bf_first(&bf, get) * count;
        CK_TRY(ck_sendrecv(ck_elem(rbuf, hlo, ext),
                           (size_t)ck_bine_bf_first(&bf, have + len) * count - hlo,
                           ck_bine_bf_peer(&bf, v, k), ck_elem(rbuf, glo, ext),
                           (size_t)ck_bine_bf_first(&bf, get + len) * count - glo,
                           ck_bine_bf_peer(&bf, v, k), dt, tag, comm));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
    CK_TRY(ck_fold_out(&f, rbuf, NULL, total, dt, tag, comm));
out:
    ck_bine_bf_free(&bf);
    return rc;
}

int ck_allgather_bine_noncontig(const void *sbuf, void *rbuf, size_t count, MPI_Datatype dt,
                                MPI_Comm comm)
{
    int rc, rank;
    MPI_Aint ext = 0;
    ck_bine_bf bf = {0};
    ck_fold f;
    ck_tmp spack = {0}, rpack = {0};
    if (prologue(sbuf, rbuf, count, dt, comm, 1, 0, &rank, &ext, &bf, &f, &rc)) return rc;

    const int tag = CK_TAG(CK_ALLGATHER), v = f.vrank;
    const size_t total = (size_t)bf.size * count;
    const void *mine = own_block(sbuf, rbuf, rank, count, ext);

    CK_TRY(ck_copy(mine, ck_elem(rbuf, (size_t)rank * count, ext), count, dt));
    CK_TRY(ck_fold_in(&f, NULL, ck_elem(rbuf, (size_t)(rank + 1) * count, ext), NULL, count, dt,
                      MPI_OP_NULL, tag, comm));
    /* A set never exceeds half the core, but folded pairs make its size in
     * blocks uneven; the whole vector is a safe bound. */
    CK_TRY(ck_tmp_alloc(&spack, total, dt));
    CK_TRY(ck_tmp_alloc(&rpack, total, dt));

    CK_SPAN_BEGIN("allgather");
    for (int k = bf.s - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", bf.s - 1 - k);
        /* Held before step k: the virtual ranks whose slot agrees with mine
         * above bit s-1-k; the partner's set differs in that bit. */
        const int shift = bf.s - 1 - k, have = bf.sigma[v] >> shift, get = have ^ 1;
        size_t ns, nr;
        CK_TRY(ck_bine_bf_move(&bf, shift, have, CK_BINE_BF_PACK, rbuf, spack.buf, count, dt,
                               MPI_OP_NULL, &ns));
        CK_TRY(ck_bine_bf_move(&bf, shift, get, CK_BINE_BF_COUNT, NULL, NULL, count, dt,
                               MPI_OP_NULL, &nr));
        CK_TRY(ck_sendrecv(spack.buf, ns, ck_bine_bf_peer(&bf, v, k), rpack.buf, nr,
                           ck_bine_bf_peer(&bf, v, k), dt, tag, comm));
        CK_TRY(ck_bine_bf_move(&bf, shift, get, CK_BINE_BF_UNPACK, rbuf, rpack.buf, count, dt,
                               MPI_OP_NULL, &nr));
        CK_SPAN_END("step");
    }
    CK_SPAN_END("allgather");
    CK_TRY(ck_fold_out(&f, rbuf, NULL, total, dt, tag, comm));
out:
    ck_tmp_free(&spack);
    ck_tmp_free(&rpack);
    ck_bine_bf_free(&bf);
    return rc;
}
