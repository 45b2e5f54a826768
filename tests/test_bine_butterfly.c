/* Unit tests of lib/core/bine_butterfly.{c,h}: the Bine butterfly block
 * order the Bine allgather and reduce-scatter rely on, the folding of any p
 * onto a power-of-two core, and the packed block walker. One MPI rank. */
#include "bine_butterfly.h"

#include <stdio.h>

#include "unit_check.h"

/* nu is a bijection onto [0, p), the doubling tree reaches rank r at the step
 * of nu's top bit from a parent with that bit cleared, and the butterfly
 * partner at step k keeps nu's low k bits and flips bit k. */
static void test_nu(void)
{
    for (int s = 1; s <= 12; s++) {
        const int p = 1 << s;
        int *nu = malloc((size_t)p * sizeof *nu), *seen = calloc((size_t)p, sizeof *seen);
        if (nu == NULL || seen == NULL) {
            CHECK(0);
            free(nu);
            free(seen);
            return;
        }
        ck_bine_bf_nu_table(p, s, nu);
        int ok = nu[0] == 0;
        for (int r = 0; r < p; r++) {
            ok &= nu[r] >= 0 && nu[r] < p && !seen[nu[r]];
            if (nu[r] >= 0 && nu[r] < p) seen[nu[r]] = 1;
        }
        CHECK(ok);
        ok = 1;
        for (int k = 0; k < s; k++)
            for (int r = 0; r < p; r++) {
                int q = ck_bine_partner(r, k, p);
                ok &= ck_bine_partner(q, k, p) == r;
                ok &= ((nu[q] ^ nu[r]) & ((2 << k) - 1)) == (1 << k);
            }
        CHECK(ok);
        free(nu);
        free(seen);
    }
}

/* Simulate the distance-halving allgather with explicit sets: before step k
 * every rank holds exactly the aligned slot range of length 2^(s-1-k) around
 * its own slot, and its partner the adjacent range. */
static void test_sets(void)
{
    for (int s = 1; s <= 8; s++) {
        const int p = 1 << s;
        ck_bine_bf bf = {0};
        CHECK(ck_bine_bf_init(&bf, p) == MPI_SUCCESS);
        unsigned char *hold = calloc((size_t)p * (size_t)p, 1), *next = calloc((size_t)p * (size_t)p, 1);
        if (hold == NULL || next == NULL || bf.sigma == NULL) {
            CHECK(0);
            free(hold);
            free(next);
            ck_bine_bf_free(&bf);
            return;
        }
        for (int r = 0; r < p; r++) hold[(size_t)r * p + r] = 1;
        int ok = 1;
        for (int k = s - 1; k >= 0; k--) {
            const int len = 1 << (s - 1 - k);
            for (int r = 0; r < p; r++) {
                const int lo = bf.sigma[r] & ~(len - 1);
                for (int q = 0; q < p; q++)
                    ok &= hold[(size_t)r * p + q] == (bf.sigma[q] >= lo && bf.sigma[q] < lo + len);
                const int peer = ck_bine_partner(r, k, p);
                ok &= (bf.sigma[peer] & ~(len - 1)) == (lo ^ len);
            }
            for (int r = 0; r < p; r++) {
                const int peer = ck_bine_partner(r, k, p);
                for (int q = 0; q < p; q++)
                    next[(size_t)r * p + q] = hold[(size_t)r * p + q] | hold[(size_t)peer * p + q];
            }
            memcpy(hold, next, (size_t)p * (size_t)p);
        }
        for (size_t i = 0; i < (size_t)p * (size_t)p; i++) ok &= hold[i] == 1;
        for (int x = 0; x < p; x++) ok &= bf.sigma[bf.slot_rank[x]] == x;
        CHECK(ok);
        free(hold);
        free(next);
        ck_bine_bf_free(&bf);
    }
}

/* Virtual ranks tile the real ranks in order with neighbouring pairs first. */
static void test_fold(void)
{
    for (int size = 1; size <= 100; size++) {
        ck_bine_bf bf = {0};
        CHECK(ck_bine_bf_init(&bf, size) == MPI_SUCCESS);
        int ok = bf.p2 == ck_pow2_floor(size) && (1 << bf.s) == bf.p2 &&
                 bf.extra == size - bf.p2 && ck_bine_bf_first(&bf, bf.p2) == size;
        for (int v = 0; v < bf.p2; v++) {
            const int f = ck_bine_bf_first(&bf, v), w = ck_bine_bf_width(&bf, v);
            ok &= ck_bine_bf_first(&bf, v + 1) == f + w;
            ok &= ck_bine_bf_vrank(&bf, f) == v && ck_bine_bf_owner(&bf, f) == v;
            if (w == 2) ok &= ck_bine_bf_vrank(&bf, f + 1) == -1 && ck_bine_bf_owner(&bf, f + 1) == v;
        }
        CHECK(ok);
        ck_bine_bf_free(&bf);
    }
}

/* Pack then unpack restores the selected blocks, counts agree, and the
 * local reduction touches exactly the selected blocks. */
static void test_move(void)
{
    const int size = 11;
    const size_t count = 3, total = (size_t)size * count;
    ck_bine_bf bf = {0};
    CHECK(ck_bine_bf_init(&bf, size) == MPI_SUCCESS);
    int nat[33], back[33], packed[33];
    for (size_t i = 0; i < total; i++) nat[i] = (int)i;
    for (int shift = 0; shift < bf.s; shift++) {
        size_t n0 = 0, n1 = 0, n2 = 0;
        const int key = bf.sigma[0] >> shift;
        CHECK(ck_bine_bf_move(&bf, shift, key, CK_BINE_BF_COUNT, NULL, NULL, count, MPI_INT,
                              MPI_OP_NULL, &n0) == MPI_SUCCESS);
        CHECK(ck_bine_bf_move(&bf, shift, key, CK_BINE_BF_PACK, nat, packed, count, MPI_INT,
                              MPI_OP_NULL, &n1) == MPI_SUCCESS);
        for (size_t i = 0; i < total; i++) back[i] = -1;
        CHECK(ck_bine_bf_move(&bf, shift, key, CK_BINE_BF_UNPACK, back, packed, count, MPI_INT,
                              MPI_OP_NULL, &n2) == MPI_SUCCESS);
        CHECK(n0 == n1 && n1 == n2 && n0 > 0);
        int ok = 1;
        for (size_t i = 0; i < total; i++) {
            const int u = ck_bine_bf_owner(&bf, (int)(i / count));
            const int in = (bf.sigma[u] >> shift) == key;
            ok &= in ? back[i] == (int)i : back[i] == -1;
        }
        CHECK(ok);
        CHECK(ck_bine_bf_move(&bf, shift, key, CK_BINE_BF_REDUCE, back, packed, count, MPI_INT,
                              MPI_SUM, &n2) == MPI_SUCCESS);
        ok = 1;
        for (size_t i = 0; i < total; i++) {
            const int u = ck_bine_bf_owner(&bf, (int)(i / count));
            if ((bf.sigma[u] >> shift) == key) ok &= back[i] == 2 * (int)i;
        }
        CHECK(ok);
    }
    ck_bine_bf_free(&bf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    test_nu();
    test_sets();
    test_fold();
    test_move();
    printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed != 0;
}
