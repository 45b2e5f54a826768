/* Distance-doubling Bine tree positions and power-of-two folding.
 *
 * Why the closed form of nu holds: along the path 0 -> ... -> r the steps
 * k1 < k2 < ... < km alternate between adding (from an even rank) and
 * subtracting (from an odd rank) rho(k) = (1 - (-2)^(k+1)) / 3. For even m
 * the sum telescopes pairwise to r = 2 * N, where N has negabinary bits set
 * exactly on [k1, k2) u [k3, k4) u ...; for odd m it gives r = 1 - 2 * N'
 * with bits on [0, k1) u [k2, k3) u .... In both cases the bit pattern is
 * the running parity of the path bits (complemented for odd m), so nu is its
 * "derivative" X ^ (X << 1). Only residues mod 2^(s-1) matter, and each
 * residue has exactly one (s-1)-bit negabinary form: ck_bine_rank_to_nb. */
#include "bine_tree.h"

#include "bine.h"
#include "ck_core.h"

#include <stdint.h>
#include <stdlib.h>

int ck_bine_high_bit(int x)
{
    int h = 0;
    while (x >>= 1) h++;
    return h;
}

int ck_bine_nu(int r, int p, int s)
{
    if (s == 0) return 0;
    const int half = p / 2;
    uint32_t x;
    if (r % 2 == 0) {
        x = s > 1 ? ck_bine_rank_to_nb((r / 2) % half, half, s - 1) : 0;
    } else {
        int m = ((1 - r) / 2) % half;
        if (m < 0) m += half;
        uint32_t np = s > 1 ? ck_bine_rank_to_nb(m, half, s - 1) : 0;
        x = (~np & (uint32_t)(half - 1)) | (1u << (s - 1));
    }
    return (int)((x ^ (x << 1)) & (uint32_t)(p - 1));
}

int ck_bine_nu_rank(int nu, int p, int s)
{
    int r = 0;
    for (int k = 0; k < s; k++)
        if (nu & (1 << k)) r = ck_bine_partner(r, k, p);
    return r;
}

/* p' and e of the fold. */
static int fold_extra(int size)
{
    int pof2 = 1;
    while (pof2 <= size / 2) pof2 *= 2;
    return size - pof2;
}

int ck_bine_fold_vrank(int rel, int size)
{
    int e = fold_extra(size);
    if (rel < 2 * e) return rel % 2 ? -1 : rel / 2;
    return rel - e;
}

int ck_bine_fold_rel(int v, int size)
{
    int e = fold_extra(size);
    return v < e ? 2 * v : v + e;
}

int ck_bine_fold_width(int v, int size) { return v < fold_extra(size) ? 2 : 1; }

int ck_bine_fold_real(int v, int root, int size)
{
    return ck_abs_rank(ck_bine_fold_rel(v, size), root, size);
}

size_t *ck_bine_sigma_offsets(int a, int len, int pof2, int s, int size)
{
    size_t *off = malloc(((size_t)len + 1) * sizeof *off);
    if (off == NULL) return NULL;
    off[0] = 0;
    for (int i = 0; i < len; i++) {
        int w = ck_bine_nu_rank((int)ck_bit_reverse((uint32_t)(a + i), s), pof2, s);
        off[i + 1] = off[i] + (size_t)ck_bine_fold_width(w, size);
    }
    return off;
}
