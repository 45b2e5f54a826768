/* Block order and folding of Bine butterflies (see bine_butterfly.h). */
#include "bine_butterfly.h"

void ck_bine_bf_nu_table(int p, int s, int *nu)
{
    for (int r = 0; r < p; r++) nu[r] = -1;
    nu[0] = 0;
    /* Ranks reached before step k are exactly those with nu < 2^k; each
     * passes the data on to its step-k partner. Ranks reached at step k get
     * nu >= 2^k, so they are not revisited in the same step. */
    for (int k = 0; k < s; k++)
        for (int r = 0; r < p; r++)
            if (nu[r] >= 0 && nu[r] < (1 << k)) nu[ck_bine_partner(r, k, p)] = nu[r] | (1 << k);
}

static int init(ck_bine_bf *bf, int size, int xor_pairs)
{
    bf->size = size;
    bf->xor_pairs = xor_pairs;
    bf->p2 = ck_pow2_floor(size);
    bf->s = ck_log2_ceil(bf->p2);
    bf->extra = size - bf->p2;
    bf->sigma = malloc((size_t)bf->p2 * sizeof *bf->sigma);
    bf->slot_rank = malloc((size_t)bf->p2 * sizeof *bf->slot_rank);
    if (bf->sigma == NULL || bf->slot_rank == NULL) {
        ck_bine_bf_free(bf);
        return MPI_ERR_NO_MEM;
    }
    if (xor_pairs)
        for (int v = 0; v < bf->p2; v++) bf->sigma[v] = v;
    else
        ck_bine_bf_nu_table(bf->p2, bf->s, bf->sigma);
    for (int v = 0; v < bf->p2; v++) {
        bf->sigma[v] = (int)ck_bit_reverse((uint32_t)bf->sigma[v], bf->s);
        bf->slot_rank[bf->sigma[v]] = v;
    }
    return MPI_SUCCESS;
}

int ck_bine_bf_init(ck_bine_bf *bf, int size) { return init(bf, size, 0); }

int ck_bine_bf_init_xor(ck_bine_bf *bf, int size) { return init(bf, size, 1); }

void ck_bine_bf_free(ck_bine_bf *bf)
{
    free(bf->sigma);
    free(bf->slot_rank);
    bf->sigma = NULL;
    bf->slot_rank = NULL;
}

static int move_run(ck_bine_bf_mode mode, char *natural, char *packed, size_t n,
                    MPI_Datatype dt, MPI_Op op)
{
    switch (mode) {
    case CK_BINE_BF_PACK: return ck_copy(natural, packed, n, dt);
    case CK_BINE_BF_UNPACK: return ck_copy(packed, natural, n, dt);
    default: return ck_reduce_local(packed, natural, n, dt, op);
    }
}

int ck_bine_bf_move(const ck_bine_bf *bf, int shift, int key, ck_bine_bf_mode mode,
                    void *natural, void *packed, size_t count, MPI_Datatype dt, MPI_Op op,
                    size_t *moved)
{
    MPI_Aint ext;
    int rc = ck_type_extent(dt, &ext);
    size_t done = 0;
    if (rc != MPI_SUCCESS) return rc;
    for (int u = 0; u < bf->p2;) {
        if ((bf->sigma[u] >> shift) != key) {
            u++;
            continue;
        }
        int end = u + 1;
        while (end < bf->p2 && (bf->sigma[end] >> shift) == key) end++;
        size_t lo = (size_t)ck_bine_bf_first(bf, u) * count;
        size_t n = (size_t)ck_bine_bf_first(bf, end) * count - lo;
        if (mode != CK_BINE_BF_COUNT) {
            rc = move_run(mode, ck_elem(natural, lo, ext), ck_elem(packed, done, ext), n, dt,
                          op);
            if (rc != MPI_SUCCESS) return rc;
        }
        done += n;
        u = end;
    }
    *moved = done;
    return MPI_SUCCESS;
}

size_t *ck_bine_bf_slot_offsets(const ck_bine_bf *bf)
{
    size_t *off = malloc(((size_t)bf->p2 + 1) * sizeof *off);
    if (off == NULL) return NULL;
    off[0] = 0;
    for (int x = 0; x < bf->p2; x++)
        off[x + 1] = off[x] + (size_t)ck_bine_bf_width(bf, bf->slot_rank[x]);
    return off;
}

int ck_bine_bf_permute(const ck_bine_bf *bf, const size_t *off, ck_bine_bf_permute_mode mode,
                       const void *src, void *dst, size_t count, MPI_Datatype dt, MPI_Op op)
{
    MPI_Aint ext;
    int rc = ck_type_extent(dt, &ext);
    const int from_ranks = mode != CK_BINE_BF_FROM_SLOTS;
    for (int x = 0; x < bf->p2 && rc == MPI_SUCCESS; x++) {
        const int u = bf->slot_rank[x];
        const size_t ranked = (size_t)ck_bine_bf_first(bf, u) * count, slotted = off[x] * count;
        const size_t n = (size_t)ck_bine_bf_width(bf, u) * count;
        const char *s = ck_elem(src, from_ranks ? ranked : slotted, ext);
        char *d = ck_elem(dst, from_ranks ? slotted : ranked, ext);
        rc = mode == CK_BINE_BF_REDUCE_TO_SLOTS ? ck_reduce_local(s, d, n, dt, op)
                                                : ck_copy(s, d, n, dt);
    }
    return rc;
}
