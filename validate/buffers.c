/* Buffer layout from the collective's descriptor, and guarded buffers. */
#include "elements.h"

#include <stdlib.h>
#include <string.h>

#define GUARD_BYTE 0x5a

static int mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

int ckv_layout_of(const ckv_case *c, ckv_layout *lay)
{
    const ck_collective_desc *d = c->coll;
    size_t pc, bytes;
    if (ckv_codec_of(c->dtype) == NULL) return -1;
    /* Checked for the largest buffer of any rank (p blocks, guards on both
     * sides), so that every rank reaches the same verdict. */
    if (mul_ok((size_t)c->p, c->count, &pc) != 0 || mul_ok(pc, c->dtype->size, &bytes) != 0 ||
        bytes > SIZE_MAX - 2 * CKV_GUARD_BYTES)
        return -1;
    int ip = ck_collective_in_place_at(d, c->in_place, c->rank, c->root);
    memset(lay, 0, sizeof *lay);
    lay->send_in_place = ip && d->in_place == CK_IN_PLACE_SEND;
    lay->recv_in_place = ip && d->in_place == CK_IN_PLACE_RECV;
    lay->send_elems = ck_collective_send_elems(d, c->count, c->p, c->rank, c->root, c->in_place);
    lay->recv_elems = ck_collective_recv_elems(d, c->count, c->p, c->rank, c->root, c->in_place);
    lay->result_elems =
        lay->recv_in_place ? 0 : ck_collective_result_elems(d, c->count, c->p, c->rank, c->root);
    return 0;
}

static int buf_alloc(ckv_buf *b, size_t elems, size_t elem_size)
{
    memset(b, 0, sizeof *b);
    if (elems == 0) return 0;
    b->elems = elems;
    b->bytes = elems * elem_size; /* cannot overflow: ckv_layout_of checked */
    b->mem = malloc(b->bytes + 2 * CKV_GUARD_BYTES);
    if (b->mem == NULL) return -1;
    memset(b->mem, GUARD_BYTE, CKV_GUARD_BYTES);
    memset(b->mem + CKV_GUARD_BYTES + b->bytes, GUARD_BYTE, CKV_GUARD_BYTES);
    b->data = b->mem + CKV_GUARD_BYTES;
    return 0;
}

int ckv_buffers_alloc(const ckv_case *c, ckv_buffers *b)
{
    memset(b, 0, sizeof *b);
    if (ckv_layout_of(c, &b->lay) != 0) return -1;
    if (buf_alloc(&b->send, b->lay.send_elems, c->dtype->size) != 0 ||
        buf_alloc(&b->recv, b->lay.recv_elems, c->dtype->size) != 0) {
        ckv_buffers_free(b);
        return -1;
    }
    return 0;
}

void ckv_buffers_free(ckv_buffers *b)
{
    free(b->send.mem);
    free(b->recv.mem);
    memset(&b->send, 0, sizeof b->send);
    memset(&b->recv, 0, sizeof b->recv);
}

const void *ckv_send_arg(const ckv_buffers *b)
{
    return b->lay.send_in_place ? MPI_IN_PLACE : b->send.data;
}

void *ckv_recv_arg(const ckv_buffers *b)
{
    return b->lay.recv_in_place ? MPI_IN_PLACE : b->recv.data;
}

int ckv_buf_guards(const ckv_buf *b)
{
    if (b->mem == NULL) return 0;
    for (size_t i = 0; i < CKV_GUARD_BYTES; i++)
        if (b->mem[i] != GUARD_BYTE) return -1;
    for (size_t i = 0; i < CKV_GUARD_BYTES; i++)
        if (b->mem[CKV_GUARD_BYTES + b->bytes + i] != GUARD_BYTE) return 1;
    return 0;
}
