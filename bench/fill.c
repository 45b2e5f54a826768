/*
 * Input patterns and the reference.
 *
 * Every value is a small integer, so it is exact in every datatype and every
 * reduction of it is exact too, whatever order an algorithm combines in: the
 * check can demand equality, even for float. Ranges:
 *   data movement  a hash of (source rank, block, element, iteration):
 *                  [-125, 125] for int8, [-2^23, 2^23) otherwise (exact in
 *                  float), so a block or element out of place shows;
 *   sum            [-m, m] with m = 3, or for int8 m = min(3, 127 / p) so that
 *                  no partial sum leaves int8 (ranks >= 127 contribute 0);
 *   max, min       [-100, 100] (fits int8; spread wide enough that a missing
 *                  rank usually changes the result);
 *   prod           +-1, except one rank per element (which one moves with the
 *                  element and iteration) contributes +-2: the product is +-2,
 *                  exact, and a missing or doubled contribution shows.
 * The value that marks an output element as "not written" is the byte 0x80
 * everywhere: -128 in int8, a huge negative integer in int32/int64 and a
 * tiny non-integer in float/double, none of which the patterns produce.
 */
#include "fill.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define UNWRITTEN 0x80
#define GUARD_BYTE 0x5a

size_t dtype_size(bench_dtype d)
{
    switch (d) {
    case DT_INT8: return 1;
    case DT_INT32: return 4;
    case DT_INT64: return 8;
    case DT_FLOAT: return sizeof(float);
    default: return sizeof(double);
    }
}

MPI_Datatype dtype_mpi(bench_dtype d)
{
    switch (d) {
    case DT_INT8: return MPI_INT8_T;
    case DT_INT32: return MPI_INT32_T;
    case DT_INT64: return MPI_INT64_T;
    case DT_FLOAT: return MPI_FLOAT;
    default: return MPI_DOUBLE;
    }
}

MPI_Op op_mpi(bench_op o)
{
    switch (o) {
    case OP_SUM: return MPI_SUM;
    case OP_MAX: return MPI_MAX;
    case OP_MIN: return MPI_MIN;
    default: return MPI_PROD;
    }
}

/* ------------------------------------------------------------ layout */

static int mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

int fill_layout_of(const bench_point *pt, int rank, int p, fill_layout *lay)
{
    size_t c = pt->count, pc, bytes;
    /* p * count elements of the widest type must fit in size_t, with room
     * for the guard; checked for the largest buffer of any rank, so that
     * every rank reaches the same verdict. */
    if (mul_ok((size_t)p, c, &pc) != 0 || mul_ok(pc, dtype_size(pt->dtype), &bytes) != 0 ||
        bytes > SIZE_MAX - FILL_GUARD_BYTES)
        return -1;
    int root = rank == pt->root, ip = pt->in_place;
    memset(lay, 0, sizeof *lay);
    switch (pt->coll) {
    case CK_BCAST:
        lay->has_rbuf = 1, lay->rbuf_elems = c;
        break;
    case CK_REDUCE:
        lay->send_in_place = ip && root;
        lay->has_sbuf = !lay->send_in_place, lay->sbuf_elems = c;
        lay->has_rbuf = root, lay->rbuf_elems = c;
        break;
    case CK_GATHER:
        lay->send_in_place = ip && root;
        lay->has_sbuf = !lay->send_in_place, lay->sbuf_elems = c;
        lay->has_rbuf = root, lay->rbuf_elems = pc;
        break;
    case CK_SCATTER:
        lay->has_sbuf = root, lay->sbuf_elems = pc;
        lay->recv_in_place = ip && root;
        lay->has_rbuf = !lay->recv_in_place, lay->rbuf_elems = c;
        break;
    case CK_ALLGATHER:
        lay->send_in_place = ip;
        lay->has_sbuf = !ip, lay->sbuf_elems = c;
        lay->has_rbuf = 1, lay->rbuf_elems = pc;
        break;
    case CK_REDUCE_SCATTER:
        lay->send_in_place = ip;
        lay->has_sbuf = !ip, lay->sbuf_elems = pc;
        lay->has_rbuf = 1, lay->rbuf_elems = ip ? pc : c;
        break;
    case CK_ALLREDUCE:
        lay->send_in_place = ip;
        lay->has_sbuf = !ip, lay->sbuf_elems = c;
        lay->has_rbuf = 1, lay->rbuf_elems = c;
        break;
    case CK_ALLTOALL:
        lay->send_in_place = ip;
        lay->has_sbuf = !ip, lay->sbuf_elems = pc;
        lay->has_rbuf = 1, lay->rbuf_elems = pc;
        break;
    default:
        return -1;
    }
    if (!lay->has_sbuf) lay->sbuf_elems = 0;
    if (!lay->has_rbuf) lay->rbuf_elems = 0;
    return 0;
}

/* ------------------------------------------------------------ values */

static uint64_t scramble(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    x ^= x >> 33;
    return x;
}

static uint64_t key4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t h = scramble(a + 0x9e3779b97f4a7c15ULL);
    h = scramble(h ^ (b + 0x632be59bd9b4e019ULL));
    h = scramble(h ^ (c + 0x8cb92ba72f3d8dd7ULL));
    return scramble(h ^ (d + 0xd1b54a32d192ed03ULL));
}

/* Values are drawn per element from a key fixed per (rank, block, iteration):
 * the key costs four rounds once, each element one, which keeps the fill that
 * runs before every iteration cheap on large vectors. */
static uint64_t elem_hash(uint64_t key, size_t i)
{
    return scramble(key ^ ((uint64_t)i * 0xa0761d6478bd642fULL));
}

static uint64_t mov_key(int src, int blk, long it)
{
    return key4((uint64_t)src, (uint64_t)blk, (uint64_t)it, 1);
}

/* Element i of the block that rank src holds for block index blk. */
static int64_t mov_value(bench_dtype dt, uint64_t key, size_t i)
{
    uint64_t h = elem_hash(key, i);
    if (dt == DT_INT8) return (int64_t)(h % 251u) - 125;
    return (int64_t)(h % (1u << 24)) - (1 << 23);
}

static uint64_t red_key(const bench_point *pt, int r, long it)
{
    return key4((uint64_t)r, (uint64_t)pt->op, (uint64_t)it, 2);
}

/* Rank r's contribution to element j of a reduction (key = red_key(r)). */
static int64_t red_value(const bench_point *pt, int p, int r, uint64_t key, size_t j, long it)
{
    uint64_t h = elem_hash(key, j);
    switch (pt->op) {
    case OP_SUM: {
        int64_t m = 3;
        if (pt->dtype == DT_INT8) {
            if (r >= 127) return 0;
            m = p <= 127 ? 127 / p : 1;
            if (m > 3) m = 3;
        }
        return (int64_t)(h % (uint64_t)(2 * m + 1)) - m;
    }
    case OP_MAX:
    case OP_MIN:
        return (int64_t)(h % 201u) - 100;
    default: {
        int64_t sign = (h & 1u) ? -1 : 1;
        uint64_t special = ((uint64_t)j + (uint64_t)it) % (uint64_t)p;
        return (uint64_t)r == special ? 2 * sign : sign;
    }
    }
}

static int64_t combine(bench_op op, int64_t acc, int64_t v)
{
    switch (op) {
    case OP_SUM: return acc + v;
    case OP_MAX: return v > acc ? v : acc;
    case OP_MIN: return v < acc ? v : acc;
    default: return acc * v;
    }
}

/* The reference of elements [first, first + n) of a reduction, n <= CHUNK,
 * combined rank by rank in rank order (the order MPI defines). */
#define CHUNK 1024

static void red_reference(const bench_point *pt, int p, size_t first, size_t n, long it,
                          int64_t *acc)
{
    for (int r = 0; r < p; r++) {
        uint64_t key = red_key(pt, r, it);
        for (size_t j = 0; j < n; j++) {
            int64_t v = red_value(pt, p, r, key, first + j, it);
            acc[j] = r == 0 ? v : combine(pt->op, acc[j], v);
        }
    }
}

/* ------------------------------------------------------------ element access */

static void put(bench_dtype dt, void *buf, size_t i, int64_t v)
{
    switch (dt) {
    case DT_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case DT_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case DT_INT64: ((int64_t *)buf)[i] = v; break;
    case DT_FLOAT: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = (double)v; break;
    }
}

/* Equality is exact (see the top of this file). */
static int equal(bench_dtype dt, const void *buf, size_t i, int64_t v)
{
    switch (dt) {
    case DT_INT8: return ((const int8_t *)buf)[i] == v;
    case DT_INT32: return ((const int32_t *)buf)[i] == v;
    case DT_INT64: return ((const int64_t *)buf)[i] == v;
    case DT_FLOAT: return (double)((const float *)buf)[i] == (double)v;
    default: return ((const double *)buf)[i] == (double)v;
    }
}

static void format_elem(bench_dtype dt, const void *buf, size_t i, char *out, size_t len)
{
    switch (dt) {
    case DT_INT8: snprintf(out, len, "%d", (int)((const int8_t *)buf)[i]); break;
    case DT_INT32: snprintf(out, len, "%" PRId32, ((const int32_t *)buf)[i]); break;
    case DT_INT64: snprintf(out, len, "%" PRId64, ((const int64_t *)buf)[i]); break;
    case DT_FLOAT: snprintf(out, len, "%.9g", (double)((const float *)buf)[i]); break;
    default: snprintf(out, len, "%.17g", ((const double *)buf)[i]); break;
    }
}

/* ------------------------------------------------------------ fill */

void fill_guards(const fill_layout *lay, const bench_point *pt, void *sbuf, void *rbuf)
{
    size_t es = dtype_size(pt->dtype);
    if (lay->has_sbuf) memset((char *)sbuf + lay->sbuf_elems * es, GUARD_BYTE, FILL_GUARD_BYTES);
    if (lay->has_rbuf) memset((char *)rbuf + lay->rbuf_elems * es, GUARD_BYTE, FILL_GUARD_BYTES);
}

static void put_mov_block(const bench_point *pt, void *buf, int slot, int src, int blk, long it)
{
    size_t c = pt->count, base = (size_t)slot * c;
    uint64_t key = mov_key(src, blk, it);
    for (size_t i = 0; i < c; i++) put(pt->dtype, buf, base + i, mov_value(pt->dtype, key, i));
}

static void put_red(const bench_point *pt, int p, int rank, void *buf, size_t n, long it)
{
    uint64_t key = red_key(pt, rank, it);
    for (size_t j = 0; j < n; j++) put(pt->dtype, buf, j, red_value(pt, p, rank, key, j, it));
}

void fill_buffers(const bench_point *pt, const fill_layout *lay, int rank, int p, long it,
                  void *sbuf, void *rbuf)
{
    size_t es = dtype_size(pt->dtype);
    int root = pt->root;
    if (lay->has_rbuf) memset(rbuf, UNWRITTEN, lay->rbuf_elems * es);
    switch (pt->coll) {
    case CK_BCAST:
        if (rank == root) put_mov_block(pt, rbuf, 0, root, 0, it);
        break;
    case CK_REDUCE:
    case CK_ALLREDUCE:
        put_red(pt, p, rank, lay->send_in_place ? rbuf : sbuf, pt->count, it);
        break;
    case CK_REDUCE_SCATTER:
        put_red(pt, p, rank, lay->send_in_place ? rbuf : sbuf, (size_t)p * pt->count, it);
        break;
    case CK_GATHER:
    case CK_ALLGATHER:
        /* In place, a rank's own block is already where the result puts it. */
        put_mov_block(pt, lay->send_in_place ? rbuf : sbuf, lay->send_in_place ? rank : 0, rank,
                      rank, it);
        break;
    case CK_SCATTER:
        if (rank == root)
            for (int b = 0; b < p; b++) put_mov_block(pt, sbuf, b, root, b, it);
        break;
    case CK_ALLTOALL:
        for (int b = 0; b < p; b++) put_mov_block(pt, lay->send_in_place ? rbuf : sbuf, b, rank, b, it);
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ check */

typedef struct {
    const bench_point *pt;
    int rank;
    char *msg;
    size_t msglen;
} checker;

static int mismatch(checker *ck, const char *what, const void *buf, size_t idx, int64_t want)
{
    char got[64];
    format_elem(ck->pt->dtype, buf, idx, got, sizeof got);
    snprintf(ck->msg, ck->msglen, "rank %d: %s element %zu: expected %" PRId64 ", got %s", ck->rank,
             what, idx, want, got);
    return 1;
}

static int check_mov_block(checker *ck, const char *what, const void *buf, int slot, int src,
                           int blk, long it)
{
    const bench_point *pt = ck->pt;
    size_t c = pt->count, base = (size_t)slot * c;
    uint64_t key = mov_key(src, blk, it);
    for (size_t i = 0; i < c; i++) {
        int64_t want = mov_value(pt->dtype, key, i);
        if (!equal(pt->dtype, buf, base + i, want)) return mismatch(ck, what, buf, base + i, want);
    }
    return 0;
}

static int check_red_input(checker *ck, int p, const void *buf, size_t n, long it)
{
    uint64_t key = red_key(ck->pt, ck->rank, it);
    for (size_t j = 0; j < n; j++) {
        int64_t want = red_value(ck->pt, p, ck->rank, key, j, it);
        if (!equal(ck->pt->dtype, buf, j, want)) return mismatch(ck, "sendbuf (input changed)", buf, j, want);
    }
    return 0;
}

/* rbuf[0, n) against elements [first, first + n) of the reduced vector. */
static int check_red_result(checker *ck, int p, const void *rbuf, size_t first, size_t n, long it)
{
    int64_t acc[CHUNK];
    for (size_t done = 0; done < n; done += CHUNK) {
        size_t m = n - done < CHUNK ? n - done : CHUNK;
        red_reference(ck->pt, p, first + done, m, it, acc);
        for (size_t j = 0; j < m; j++)
            if (!equal(ck->pt->dtype, rbuf, done + j, acc[j]))
                return mismatch(ck, "recvbuf", rbuf, done + j, acc[j]);
    }
    return 0;
}

static int check_guard(checker *ck, const char *what, const void *buf, size_t elems)
{
    const unsigned char *g = (const unsigned char *)buf + elems * dtype_size(ck->pt->dtype);
    for (size_t i = 0; i < FILL_GUARD_BYTES; i++) {
        if (g[i] != GUARD_BYTE) {
            snprintf(ck->msg, ck->msglen, "rank %d: %s written past its end (%zu elements)", ck->rank,
                     what, elems);
            return 1;
        }
    }
    return 0;
}

static int check_outputs(checker *ck, const fill_layout *lay, int p, long it, const void *sbuf,
                         const void *rbuf)
{
    const bench_point *pt = ck->pt;
    int rank = ck->rank, root = pt->root;
    size_t c = pt->count;
    switch (pt->coll) {
    case CK_BCAST:
        return check_mov_block(ck, "buffer", rbuf, 0, root, 0, it);
    case CK_REDUCE:
    case CK_ALLREDUCE:
        if (lay->has_sbuf && check_red_input(ck, p, sbuf, c, it)) return 1;
        if (!lay->has_rbuf) return 0;
        return check_red_result(ck, p, rbuf, 0, c, it);
    case CK_REDUCE_SCATTER:
        if (lay->has_sbuf && check_red_input(ck, p, sbuf, (size_t)p * c, it)) return 1;
        return check_red_result(ck, p, rbuf, (size_t)rank * c, c, it);
    case CK_GATHER:
    case CK_ALLGATHER:
        if (lay->has_sbuf && check_mov_block(ck, "sendbuf (input changed)", sbuf, 0, rank, rank, it))
            return 1;
        if (!lay->has_rbuf) return 0;
        for (int b = 0; b < p; b++)
            if (check_mov_block(ck, "recvbuf", rbuf, b, b, b, it)) return 1;
        return 0;
    case CK_SCATTER:
        if (lay->has_sbuf)
            for (int b = 0; b < p; b++)
                if (check_mov_block(ck, "sendbuf (input changed)", sbuf, b, root, b, it)) return 1;
        if (lay->has_rbuf && check_mov_block(ck, "recvbuf", rbuf, 0, root, rank, it)) return 1;
        return 0;
    case CK_ALLTOALL:
        if (lay->has_sbuf)
            for (int b = 0; b < p; b++)
                if (check_mov_block(ck, "sendbuf (input changed)", sbuf, b, rank, b, it)) return 1;
        for (int b = 0; b < p; b++)
            if (check_mov_block(ck, "recvbuf", rbuf, b, b, rank, it)) return 1;
        return 0;
    default:
        return 0;
    }
}

int fill_check(const bench_point *pt, const fill_layout *lay, int rank, int p, long it,
               const void *sbuf, const void *rbuf, char *msg, size_t msglen)
{
    checker ck = {pt, rank, msg, msglen};
    if (lay->has_sbuf && check_guard(&ck, "sendbuf", sbuf, lay->sbuf_elems)) return 1;
    if (lay->has_rbuf && check_guard(&ck, "recvbuf", rbuf, lay->rbuf_elems)) return 1;
    return check_outputs(&ck, lay, p, it, sbuf, rbuf);
}
