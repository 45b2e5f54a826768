/* Swing butterflies: block sets and the two phases (see swing.h). */
#include "swing.h"

#include "bine.h"
#include "collkit/spans.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int ck_swing_reach(int v, int k, int p2, int s, int *set)
{
    /* reach(v, k) is v with any subset of the steps k..s-1 applied in order:
     * applying step j to everything gathered so far doubles the set. */
    int n = 1;
    set[0] = v;
    for (int j = k; j < s; j++) {
        for (int i = 0; i < n; i++) set[n + i] = ck_bine_partner(set[i], j, p2);
        n *= 2;
    }
    qsort(set, (size_t)n, sizeof *set, cmp_int);
    return n;
}

/* Elements covered by the blocks of a set. */
static size_t set_elems(const size_t *off, const int *set, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) total += off[set[i] + 1] - off[set[i]];
    return total;
}

/* Length of the run of consecutive block ids starting at set[i]: such blocks
 * are adjacent in the buffer and move with one copy or reduction. */
static int run_len(const int *set, int n, int i)
{
    int j = i + 1;
    while (j < n && set[j] == set[j - 1] + 1) j++;
    return j - i;
}

/* Copy the blocks of set between buf (at their offsets) and the packed area
 * packed (in set order); to_packed selects the direction. */
static int move_set(void *buf, const size_t *off, const int *set, int n, char *packed,
                    MPI_Aint ext, MPI_Datatype dt, int to_packed)
{
    int rc = MPI_SUCCESS;
    size_t pos = 0;
    for (int i = 0; i < n;) {
        int len = run_len(set, n, i);
        size_t lo = off[set[i]], cnt = off[set[i] + len] - lo;
        if (to_packed)
            CK_TRY(ck_copy(ck_elem(buf, lo, ext), ck_elem(packed, pos, ext), cnt, dt));
        else
            CK_TRY(ck_copy(ck_elem(packed, pos, ext), ck_elem(buf, lo, ext), cnt, dt));
        pos += cnt;
        i += len;
    }
out:
    return rc;
}

/* What a phase works with: the core of p2 = 2^s virtual ranks, this rank's
 * virtual rank v, the two block sets of a step (at most p2/2 blocks each;
 * p2 >= 2 here) and, since they are disjoint halves of reach(v, k), one
 * buffer of the whole vector that holds both packed side by side. */
typedef struct {
    int p2, s, v;
    MPI_Aint ext;
    int *sets;
    ck_tmp tmp;
} phase;

static int phase_open(phase *ph, const size_t *off, MPI_Datatype dt, int rank, int p)
{
    int rc;
    ph->p2 = ck_pow2_floor(p);
    ph->s = ck_log2_ceil(ph->p2);
    ph->v = ck_fold_vrank(rank, ck_fold_rem(p), CK_FOLD_KEEP_EVEN);
    CK_TRY(ck_type_extent(dt, &ph->ext));
    ph->sets = malloc((size_t)ph->p2 * sizeof *ph->sets);
    if (ph->sets == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&ph->tmp, off[ph->p2] - off[0], dt));
out:
    return rc;
}

static void phase_close(phase *ph)
{
    ck_tmp_free(&ph->tmp);
    free(ph->sets);
}

size_t *ck_swing_superblocks(int size, size_t count)
{
    const int p2 = ck_pow2_floor(size), rem = ck_fold_rem(size);
    size_t *off = malloc(((size_t)p2 + 1) * sizeof *off);
    if (off == NULL) return NULL;
    for (int u = 0; u <= p2; u++) off[u] = (size_t)ck_fold_first(u, rem) * count;
    return off;
}

/* Butterfly step k of virtual rank v with its partner vq: one side's reach
 * set, reach(v, k+1) or reach(vq, k+1), travels packed (tmp) and the other's
 * arrives packed right behind it, at *rb. send_own picks which side v sends:
 * its own set (allgather) or the partner's (reduce-scatter). The received
 * set is left in sets[p2/2 ..], *nr blocks. */
static int swap_sets(void *buf, const size_t *off, int send_own, int v, int k, int p,
                     MPI_Datatype dt, MPI_Aint ext, char *tmp, int *sets, int tag, MPI_Comm comm,
                     int *nr, char **rb)
{
    int rc;
    const int p2 = ck_pow2_floor(p), s = ck_log2_ceil(p2);
    const int vq = ck_bine_partner(v, k, p2), q = ck_fold_rank_of(vq, CK_FOLD_KEEP_EVEN, 0, p);
    int *sset = sets, *rset = sets + p2 / 2;
    const int ns = ck_swing_reach(send_own ? v : vq, k + 1, p2, s, sset);
    *nr = ck_swing_reach(send_own ? vq : v, k + 1, p2, s, rset);
    const size_t sn = set_elems(off, sset, ns), rn = set_elems(off, rset, *nr);
    *rb = ck_elem(tmp, sn, ext);
    CK_TRY(move_set(buf, off, sset, ns, tmp, ext, dt, 1));
    CK_TRY(ck_sendrecv(tmp, sn, q, *rb, rn, q, dt, tag, comm));
out:
    return rc;
}

int ck_swing_rs_phase(void *buf, const size_t *off, MPI_Datatype dt, MPI_Op op, int rank,
                      int p, int tag, MPI_Comm comm)
{
    int rc;
    phase ph = {0};
    CK_TRY(phase_open(&ph, off, dt, rank, p));
    const int *kset = ph.sets + ph.p2 / 2;

    for (int k = 0; k < ph.s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        int nk;
        char *rb;
        CK_TRY(swap_sets(buf, off, 0, ph.v, k, p, dt, ph.ext, ph.tmp.buf, ph.sets, tag, comm, &nk,
                         &rb));
        size_t pos = 0;
        for (int i = 0; i < nk;) {
            int len = run_len(kset, nk, i);
            size_t lo = off[kset[i]], cnt = off[kset[i] + len] - lo;
            CK_TRY(ck_reduce_local(ck_elem(rb, pos, ph.ext), ck_elem(buf, lo, ph.ext), cnt, dt,
                                   op));
            pos += cnt;
            i += len;
        }
        CK_SPAN_END("step");
    }
out:
    phase_close(&ph);
    return rc;
}

int ck_swing_ag_phase(void *buf, const size_t *off, MPI_Datatype dt, int rank, int p, int tag,
                      MPI_Comm comm, int step0)
{
    int rc;
    phase ph = {0};
    CK_TRY(phase_open(&ph, off, dt, rank, p));
    const int *tset = ph.sets + ph.p2 / 2;
    (void)step0; /* read only by the step tags */

    for (int k = ph.s - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", step0 + ph.s - 1 - k);
        int nt;
        char *rb;
        CK_TRY(swap_sets(buf, off, 1, ph.v, k, p, dt, ph.ext, ph.tmp.buf, ph.sets, tag, comm, &nt,
                         &rb));
        CK_TRY(move_set(buf, off, tset, nt, rb, ph.ext, dt, 0));
        CK_SPAN_END("step");
    }
out:
    phase_close(&ph);
    return rc;
}
