/* Negabinary arithmetic and the partner rules of Bine trees and butterflies. */
#include "bine.h"

uint32_t ck_nb_encode(int64_t v)
{
    /* Repeated division by -2 with a non-negative remainder. */
    uint32_t bits = 0;
    for (int i = 0; v != 0 && i < 32; i++) {
        int64_t rem = v % -2;
        v /= -2;
        if (rem < 0) {
            rem += 2;
            v += 1;
        }
        bits |= (uint32_t)rem << i;
    }
    return bits;
}

int64_t ck_nb_decode(uint32_t bits)
{
    int64_t v = 0, w = 1;
    for (int i = 0; i < 32; i++, w *= -2)
        if (bits & (1u << i)) v += w;
    return v;
}

int64_t ck_nb_max_positive(int s)
{
    int64_t m = 0;
    for (int i = 0; i < s; i += 2) m += (int64_t)1 << i;
    return m;
}

uint32_t ck_bine_rank_to_nb(int r, int p, int s)
{
    int64_t v = r <= ck_nb_max_positive(s) ? r : (int64_t)r - p;
    return ck_nb_encode(v) & (s >= 32 ? 0xffffffffu : ((1u << s) - 1));
}

int ck_bine_nb_to_rank(uint32_t nb, int p)
{
    int64_t v = ck_nb_decode(nb) % p;
    return (int)(v < 0 ? v + p : v);
}

int64_t ck_bine_rho(int k)
{
    int64_t sum = 0, w = 1;
    for (int i = 0; i <= k; i++, w *= -2) sum += w;
    return sum;
}

int ck_bine_partner(int r, int k, int p)
{
    int64_t rho = ck_bine_rho(k) % p;
    int64_t q = (r % 2 == 0) ? r + rho : r - rho;
    q %= p;
    return (int)(q < 0 ? q + p : q);
}

uint32_t ck_gray(uint32_t x) { return x ^ (x >> 1); }

uint32_t ck_inverse_gray(uint32_t x)
{
    for (uint32_t shift = x >> 1; shift; shift >>= 1) x ^= shift;
    return x;
}

int ck_bine_tree_position(int r, int p, int s)
{
    return (int)ck_gray(ck_bine_rank_to_nb(r, p, s));
}

int ck_bine_tree_rank(int position, int p, int s)
{
    (void)s;
    return ck_bine_nb_to_rank(ck_inverse_gray((uint32_t)position), p);
}

uint32_t ck_bit_reverse(uint32_t x, int s)
{
    uint32_t y = 0;
    for (int i = 0; i < s; i++)
        if (x & (1u << i)) y |= 1u << (s - 1 - i);
    return y;
}
