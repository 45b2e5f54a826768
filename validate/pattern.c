/*
 * Input patterns. Every value is a small integer, exact in every datatype,
 * and so is every reduction of them in any order: the check can demand
 * equality, even for float. Ranges:
 *   data movement  [-125, 125] for 1-byte types, [-2^23, 2^23) otherwise
 *                  (exact in float), so a block or element out of place shows;
 *   sum            [-m, m] with m = 3, or for 1-byte types m = min(3, 127 / p)
 *                  so that no partial sum leaves int8 (ranks >= 127 add 0);
 *   max, min       [-100, 100] (fits int8; spread wide enough that a missing
 *                  rank usually changes the result);
 *   prod           +-1, except one rank per element (which one moves with the
 *                  element and seed) contributes +-2: the product is +-2,
 *                  exact, and a missing or doubled contribution shows;
 *   noncomm        affine maps x -> a x + b mod 2^15 packed as a * 2^15 + b
 *                  (30 bits), composed in rank order.
 * The one exception is the spread input of sums over float and double
 * (ckv_spread_value): not exact, on purpose, so that the order of additions
 * shows in the result's bits.
 */
#include "pattern.h"

static uint64_t key4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t h = ckv_mix(a + 0x9e3779b97f4a7c15ULL);
    h = ckv_mix(h ^ (b + 0x632be59bd9b4e019ULL));
    h = ckv_mix(h ^ (c + 0x8cb92ba72f3d8dd7ULL));
    return ckv_mix(h ^ (d + 0xd1b54a32d192ed03ULL));
}

/* Distinguishes the keys of the two kinds of input. */
enum { KEY_MOVEMENT = 1, KEY_REDUCTION = 2, KEY_SPREAD = 3 };

static ckv_gen range(uint64_t key, uint32_t span, int64_t low)
{
    ckv_gen g = {.kind = GEN_RANGE, .key = key, .span = span, .low = low, .period = 1};
    return g;
}

ckv_gen ckv_gen_movement(const ck_datatype_desc *dt, int src, int slot, uint64_t seed)
{
    uint64_t key = key4((uint64_t)src, (uint64_t)slot, seed, KEY_MOVEMENT);
    if (dt->size == 1) return range(key, 251, -125);
    return range(key, 1u << 24, -((int64_t)1 << 23));
}

ckv_gen ckv_gen_reduction(const ckv_case *c, int r, uint64_t seed)
{
    uint64_t key = key4((uint64_t)r, (uint64_t)c->op, seed, KEY_REDUCTION);
    if (c->op == CKV_SUM) {
        int64_t m = 3;
        if (c->dtype->size == 1) {
            if (r >= 127) return range(key, 1, 0);
            m = c->p <= 127 ? 127 / c->p : 1;
            if (m > 3) m = 3;
        }
        return range(key, (uint32_t)(2 * m + 1), -m);
    }
    if (c->op == CKV_MAX || c->op == CKV_MIN) return range(key, 201, -100);
    if (c->op == CKV_PROD) {
        size_t p = (size_t)c->p;
        ckv_gen g = {.kind = GEN_PROD, .key = key, .period = p,
                     .phase = ((size_t)r + p - (size_t)(seed % p)) % p};
        return g;
    }
    ckv_gen g = {.kind = GEN_AFFINE, .key = key, .period = 1};
    return g;
}

#define AFF_MOD ((int64_t)1 << CKV_AFFINE_BITS)

int64_t ckv_combine(ckv_op op, int64_t acc, int64_t v)
{
    if (op == CKV_SUM) return acc + v;
    if (op == CKV_MAX) return v > acc ? v : acc;
    if (op == CKV_MIN) return v < acc ? v : acc;
    if (op == CKV_PROD) return acc * v;
    /* acc(v(x)): the lower ranks' map applied after the higher one's, so
     * f(g(x)) != g(f(x)) in general and any reordering shows. */
    int64_t au = acc / AFF_MOD, bu = acc % AFF_MOD, av = v / AFF_MOD, bv = v % AFF_MOD;
    return ((au * av) % AFF_MOD) * AFF_MOD + (au * bv + bu) % AFF_MOD;
}

void ckv_reduced(const ckv_case *c, uint64_t seed, size_t first, size_t n, int64_t *acc)
{
    for (int r = 0; r < c->p; r++) {
        ckv_gen g = ckv_gen_reduction(c, r, seed);
        for (size_t j = 0; j < n; j++) {
            int64_t v = ckv_gen_value(&g, first + j);
            acc[j] = r == 0 ? v : ckv_combine(c->op, acc[j], v);
        }
    }
}

double ckv_spread_value(int r, uint64_t seed, size_t j)
{
    /* The key is computed per element here (four rounds more than the
     * generators): spread cases run in the matrix only, never in a timed
     * loop, and this keeps the value a plain function of (r, seed, j). */
    uint64_t h = ckv_mix(key4((uint64_t)r, seed, 0, KEY_SPREAD) ^
                         ((uint64_t)j * 0xa0761d6478bd642fULL));
    double sign = (h & 2u) ? -1.0 : 1.0;
    if (h & 1u) return sign * 1e6;
    return sign * (double)(1 + (h >> 8) % 9) * 1e-2;
}
