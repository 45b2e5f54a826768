/*
 * Fill and check, from the descriptor's description of the result:
 *   data movement  output block b at rank r = input block of rank
 *                  (from_root ? root : b) at slot (source_slot_is_dest ? r : 0);
 *   reduction      output element j at rank r = the rank-ordered reduction of
 *                  input element j + (result_is_own_block ? r * count : 0).
 * A rank's input is its send buffer's content out of place. In place, or
 * where the rank has no send buffer but is a source (bcast's root), it sits
 * in the receive buffer: at the start, or where the result will put this
 * rank's own block when the input is one block of p (gather, allgather).
 */
#include "elements.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The byte that marks an output element as "not written": -128 in int8, a
 * huge negative integer in int32/int64 and a tiny non-integer in
 * float/double, none of which the patterns produce. */
#define UNWRITTEN 0x80

/* Elements the reference of a reduction is computed in at a time. */
#define CHUNK 1024

typedef struct {
    size_t elems;  /* this rank's input, 0 where it has none */
    int in_recv;   /* it lives in the receive buffer */
    size_t offset; /* where, in elements */
} input_place;

static input_place input_of(const ckv_case *c, const ckv_buffers *b)
{
    const ck_collective_desc *d = c->coll;
    input_place in = {0, 0, 0};
    in.elems = ck_collective_send_elems(d, c->count, c->p, c->rank, c->root, 0);
    int source = d->has_op || !d->from_root || c->rank == c->root;
    if (in.elems == 0 && source) {
        in.elems = ck_collective_result_elems(d, c->count, c->p, c->rank, c->root);
        in.in_recv = 1;
    }
    if (b->lay.send_in_place) in.in_recv = 1;
    if (in.in_recv && in.elems < b->lay.recv_elems) in.offset = (size_t)c->rank * c->count;
    return in;
}

/* The input as segments of one generator each: one per block for data
 * movement, the whole vector for a reduction. */
static size_t segment_len(const ckv_case *c, const input_place *in)
{
    return c->coll->has_op ? in->elems : c->count;
}

static size_t segments(const ckv_case *c, const input_place *in)
{
    size_t len = segment_len(c, in);
    return len ? in->elems / len : 0;
}

static ckv_gen segment_gen(const ckv_case *c, size_t s, uint64_t seed)
{
    return c->coll->has_op ? ckv_gen_reduction(c, c->rank, seed)
                           : ckv_gen_movement(c->dtype, c->rank, (int)s, seed);
}

/* ---------------------------------------------------------------- spread inputs */

int ckv_spread_applies(const ckv_case *c)
{
    return c->coll->has_op && c->op == CKV_SUM && c->dtype->is_float &&
           (c->dtype->size == sizeof(float) || c->dtype->size == sizeof(double));
}

static int spread_on(const ckv_case *c) { return c->spread && ckv_spread_applies(c); }

/* Spread values are stored as the datatype's own value, rounded once. */
static void spread_put(const ckv_case *c, void *buf, size_t i, double v)
{
    if (c->dtype->size == sizeof(float)) ((float *)buf)[i] = (float)v;
    else ((double *)buf)[i] = v;
}

static long double spread_stored(const ckv_case *c, double v)
{
    return c->dtype->size == sizeof(float) ? (long double)(float)v : (long double)v;
}

static long double spread_get(const ckv_case *c, const void *buf, size_t i)
{
    if (c->dtype->size == sizeof(float)) return ((const float *)buf)[i];
    return ((const double *)buf)[i];
}

/* Bitwise equality with the stored form of v (a -0.0 for 0.0 counts as a change). */
static int spread_same(const ckv_case *c, const void *buf, size_t i, double v)
{
    size_t es = c->dtype->size;
    unsigned char want[sizeof(double)];
    spread_put(c, want, 0, v);
    return memcmp((const char *)buf + i * es, want, es) == 0;
}

static int spread_unwritten(const ckv_case *c, const void *buf, size_t i)
{
    size_t es = c->dtype->size;
    const unsigned char *e = (const unsigned char *)buf + i * es;
    for (size_t k = 0; k < es; k++)
        if (e[k] != UNWRITTEN) return 0;
    return 1;
}

/* The check of a spread sum: no exact reference exists (the order of
 * additions is the algorithm's), so the result must lie within the rounding
 * bound of p - 1 additions, |got - exact| <= p eps sum|x|, of the sum taken
 * in long double. That still catches a missing or doubled +-1e6; the exact
 * cases catch the rest. Equality across ranks is the caller's
 * (ckv_result_digest). */
static int check_spread(const ckv_case *c, const char *what, const void *rbuf, size_t nres,
                        uint64_t seed, char *msg, size_t msglen)
{
    size_t first = c->coll->result_is_own_block ? (size_t)c->rank * c->count : 0;
    long double eps = c->dtype->size == sizeof(float) ? FLT_EPSILON : DBL_EPSILON;
    for (size_t i = 0; i < nres; i++) {
        long double exact = 0, mag = 0;
        for (int r = 0; r < c->p; r++) {
            long double x = spread_stored(c, ckv_spread_value(r, seed, first + i));
            exact += x;
            mag += fabsl(x);
        }
        long double got = spread_get(c, rbuf, i), bound = (long double)c->p * eps * mag;
        if (spread_unwritten(c, rbuf, i) || !isfinite((double)got) || fabsl(got - exact) > bound) {
            snprintf(msg, msglen, "rank %d: %s element %zu: expected %.9Lg (within %.3Lg), got %.9Lg",
                     c->rank, what, i, exact, bound, got);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- fill */

void ckv_fill(const ckv_case *c, ckv_buffers *b, uint64_t seed)
{
    const ckv_codec *k = ckv_codec_of(c->dtype);
    if (b->recv.data) memset(b->recv.data, UNWRITTEN, b->recv.bytes);
    input_place in = input_of(c, b);
    void *dst = in.in_recv ? b->recv.data : b->send.data;
    if (dst == NULL) return;
    if (spread_on(c)) {
        for (size_t j = 0; j < in.elems; j++)
            spread_put(c, dst, in.offset + j, ckv_spread_value(c->rank, seed, j));
        return;
    }
    size_t len = segment_len(c, &in), es = c->dtype->size;
    for (size_t sg = 0; sg < segments(c, &in); sg++) {
        ckv_gen g = segment_gen(c, sg, seed);
        k->fill((char *)dst + (in.offset + sg * len) * es, len, &g, 0);
    }
}

/* ---------------------------------------------------------------- check */

typedef struct {
    const ckv_case *c;
    const ckv_codec *k;
    char *msg;
    size_t msglen;
} checker;

static int mismatch(checker *ck, const char *what, const void *buf, size_t idx, int64_t want)
{
    char got[64];
    ck->k->format(buf, idx, got, sizeof got);
    snprintf(ck->msg, ck->msglen, "rank %d: %s element %zu: expected %" PRId64 ", got %s",
             ck->c->rank, what, idx, want, got);
    return 1;
}

static int check_guards(checker *ck, const char *what, const ckv_buf *b)
{
    int g = ckv_buf_guards(b);
    if (g == 0) return 0;
    snprintf(ck->msg, ck->msglen, "rank %d: %s written %s (%zu elements)", ck->c->rank, what,
             g < 0 ? "before its start" : "past its end", b->elems);
    return 1;
}

/* Data movement: every output block against the input block it comes from. */
static int check_moved(checker *ck, const char *what, const void *rbuf, size_t nres, uint64_t seed)
{
    const ckv_case *c = ck->c;
    const ck_collective_desc *d = c->coll;
    size_t es = c->dtype->size;
    for (size_t blk = 0; c->count > 0 && blk < nres / c->count; blk++) {
        int src = d->from_root ? c->root : (int)blk;
        int slot = d->source_slot_is_dest ? c->rank : 0;
        ckv_gen g = ckv_gen_movement(c->dtype, src, slot, seed);
        size_t base = blk * c->count;
        size_t i = ck->k->diff_gen((const char *)rbuf + base * es, c->count, &g, 0);
        if (i < c->count) return mismatch(ck, what, rbuf, base + i, ckv_gen_value(&g, i));
    }
    return 0;
}

/* Reduction: the result against the reduced vector, CHUNK elements at a time. */
static int check_reduced(checker *ck, const char *what, const void *rbuf, size_t nres,
                         uint64_t seed)
{
    const ckv_case *c = ck->c;
    size_t first = c->coll->result_is_own_block ? (size_t)c->rank * c->count : 0;
    size_t es = c->dtype->size;
    int64_t want[CHUNK];
    for (size_t done = 0; done < nres; done += CHUNK) {
        size_t m = nres - done < CHUNK ? nres - done : CHUNK;
        ckv_reduced(c, seed, first + done, m, want);
        size_t i = ck->k->diff_values((const char *)rbuf + done * es, m, want);
        if (i < m) return mismatch(ck, what, rbuf, done + i, want[i]);
    }
    return 0;
}

/* In place, input elements that sit in the receive buffer outside the result
 * (reduce_scatter's p - 1 other blocks) must come back as they went in. MPI
 * only says the result is the first recvcount elements; Open MPI and MPICH
 * mostly leave the rest alone and programs check it (mpi4py's test_cco_buf),
 * so libcollkit promises the same; a library's own algorithm is held to MPI's
 * promise only (ckv_case.past_result_free). */
static int check_input_kept(checker *ck, const input_place *in, const void *rbuf, size_t nres,
                            uint64_t seed)
{
    const ckv_case *c = ck->c;
    const char *what = "recvbuf (input past the result changed)";
    size_t len = segment_len(c, in), es = c->dtype->size;
    for (size_t sg = 0; sg < segments(c, in); sg++) {
        size_t at = in->offset + sg * len; /* where the segment sits in rbuf */
        size_t skip = nres > at ? nres - at : 0;
        if (skip >= len) continue;
        if (spread_on(c)) {
            for (size_t j = skip; j < len; j++)
                if (!spread_same(c, rbuf, at + j, ckv_spread_value(c->rank, seed, sg * len + j))) {
                    snprintf(ck->msg, ck->msglen, "rank %d: %s element %zu: expected %.9g",
                             c->rank, what, at + j, ckv_spread_value(c->rank, seed, sg * len + j));
                    return 1;
                }
            continue;
        }
        ckv_gen g = segment_gen(c, sg, seed);
        size_t i = ck->k->diff_gen((const char *)rbuf + (at + skip) * es, len - skip, &g, skip);
        if (i < len - skip) return mismatch(ck, what, rbuf, at + skip + i, ckv_gen_value(&g, skip + i));
    }
    return 0;
}

int ckv_check(const ckv_case *c, const ckv_buffers *b, uint64_t seed, char *msg, size_t msglen)
{
    checker ck = {c, ckv_codec_of(c->dtype), msg, msglen};
    const ck_collective_desc *d = c->coll;
    /* A collective whose ranks never pass a send buffer has one buffer. */
    const char *rname =
        d->send_blocks_root == 0 && d->send_blocks_other == 0 ? "buffer" : "recvbuf";
    if (check_guards(&ck, "sendbuf", &b->send) || check_guards(&ck, rname, &b->recv)) return 1;

    input_place in = input_of(c, b);
    if (spread_on(c)) {
        if (!in.in_recv && b->send.data)
            for (size_t j = 0; j < in.elems; j++)
                if (!spread_same(c, b->send.data, j, ckv_spread_value(c->rank, seed, j))) {
                    snprintf(msg, msglen, "rank %d: sendbuf (input changed) element %zu: expected %.9g",
                             c->rank, j, ckv_spread_value(c->rank, seed, j));
                    return 1;
                }
        if (b->recv.data == NULL) return 0;
        if (in.in_recv && !c->past_result_free && check_input_kept(&ck, &in, b->recv.data, b->lay.result_elems, seed))
            return 1;
        if (b->lay.result_elems == 0) return 0;
        return check_spread(c, rname, b->recv.data, b->lay.result_elems, seed, msg, msglen);
    }
    if (!in.in_recv && b->send.data) {
        size_t len = segment_len(c, &in), es = c->dtype->size;
        for (size_t sg = 0; sg < segments(c, &in); sg++) {
            ckv_gen g = segment_gen(c, sg, seed);
            size_t i = ck.k->diff_gen((const char *)b->send.data + sg * len * es, len, &g, 0);
            if (i < len)
                return mismatch(&ck, "sendbuf (input changed)", b->send.data, sg * len + i,
                                ckv_gen_value(&g, i));
        }
    }

    size_t nres = b->lay.result_elems;
    if (b->recv.data == NULL) return 0;
    if (in.in_recv && !c->past_result_free && check_input_kept(&ck, &in, b->recv.data, nres, seed)) return 1;
    if (nres == 0) return 0;
    return d->has_op ? check_reduced(&ck, rname, b->recv.data, nres, seed)
                     : check_moved(&ck, rname, b->recv.data, nres, seed);
}

uint64_t ckv_result_digest(const ckv_case *c, const ckv_buffers *b)
{
    size_t n = b->recv.data ? b->lay.result_elems * c->dtype->size : 0;
    const unsigned char *p = b->recv.data;
    uint64_t h = ckv_mix(0x6a09e667f3bcc909ULL ^ n);
    for (size_t at = 0; at < n; at += 8) {
        uint64_t w = 0;
        memcpy(&w, p + at, n - at < 8 ? n - at : 8);
        h = ckv_mix(h ^ (w + 0x9e3779b97f4a7c15ULL * (at / 8 + 1)));
    }
    return h;
}
