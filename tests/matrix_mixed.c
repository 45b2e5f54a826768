/* The matrix's mixed-datatype cases (issue #32). MPI lets the ranks of one
 * call pass different datatypes as long as the type signatures match, and
 * lets a buffer be MPI_BOTTOM with a datatype of absolute addresses:
 *
 *   strided  the ranks of one parity (or, for reductions, whose datatype MPI
 *            requires equal everywhere, all ranks) pass their buffers as
 *            `count` elements of a strided type (the element, resized to
 *            twice its extent: data in every other slot), the others dense;
 *   bottom   every rank passes its one significant buffer as MPI_BOTTOM with
 *            `count` elements of a type holding that buffer's address (bcast,
 *            and the others in place, where each rank has one buffer).
 *
 * The count is the same everywhere, so the message schedule of every rank is
 * the one of the plain case. Each call is judged against the validator's
 * reference (validate.h): the strided rank's data is copied into its strided
 * buffers before the call and back after, so ckv_check sees the dense
 * result; the gaps between elements and the bytes around the buffers must
 * come back untouched. libcollkit's algorithms move data with the caller's
 * datatype (MPI point-to-point, ck_copy, typed temporaries), so every case
 * of a data-movement collective must give the correct result on every rank.
 * A reduction's datatype here is derived (strided or absolute), on which
 * MPI's predefined ops are not defined: every rank must refuse with
 * MPI_ERR_OP (ck_check_op_type, before any message) and leave its buffers
 * as they were, guards and gaps included. */
#include "matrix_mixed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GAP_BYTE 0xa5

typedef enum { MIX_EVEN, MIX_ODD, MIX_ALL, MIX_BOTTOM, MIX_KINDS } mix_kind;
static const char *const kind_names[] = {"strided(even ranks)", "strided(odd ranks)", "strided(all ranks)",
                                         "bottom"};

/* A strided copy of one of the validator's dense buffers: element i in slot
 * 2i of mem (after a guard of one slot pair), every other byte GAP_BYTE. */
typedef struct {
    unsigned char *mem;
    void *data;
    size_t bytes; /* of mem */
} strided_buf;

static int strided_open(strided_buf *s, const ckv_buf *dense, size_t size)
{
    memset(s, 0, sizeof *s);
    if (dense->elems == 0) return 0;
    s->bytes = (2 * dense->elems + 4) * size;
    s->mem = malloc(s->bytes);
    if (!s->mem) return -1;
    memset(s->mem, GAP_BYTE, s->bytes);
    s->data = s->mem + 2 * size;
    for (size_t i = 0; i < dense->elems; i++)
        memcpy((unsigned char *)s->data + 2 * i * size, (unsigned char *)dense->data + i * size, size);
    return 0;
}

/* Copies the elements back into the dense buffer; nonzero when a byte
 * outside the elements changed. */
static int strided_close(strided_buf *s, ckv_buf *dense, size_t size)
{
    int touched = 0;
    if (!s->mem) return 0;
    const unsigned char *d = s->data;
    for (size_t i = 0; i < dense->elems; i++)
        memcpy((unsigned char *)dense->data + i * size, d + 2 * i * size, size);
    for (size_t k = 0; k < s->bytes; k++) {
        size_t off = k - 2 * size; /* wraps below data: guard */
        int element = k >= 2 * size && off / size < 2 * dense->elems && (off / size) % 2 == 0;
        if (!element && s->mem[k] != GAP_BYTE) touched = 1;
    }
    free(s->mem);
    s->mem = NULL;
    return touched;
}

/* count elements of base at addr, reached from MPI_BOTTOM. */
static int absolute_type(MPI_Datatype base, const void *addr, MPI_Datatype *t)
{
    MPI_Aint a, lb, extent;
    MPI_Datatype one;
    int rc = MPI_Get_address(addr, &a);
    if (rc == MPI_SUCCESS) rc = MPI_Type_get_extent(base, &lb, &extent);
    if (rc == MPI_SUCCESS) rc = MPI_Type_create_hindexed_block(1, 1, &a, base, &one);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Type_create_resized(one, a, extent, t);
    MPI_Type_free(&one);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(t);
    return rc;
}

/* One call on this rank: 0 passed (*refused = 1: as the expected refusal),
 * 1 failed (why says how). */
static int run_case(const ck_algorithm *a, ckm_call_fn call, const ckv_case *c, mix_kind kind,
                    MPI_Datatype strided, MPI_Comm comm, uint64_t seed, char *why, size_t whylen,
                    int *refused)
{
    const MPI_Datatype base = ck_datatype_mpi(c->dtype);
    const size_t size = c->dtype->size;
    ckv_buffers b;
    if (ckv_buffers_alloc(c, &b) != 0) {
        fprintf(stderr, "ck_matrix: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    ckv_fill(c, &b, seed);
    const void *sarg = ckv_send_arg(&b);
    void *rarg = ckv_recv_arg(&b);
    MPI_Datatype dt = base, own = MPI_DATATYPE_NULL;
    strided_buf ss = {0}, rs = {0};
    int bad = 0, rc;
    why[0] = '\0';
    *refused = 0;
    if (kind == MIX_BOTTOM) {
        /* The descriptor's in-place cases leave each rank one buffer. */
        int use_send = b.send.elems > 0;
        if (use_send && b.recv.elems > 0) {
            fprintf(stderr, "ck_matrix: --mixed-types: two buffers at rank %d for MPI_BOTTOM\n", c->rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        const ckv_buf *one = use_send ? &b.send : &b.recv;
        if (one->elems > 0) {
            if (absolute_type(base, one->data, &own) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 3);
            dt = own;
            if (use_send) sarg = MPI_BOTTOM;
            else rarg = MPI_BOTTOM;
        }
    } else if (kind == MIX_ALL || c->rank % 2 == (kind == MIX_ODD)) {
        if (strided_open(&ss, &b.send, size) != 0 || strided_open(&rs, &b.recv, size) != 0) {
            fprintf(stderr, "ck_matrix: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        /* A buffer that is MPI_IN_PLACE or NULL has no elements: kept as is. */
        dt = strided;
        if (ss.mem) sarg = ss.data;
        if (rs.mem) rarg = rs.data;
    }
    rc = call(a, sarg, rarg, c->count, dt, ckv_op_mpi(c->op), c->root, comm);
    if (strided_close(&ss, &b.send, size) | strided_close(&rs, &b.recv, size)) {
        snprintf(why, whylen, "rank %d: wrote between or around the strided elements", c->rank);
        bad = 1;
    }
    if (own != MPI_DATATYPE_NULL) MPI_Type_free(&own);
    if (!bad && c->coll->has_op) {
        int cls = -1;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_OP)
            snprintf(why, whylen, "rank %d: returned %d (class %d), expected MPI_ERR_OP "
                     "(predefined op, derived datatype)", c->rank, rc, cls);
        else if (ckv_buf_guards(&b.send) || ckv_buf_guards(&b.recv))
            snprintf(why, whylen, "rank %d: refused, but wrote outside its buffers", c->rank);
        else
            *refused = 1;
        ckv_buffers_free(&b);
        return !*refused;
    }
    if (!bad && rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        snprintf(why, whylen, "rank %d: returned error %d (%.100s)", c->rank, rc, msg);
        bad = 1;
    }
    if (!bad) bad = ckv_check(c, &b, seed, why, whylen) != 0;
    ckv_buffers_free(&b);
    return bad;
}

void ckm_mixed_run(const ck_algorithm *a, ckm_call_fn call, ckm_refuses_fn refuses, MPI_Comm comm,
                   const char *comm_name, int verbose, int max_fail_lines, ckm_tally *t)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const ck_collective_desc *d = ck_collective_describe(a->collective);
    const ck_datatype_desc *dtype = ck_datatype_find("double");
    MPI_Datatype strided;
    MPI_Aint lb, extent;
    MPI_Type_get_extent(ck_datatype_mpi(dtype), &lb, &extent);
    if (MPI_Type_create_resized(ck_datatype_mpi(dtype), 0, 2 * extent, &strided) != MPI_SUCCESS ||
        MPI_Type_commit(&strided) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 3);
    /* 1 and p + 1, and a count past CK_SCATTERED_MIN_BYTES (16 KiB of
     * doubles per block, scattered.h): where an algorithm moves blocks in
     * place through datatypes of their addresses (alltoall/bruck,
     * allgather/bruck), with the caller's types. */
    const size_t counts[] = {1, (size_t)p + 1, 2056};
    const int roots[] = {0, p - 1};
    const int nroots = d->has_root && p > 1 ? 2 : 1;
    uint64_t seed = 7;
    for (int kind = 0; kind < MIX_KINDS; kind++) {
        /* A reduction's datatype is the same at every rank (MPI's rule). */
        if (d->has_op && (kind == MIX_EVEN || kind == MIX_ODD)) continue;
        for (int ip = 0; ip < 2; ip++) {
            if (ip && d->in_place == CK_IN_PLACE_NONE) continue;
            /* MPI_BOTTOM where each rank has one buffer: bcast, or in place. */
            if (kind == MIX_BOTTOM && !ip && d->id != CK_BCAST) continue;
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
                for (int ri = 0; ri < nroots; ri++) {
                    ckv_case c = {.coll = d, .dtype = dtype, .op = CKV_SUM, .count = counts[ci],
                                  .root = d->has_root ? roots[ri] : 0, .in_place = ip,
                                  .rank = rank, .p = p};
                    if (refuses(a, &c, comm)) continue;
                    char why[200];
                    int refused = 0;
                    int mine = run_case(a, call, &c, (mix_kind)kind, strided, comm, seed++, why,
                                        sizeof why, &refused)
                                   ? rank + 1
                                   : 0,
                        worst = 0;
                    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm);
                    if (worst && !mine) snprintf(why, sizeof why, "failed on rank %d", worst - 1);
                    if (rank != 0) continue;
                    if (worst) {
                        t->failed++;
                        if (t->fail_lines++ < max_fail_lines || verbose)
                            printf("FAIL %s/%s comm=%s p=%d root=%d count=%zu dtype=%s %s inplace=%d: %s\n",
                                   d->name, a->name, comm_name, p, c.root, c.count, dtype->name,
                                   kind_names[kind], ip, why);
                    } else {
                        t->passed++;
                        t->refused += refused;
                        if (verbose)
                            printf("ok   %s/%s comm=%s p=%d root=%d count=%zu dtype=%s %s inplace=%d%s\n",
                                   d->name, a->name, comm_name, p, c.root, c.count, dtype->name,
                                   kind_names[kind], ip, refused ? " (refused)" : "");
                    }
                }
        }
    }
    MPI_Type_free(&strided);
}
