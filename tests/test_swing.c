/* Unit tests of lib/core/swing.c: the Swing block sets and the folding map. */
#include "ck_core.h"
#include "bine.h"
#include "swing.h"

#include <stdio.h>

#include "unit_check.h"

/* For every v and k of p2 = 2^s: reach(v, k) is sorted, has 2^(s-k) ranks,
 * and is the disjoint union of reach(v, k+1) and reach(partner(v, k), k+1);
 * reach(v, 0) is every rank. This is what makes the reduce-scatter and the
 * allgather phases exact. */
static void test_reach(void)
{
    for (int s = 1; s <= 11; s++) {
        int p2 = 1 << s, ok = 1;
        int *a = malloc((size_t)p2 * sizeof *a), *b = malloc((size_t)p2 * sizeof *b);
        int *c = malloc((size_t)p2 * sizeof *c);
        char *seen = malloc((size_t)p2);
        if (!a || !b || !c || !seen) {
            CHECK(0);
            return;
        }
        for (int v = 0; v < p2 && ok; v++) {
            CHECK(ck_swing_reach(v, s, p2, s, a) == 1 && a[0] == v);
            for (int k = 0; k < s && ok; k++) {
                int n = ck_swing_reach(v, k, p2, s, a);
                int nb = ck_swing_reach(v, k + 1, p2, s, b);
                int nc = ck_swing_reach(ck_bine_partner(v, k, p2), k + 1, p2, s, c);
                ok &= n == 1 << (s - k) && nb == n / 2 && nc == n / 2;
                for (int i = 1; i < n; i++) ok &= a[i - 1] < a[i];
                memset(seen, 0, (size_t)p2);
                for (int i = 0; i < nb; i++) seen[b[i]]++;
                for (int i = 0; i < nc; i++) seen[c[i]]++;
                for (int i = 0; i < n; i++) ok &= seen[a[i]] == 1;
                int total = 0;
                for (int i = 0; i < p2; i++) total += seen[i];
                ok &= total == n;
            }
        }
        CHECK(ok);
        free(a);
        free(b);
        free(c);
        free(seen);
    }
    /* p = 8: rank 0 talks to 1, 7, 3 (distances 1, 1, 3). */
    CHECK(ck_bine_partner(0, 0, 8) == 1 && ck_bine_partner(0, 1, 8) == 7 &&
          ck_bine_partner(0, 2, 8) == 3);
    int set[4];
    /* reach(0, 1) on 8: 0 -> {0, 7} -> {0, 7, 3, 4}. */
    CHECK(ck_swing_reach(0, 1, 8, 3, set) == 4 && set[0] == 0 && set[1] == 3 && set[2] == 4 &&
          set[3] == 7);
}

/* Folding: virtual ranks 0..p2-1 stand for consecutive runs of real ranks
 * (width 1 or 2) that tile 0..p-1 in order; every real rank maps back. */
static void test_fold(void)
{
    for (int p = 1; p <= 1100; p++) {
        int p2 = ck_pow2_floor(p), ok = 1, next = 0;
        for (int v = 0; v < p2; v++) {
            const int rem = ck_fold_rem(p);
            int r = ck_fold_rank_of(v, CK_FOLD_KEEP_EVEN, 0, p), w = ck_fold_width(v, rem);
            ok &= r == next && (w == 1 || w == 2) && ck_fold_vrank(r, rem, CK_FOLD_KEEP_EVEN) == v;
            if (w == 2) ok &= ck_fold_vrank(r + 1, rem, CK_FOLD_KEEP_EVEN) == -1 && r % 2 == 0;
            next = r + w;
        }
        ok &= next == p;
        CHECK(ok);
    }
    CHECK(ck_fold_vrank(0, ck_fold_rem(1), CK_FOLD_KEEP_EVEN) == 0 &&
          ck_fold_rank_of(0, CK_FOLD_KEEP_EVEN, 0, 1) == 0);
    /* p = 6: pairs (0,1), (2,3) fold; 4, 5 are virtual 2, 3. */
    CHECK(ck_fold_vrank(3, ck_fold_rem(6), CK_FOLD_KEEP_EVEN) == -1 &&
          ck_fold_vrank(2, ck_fold_rem(6), CK_FOLD_KEEP_EVEN) == 1 &&
          ck_fold_vrank(5, ck_fold_rem(6), CK_FOLD_KEEP_EVEN) == 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    test_reach();
    test_fold();
    printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
