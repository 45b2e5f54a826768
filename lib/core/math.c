/* Integer helpers shared by the algorithms. */
#include "ck_core.h"

int ck_is_pow2(int p) { return p > 0 && (p & (p - 1)) == 0; }

int ck_pow2_floor(int p)
{
    int q = 1;
    while (q <= p / 2) q *= 2;
    return q;
}

int ck_high_bit(int x)
{
    int h = 0;
    while (x >>= 1) h++;
    return h;
}

int ck_low_bit(int x)
{
    int k = 0;
    while (!(x & 1)) {
        x >>= 1;
        k++;
    }
    return k;
}

int ck_log2_ceil(int p)
{
    int k = 0;
    while ((1L << k) < (long)p) k++;
    return k;
}

size_t ck_block_count(size_t count, int nblocks, int b)
{
    size_t base = count / (size_t)nblocks, extra = count % (size_t)nblocks;
    return base + ((size_t)b < extra ? 1 : 0);
}

size_t ck_block_offset(size_t count, int nblocks, int b)
{
    size_t base = count / (size_t)nblocks, extra = count % (size_t)nblocks;
    size_t ub = (size_t)b;
    return ub * base + (ub < extra ? ub : extra);
}
