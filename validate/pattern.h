/* Input patterns and the reference of a reduction (validator internals). */
#ifndef CK_VALIDATE_PATTERN_H
#define CK_VALIDATE_PATTERN_H

#include "validate.h"

#include <stddef.h>
#include <stdint.h>

/* A generator of one input vector: element j is a function of a key fixed
 * per (source rank, block slot, seed) and of j. The key costs four hash
 * rounds once, each element one, which keeps the fill that runs before
 * every timed iteration of collkit-bench cheap on large vectors. */
typedef enum {
    GEN_RANGE,  /* low + a uniform draw in [0, span) */
    GEN_PROD,   /* +-1, and +-2 where j % period == phase (one rank per element) */
    GEN_AFFINE  /* a packed affine map a * 2^15 + b, a odd, both below 2^15 */
} gen_kind;

typedef struct {
    gen_kind kind;
    uint64_t key;
    uint32_t span;
    int64_t low;
    size_t period, phase;
} ckv_gen;

static inline uint64_t ckv_mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    x ^= x >> 33;
    return x;
}

#define CKV_AFFINE_BITS 15

static inline int64_t ckv_gen_value(const ckv_gen *g, size_t j)
{
    uint64_t h = ckv_mix(g->key ^ ((uint64_t)j * 0xa0761d6478bd642fULL));
    if (g->kind == GEN_RANGE)
        /* multiply-shift instead of %: one multiplication, no division */
        return g->low + (int64_t)(((h >> 32) * g->span) >> 32);
    if (g->kind == GEN_PROD) {
        int64_t sign = (h & 1u) ? -1 : 1;
        return j % g->period == g->phase ? 2 * sign : sign;
    }
    int64_t a = (int64_t)(((h >> 50) << 1) | 1u);
    int64_t b = (int64_t)((h >> 8) & ((1u << CKV_AFFINE_BITS) - 1u));
    return a * ((int64_t)1 << CKV_AFFINE_BITS) + b;
}

/* Input block `slot` of rank src in a data-movement collective. */
ckv_gen ckv_gen_movement(const ck_datatype_desc *dt, int src, int slot, uint64_t seed);

/* Rank r's input vector in a reduction. */
ckv_gen ckv_gen_reduction(const ckv_case *c, int r, uint64_t seed);

/* Element j of rank r's spread input (ckv_case.spread): +-1e6 or a
 * multiple of 1e-2 in [-0.09, 0.09], half of each. In float 1e6 + 0.01
 * rounds back to 1e6 while 0.01 + 0.01 does not, so where the big values
 * cancel, the small ones survive or vanish by the order of additions. */
double ckv_spread_value(int r, uint64_t seed, size_t j);

/* acc op v as MPI defines it: acc is the operand of the lower ranks. */
int64_t ckv_combine(ckv_op op, int64_t acc, int64_t v);

/* Elements [first, first + n) of the reduced vector: every rank's input
 * combined in rank order (the order MPI defines). */
void ckv_reduced(const ckv_case *c, uint64_t seed, size_t first, size_t n, int64_t *acc);

#endif
