/* Typed buffers, input patterns and the reference formula of the matrix. */
#include "matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const tkind_names[T_COUNT] = {"int", "int64", "float", "double"};
const char *const okind_names[OP_COUNT] = {"sum", "max", "noncomm"};

MPI_Datatype tk_mpi(tkind t)
{
    switch (t) {
    case T_INT: return MPI_INT;
    case T_INT64: return MPI_INT64_T;
    case T_FLOAT: return MPI_FLOAT;
    default: return MPI_DOUBLE;
    }
}

size_t tk_size(tkind t)
{
    switch (t) {
    case T_INT: return sizeof(int);
    case T_INT64: return sizeof(int64_t);
    case T_FLOAT: return sizeof(float);
    default: return sizeof(double);
    }
}

void put(void *buf, size_t i, tkind t, int64_t v)
{
    switch (t) {
    case T_INT: ((int *)buf)[i] = (int)v; break;
    case T_INT64: ((int64_t *)buf)[i] = v; break;
    case T_FLOAT: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = (double)v; break;
    }
}

int64_t get(const void *buf, size_t i, tkind t)
{
    switch (t) {
    case T_INT: return ((const int *)buf)[i];
    case T_INT64: return ((const int64_t *)buf)[i];
    case T_FLOAT: return (int64_t)llround(((const float *)buf)[i]);
    default: return (int64_t)llround(((const double *)buf)[i]);
    }
}

int same(const void *buf, size_t i, tkind t, int64_t expected)
{
    if (t == T_FLOAT || t == T_DOUBLE) {
        /* Inputs are small integers, so the exact result is representable;
         * the bound only forgives a reassociated sum's last-bit rounding. */
        double got = t == T_FLOAT ? ((const float *)buf)[i] : ((const double *)buf)[i];
        double e = (double)expected;
        double tol = (t == T_FLOAT ? 1e-6 : 1e-12) * (fabs(e) > 1.0 ? fabs(e) : 1.0);
        return fabs(got - e) <= tol;
    }
    return get(buf, i, t) == expected;
}

/* ---------------------------------------------------------------- patterns */

int64_t mov_val(int r, int b, size_t i, int seed)
{
    /* below 2^23: exact in float; a shift of one element or block changes it */
    uint64_t v = (uint64_t)r * 131071u + (uint64_t)b * 8191u + (uint64_t)i * 3u + (uint64_t)seed;
    return (int64_t)(v % 8388593u);
}

#define AFF_BITS 15
#define AFF_MOD (1 << AFF_BITS)

static int64_t aff_pack(int64_t a, int64_t b) { return a * AFF_MOD + b; }

int64_t red_val(int r, size_t i, int seed, okind o)
{
    uint64_t h = (uint64_t)r * 37u + (uint64_t)i * 11u + (uint64_t)seed;
    if (o == OP_NONCOMM) {
        int64_t a = (int64_t)((h * 5u + (uint64_t)r) % (AFF_MOD / 2)) * 2 + 1;
        int64_t b = (int64_t)((h * 13u + 7u) % AFF_MOD);
        return aff_pack(a, b);
    }
    return (int64_t)(h % 97u) - 48;
}

/* Composition of affine maps x -> a x + b (mod 2^15): associative, and
 * f(g(x)) != g(f(x)) in general, so any reordering of operands shows. */
int64_t red_combine(int64_t u, int64_t v, okind o)
{
    switch (o) {
    case OP_SUM: return u + v;
    case OP_MAX: return u > v ? u : v;
    default: {
        int64_t au = u / AFF_MOD, bu = u % AFF_MOD, av = v / AFF_MOD, bv = v % AFF_MOD;
        return aff_pack((au * av) % AFF_MOD, (au * bv + bu) % AFF_MOD);
    }
    }
}

int64_t red_expected(int p, size_t i, int seed, okind o)
{
    int64_t acc = red_val(0, i, seed, o);
    for (int r = 1; r < p; r++) acc = red_combine(acc, red_val(r, i, seed, o), o);
    return acc;
}

/* ---------------------------------------------------------------- ops */

static MPI_Op noncomm_op = MPI_OP_NULL;

static void noncomm_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    tkind t = *dt == MPI_INT ? T_INT : *dt == MPI_INT64_T ? T_INT64 : T_DOUBLE;
    for (int i = 0; i < *len; i++)
        put(inout, (size_t)i, t,
            red_combine(get(in, (size_t)i, t), get(inout, (size_t)i, t), OP_NONCOMM));
}

int matrix_ops_init(void) { return MPI_Op_create(noncomm_fn, 0, &noncomm_op); }

void matrix_ops_free(void)
{
    if (noncomm_op != MPI_OP_NULL) MPI_Op_free(&noncomm_op);
}

MPI_Op ok_mpi(okind o)
{
    switch (o) {
    case OP_SUM: return MPI_SUM;
    case OP_MAX: return MPI_MAX;
    default: return noncomm_op;
    }
}

/* Packed affine maps need 30 bits: int, int64 and double hold them exactly,
 * float does not, so the non-commutative op skips float. */
int ok_supports(okind o, tkind t) { return o != OP_NONCOMM || t != T_FLOAT; }

/* ---------------------------------------------------------------- guarded buffers */

#define GUARD 64
#define GUARD_BYTE 0xA5

int gbuf_alloc(gbuf *g, size_t bytes)
{
    g->bytes = bytes;
    g->mem = malloc(bytes + 2 * GUARD);
    if (!g->mem) return -1;
    memset(g->mem, GUARD_BYTE, GUARD);
    memset(g->mem + GUARD + bytes, GUARD_BYTE, GUARD);
    g->data = g->mem + GUARD;
    return 0;
}

void gbuf_free(gbuf *g)
{
    free(g->mem);
    g->mem = NULL;
    g->data = NULL;
}

void gbuf_scramble(gbuf *g) { memset(g->data, 0x5C, g->bytes); }

int gbuf_guards_ok(const gbuf *g)
{
    for (size_t i = 0; i < GUARD; i++)
        if (g->mem[i] != GUARD_BYTE || g->mem[GUARD + g->bytes + i] != GUARD_BYTE) return 0;
    return 1;
}
