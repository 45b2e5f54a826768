/* Swing butterflies: block sets, folding and the two phases (see swing.h). */
#include "swing.h"

#include "bine.h"
#include "collkit/spans.h"

int ck_swing_vrank(int r, int p)
{
    int e = p - ck_pow2_floor(p);
    if (r < 2 * e) return r % 2 ? -1 : r / 2;
    return r - e;
}

int ck_swing_real(int v, int p)
{
    int e = p - ck_pow2_floor(p);
    return v < e ? 2 * v : v + e;
}

int ck_swing_width(int v, int p)
{
    int e = p - ck_pow2_floor(p);
    return v < e ? 2 : 1;
}

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

int ck_swing_rs_phase(void *buf, const size_t *off, MPI_Datatype dt, MPI_Op op, int rank,
                      int p, int tag, MPI_Comm comm)
{
    int rc;
    ck_tmp tmp = {0};
    int *sets = NULL;
    MPI_Aint ext;
    const int p2 = ck_pow2_floor(p), s = ck_log2_ceil(p2), v = ck_swing_vrank(rank, p);
    CK_TRY(ck_type_extent(dt, &ext));
    /* Both sets of a step have at most p2/2 blocks; p2 >= 2 here. */
    sets = malloc((size_t)p2 * sizeof *sets);
    if (sets == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    /* Send and receive sets of a step are disjoint halves of reach(v, k), so
     * one buffer of the whole vector holds both packed side by side. */
    CK_TRY(ck_tmp_alloc(&tmp, off[p2] - off[0], dt));
    int *sset = sets, *kset = sets + p2 / 2;

    for (int k = 0; k < s; k++) {
        CK_SPAN_BEGIN_STEP("step", k);
        int vq = ck_bine_partner(v, k, p2), q = ck_swing_real(vq, p);
        int ns = ck_swing_reach(vq, k + 1, p2, s, sset);
        int nk = ck_swing_reach(v, k + 1, p2, s, kset);
        size_t sn = set_elems(off, sset, ns), kn = set_elems(off, kset, nk);
        char *rb = ck_elem(tmp.buf, sn, ext);
        CK_TRY(move_set(buf, off, sset, ns, tmp.buf, ext, dt, 1));
        CK_TRY(ck_sendrecv(tmp.buf, sn, q, rb, kn, q, dt, tag, comm));
        size_t pos = 0;
        for (int i = 0; i < nk;) {
            int len = run_len(kset, nk, i);
            size_t lo = off[kset[i]], cnt = off[kset[i] + len] - lo;
            CK_TRY(ck_reduce_local(ck_elem(rb, pos, ext), ck_elem(buf, lo, ext), cnt, dt, op));
            pos += cnt;
            i += len;
        }
        CK_SPAN_END("step");
    }
out:
    ck_tmp_free(&tmp);
    free(sets);
    return rc;
}

int ck_swing_ag_phase(void *buf, const size_t *off, MPI_Datatype dt, int rank, int p, int tag,
                      MPI_Comm comm, int step0)
{
    int rc;
    ck_tmp tmp = {0};
    int *sets = NULL;
    MPI_Aint ext;
    const int p2 = ck_pow2_floor(p), s = ck_log2_ceil(p2), v = ck_swing_vrank(rank, p);
    CK_TRY(ck_type_extent(dt, &ext));
    sets = malloc((size_t)p2 * sizeof *sets);
    if (sets == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    CK_TRY(ck_tmp_alloc(&tmp, off[p2] - off[0], dt));
    int *mset = sets, *tset = sets + p2 / 2;
    (void)step0; /* read only by the step tags */

    for (int k = s - 1; k >= 0; k--) {
        CK_SPAN_BEGIN_STEP("step", step0 + s - 1 - k);
        int vq = ck_bine_partner(v, k, p2), q = ck_swing_real(vq, p);
        int nm = ck_swing_reach(v, k + 1, p2, s, mset);
        int nt = ck_swing_reach(vq, k + 1, p2, s, tset);
        size_t mn = set_elems(off, mset, nm), tn = set_elems(off, tset, nt);
        char *rb = ck_elem(tmp.buf, mn, ext);
        CK_TRY(move_set(buf, off, mset, nm, tmp.buf, ext, dt, 1));
        CK_TRY(ck_sendrecv(tmp.buf, mn, q, rb, tn, q, dt, tag, comm));
        CK_TRY(move_set(buf, off, tset, nt, rb, ext, dt, 0));
        CK_SPAN_END("step");
    }
out:
    ck_tmp_free(&tmp);
    free(sets);
    return rc;
}
