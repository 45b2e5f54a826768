/* Unit tests of the Bine tree math (lib/core/bine.h, lib/core/bine_tree.h),
 * standalone: no MPI. Exit status 0 when every check holds.
 *
 * Locality (paper Eq. 2), for p = 2^s, root 0, modulo distance
 * d(a, b) = min(|a-b|, p-|a-b|), summed over all messages:
 *   binomial distance-halving tree: step j sends 2^j messages over 2^(s-1-j)
 *     -> s * 2^(s-1);
 *   Bine distance-halving tree: the same 2^j messages over |rho(s-1-j)|,
 *     |rho(i)| = (2^(i+1) + (-1)^i) / 3 -> (3 s 2^s + 2^s - (-1)^s) / 9;
 *   recursive-doubling butterfly: p/2 pairs per step over 2^k
 *     -> 2^(s-1) (2^s - 1);
 *   Bine butterfly: p/2 pairs per step over |rho(k)|
 *     -> 2^(s-1) (2^(s+1) - 2 + (s mod 2)) / 3.
 * Both ratios tend to 2/3. The values are checked exactly for s = 2..16. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bine.h"
#include "bine_tree.h"
#include "ck_core.h"

static int failures = 0;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            if (failures <= 20) {                                                                  \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fprintf(stderr, "\n");                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static int64_t mod_dist(int a, int b, int p)
{
    int64_t d = a > b ? a - b : b - a;
    return d < p - d ? d : p - d;
}

/* Distance-halving trees over positions: step j, senders at multiples of
 * 2^(s-j) send to position + 2^(s-1-j). `bine` picks the rank of a position.
 * Also checks that every rank but the root receives exactly once. */
static int64_t halving_tree_distance(int s, int bine)
{
    const int p = 1 << s;
    char *got = calloc((size_t)p, 1);
    int64_t sum = 0;
    if (got == NULL) abort();
    got[0] = 1;
    for (int j = 0; j < s; j++) {
        for (int q = 0; q < p; q += 1 << (s - j)) {
            int c = q + (1 << (s - 1 - j));
            int a = bine ? ck_bine_tree_rank(q, p, s) : q;
            int b = bine ? ck_bine_tree_rank(c, p, s) : c;
            EXPECT(got[a], "s=%d sender %d has no data at step %d", s, a, j);
            EXPECT(!got[b], "s=%d rank %d reached twice", s, b);
            got[b] = 1;
            sum += mod_dist(a, b, p);
        }
    }
    for (int r = 0; r < p; r++) EXPECT(got[r], "s=%d rank %d never reached (bine=%d)", s, r, bine);
    free(got);
    return sum;
}

static int64_t butterfly_distance(int s, int bine)
{
    const int p = 1 << s;
    int64_t sum = 0;
    for (int k = 0; k < s; k++)
        for (int r = 0; r < p; r++) {
            int q = bine ? ck_bine_partner(r, k, p) : r ^ (1 << k);
            EXPECT(q != r, "s=%d step %d: %d is its own partner", s, k, r);
            if (r < q) sum += mod_dist(r, q, p);
        }
    return sum;
}

/* Distance-halving Bine tree: the subtree of position q (height j = lowbit)
 * is the run of 2^j consecutive ranks (mod p) whose negabinary forms agree
 * with q's rank above bit j. */
static void check_halving_subtrees(int s)
{
    const int p = 1 << s;
    for (int q = 1; q < p; q++) {
        int j = 0;
        while (!(q & (1 << j))) j++;
        int len = 1 << j;
        uint32_t nb = ck_bine_rank_to_nb(ck_bine_tree_rank(q, p, s), p, s);
        /* smallest j-bit negabinary value: sum of (-2)^i over odd i < j */
        int64_t minj = 0, w = -2;
        for (int i = 1; i < j; i += 2, w *= 4) minj += w;
        int64_t lo = ck_nb_decode(nb & ~(uint32_t)(len - 1)) + minj;
        int first = (int)(((lo % p) + p) % p);
        for (int x = 0; x < len; x++) {
            int r = ck_bine_tree_rank(q + x, p, s);
            int off = ((r - first) % p + p) % p;
            EXPECT(off < len, "s=%d position %d: rank %d outside run [%d, +%d)", s, q, r, first, len);
        }
    }
}

/* Distance-doubling Bine tree: simulate it (step k: holders send to their
 * partner), check nu, that every rank is reached once, and that every
 * subtree is the sigma range [sigma(v), sigma(v) + 2^(s-1-h)). */
static void check_doubling_tree(int s)
{
    const int p = 1 << s;
    int *parent = malloc(sizeof(int) * (size_t)p), *nu = malloc(sizeof(int) * (size_t)p);
    int *holders = malloc(sizeof(int) * (size_t)p), *size = calloc((size_t)p, sizeof(int));
    if (!parent || !nu || !holders || !size) abort();
    for (int r = 0; r < p; r++) parent[r] = -2;
    parent[0] = -1;
    nu[0] = 0;
    holders[0] = 0;
    int n = 1;
    for (int k = 0; k < s; k++) {
        for (int i = 0; i < n; i++) {
            int a = holders[i], b = ck_bine_partner(a, k, p);
            EXPECT(parent[b] == -2, "s=%d rank %d reached twice", s, b);
            parent[b] = a;
            nu[b] = nu[a] | (1 << k);
            holders[n + i] = b;
        }
        n *= 2;
    }
    for (int r = 0; r < p; r++) {
        EXPECT(parent[r] != -2, "s=%d rank %d never reached", s, r);
        EXPECT(ck_bine_nu(r, p, s) == nu[r], "s=%d nu(%d) = %d, tree says %d", s, r,
               ck_bine_nu(r, p, s), nu[r]);
        EXPECT(ck_bine_nu_rank(nu[r], p, s) == r, "s=%d nu_rank(nu(%d)) wrong", s, r);
        for (int k = 0; k < s; k++) {
            int q = ck_bine_partner(r, k, p), m = (2 << k) - 1;
            EXPECT((ck_bine_nu(q, p, s) & m) == ((nu[r] ^ (1 << k)) & m),
                   "s=%d butterfly partner of %d at step %d breaks the sigma ranges", s, r, k);
        }
    }
    /* every rank lies in the sigma range of each of its ancestors */
    for (int w = 0; w < p; w++) {
        int sw = (int)ck_bit_reverse((uint32_t)nu[w], s);
        for (int a = w; a >= 0; a = parent[a]) {
            size[a]++;
            int len = a == 0 ? p : 1 << (s - 1 - ck_high_bit(nu[a]));
            int sa = (int)ck_bit_reverse((uint32_t)nu[a], s);
            EXPECT(sw >= sa && sw < sa + len, "s=%d rank %d outside the range of ancestor %d", s,
                   w, a);
        }
    }
    for (int a = 1; a < p; a++)
        EXPECT(size[a] == 1 << (s - 1 - ck_high_bit(nu[a])), "s=%d subtree size of %d", s, a);
    free(parent);
    free(nu);
    free(holders);
    free(size);
}

static void check_fold(void)
{
    for (int p = 1; p <= 200; p++) {
        int pof2 = 1;
        while (pof2 * 2 <= p) pof2 *= 2;
        int next = 0; /* next relative rank the virtual ranks must cover */
        const int rem = ck_fold_rem(p);
        for (int v = 0; v < pof2; v++) {
            int rel = ck_fold_first(v, rem), w = ck_fold_width(v, rem);
            EXPECT(rel == next, "p=%d virtual %d starts at %d, expected %d", p, v, rel, next);
            EXPECT(ck_fold_vrank(rel, rem, CK_FOLD_KEEP_EVEN) == v, "p=%d vrank(rel(%d))", p, v);
            if (w == 2)
                EXPECT(ck_fold_vrank(rel + 1, rem, CK_FOLD_KEEP_EVEN) == -1, "p=%d %d not folded",
                       p, rel + 1);
            next = rel + w;
        }
        EXPECT(next == p, "p=%d: virtual ranks cover %d ranks", p, next);
    }
}

int main(void)
{
    for (int s = 1; s <= 16; s++) {
        int64_t P = (int64_t)1 << s, sign = s % 2 ? -1 : 1;
        int64_t bin_tree = halving_tree_distance(s, 0), bine_tree = halving_tree_distance(s, 1);
        int64_t xor_bf = butterfly_distance(s, 0), bine_bf = butterfly_distance(s, 1);
        EXPECT(bin_tree == s * P / 2, "s=%d binomial tree %lld", s, (long long)bin_tree);
        EXPECT(bine_tree * 9 == 3 * s * P + P - sign, "s=%d Bine tree %lld", s, (long long)bine_tree);
        EXPECT(xor_bf == P / 2 * (P - 1), "s=%d recursive doubling %lld", s, (long long)xor_bf);
        EXPECT(bine_bf * 3 == P / 2 * (2 * P - 2 + s % 2), "s=%d Bine butterfly %lld", s,
               (long long)bine_bf);
        if (s >= 2)
            printf("p=%-6lld tree %lld/%lld = %.4f  butterfly %lld/%lld = %.4f\n", (long long)P,
                   (long long)bine_tree, (long long)bin_tree, (double)bine_tree / (double)bin_tree,
                   (long long)bine_bf, (long long)xor_bf, (double)bine_bf / (double)xor_bf);
        check_halving_subtrees(s);
        check_doubling_tree(s);
    }
    check_fold();
    printf("%s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures != 0;
}
