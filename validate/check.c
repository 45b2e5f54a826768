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

#include <inttypes.h>
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

void ckv_fill(const ckv_case *c, ckv_buffers *b, uint64_t seed)
{
    const ckv_codec *k = ckv_codec_of(c->dtype);
    if (b->recv.data) memset(b->recv.data, UNWRITTEN, b->recv.bytes);
    input_place in = input_of(c, b);
    void *dst = in.in_recv ? b->recv.data : b->send.data;
    if (dst == NULL) return;
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

int ckv_check(const ckv_case *c, const ckv_buffers *b, uint64_t seed, char *msg, size_t msglen)
{
    checker ck = {c, ckv_codec_of(c->dtype), msg, msglen};
    const ck_collective_desc *d = c->coll;
    /* A collective whose ranks never pass a send buffer has one buffer. */
    const char *rname =
        d->send_blocks_root == 0 && d->send_blocks_other == 0 ? "buffer" : "recvbuf";
    if (check_guards(&ck, "sendbuf", &b->send) || check_guards(&ck, rname, &b->recv)) return 1;

    input_place in = input_of(c, b);
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
    if (nres == 0 || b->recv.data == NULL) return 0;
    return d->has_op ? check_reduced(&ck, rname, b->recv.data, nres, seed)
                     : check_moved(&ck, rname, b->recv.data, nres, seed);
}
