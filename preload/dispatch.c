/* The dispatcher: one path for every intercepted collective, C or Fortran.
 *
 * The choice reads only what MPI requires to agree across the ranks of one
 * call: the collective, the communicator (size, inter or intra), the block
 * bytes (count times type size; type signatures must match), and for
 * reductions the datatype and op (the same on every rank by the standard).
 * Data-movement collectives run on bytes: a non-contiguous buffer is packed
 * into a temporary and unpacked after, at that rank only, so the layout of one
 * rank's datatype never changes what the others do. */
#include "ck_preload.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helper communicator */

/* The algorithms' point-to-point messages travel on a duplicate of the
 * program's communicator, made once (at the first collkit call on it, which
 * every rank reaches together) and cached as an attribute, so they never match
 * the program's own receives. The attribute's delete callback frees it with
 * the program's communicator. */
typedef struct {
    MPI_Comm dup; /* MPI_COMM_NULL for an intercommunicator */
    int size;
    int inter;
} ckp_comm_info;

static int ckp_keyval = MPI_KEYVAL_INVALID;

static int delete_info(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    ckp_comm_info *info = attr;
    if (info->dup != MPI_COMM_NULL) PMPI_Comm_free(&info->dup);
    free(info);
    return MPI_SUCCESS;
}

static int comm_info(MPI_Comm comm, ckp_comm_info **out)
{
    int found = 0;
    void *attr = NULL;
    int rc;
    if (ckp_keyval == MPI_KEYVAL_INVALID) return MPI_ERR_KEYVAL;
    rc = PMPI_Comm_get_attr(comm, ckp_keyval, &attr, &found);
    if (rc != MPI_SUCCESS) return rc;
    if (found) {
        *out = attr;
        return MPI_SUCCESS;
    }
    ckp_comm_info *info = malloc(sizeof *info);
    if (!info) return MPI_ERR_NO_MEM;
    info->dup = MPI_COMM_NULL;
    rc = PMPI_Comm_test_inter(comm, &info->inter);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_size(comm, &info->size);
    if (rc == MPI_SUCCESS && !info->inter) rc = PMPI_Comm_dup(comm, &info->dup);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_set_attr(comm, ckp_keyval, info);
    if (rc != MPI_SUCCESS) {
        if (info->dup != MPI_COMM_NULL) PMPI_Comm_free(&info->dup);
        free(info);
        return rc;
    }
    *out = info;
    return MPI_SUCCESS;
}

/* Made once at MPI_Init, before the program can start threads, so that
 * threads calling collectives on different communicators never race on it. */
int ckp_keyval_create(void)
{
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_info, &ckp_keyval, NULL);
}

/* MPI_COMM_WORLD's and MPI_COMM_SELF's duplicates are freed before
 * PMPI_Finalize, while freeing is still allowed. */
void ckp_release_world(void)
{
    if (ckp_keyval == MPI_KEYVAL_INVALID) return;
    int found = 0;
    void *attr = NULL;
    if (PMPI_Comm_get_attr(MPI_COMM_WORLD, ckp_keyval, &attr, &found) == MPI_SUCCESS && found)
        PMPI_Comm_delete_attr(MPI_COMM_WORLD, ckp_keyval);
    if (PMPI_Comm_get_attr(MPI_COMM_SELF, ckp_keyval, &attr, &found) == MPI_SUCCESS && found)
        PMPI_Comm_delete_attr(MPI_COMM_SELF, ckp_keyval);
    PMPI_Comm_free_keyval(&ckp_keyval);
}

/* ---------------------------------------------------------------- the library */

static int library(ck_collective c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   int rcount, MPI_Datatype rtype, MPI_Op op, int root, MPI_Comm comm)
{
    switch (c) {
    case CK_BCAST: return PMPI_Bcast(rbuf, rcount, rtype, root, comm);
    case CK_REDUCE: return PMPI_Reduce(sbuf, rbuf, rcount, rtype, op, root, comm);
    case CK_GATHER: return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    case CK_SCATTER: return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    case CK_ALLGATHER: return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    case CK_REDUCE_SCATTER: return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, rtype, op, comm);
    case CK_ALLREDUCE: return PMPI_Allreduce(sbuf, rbuf, rcount, rtype, op, comm);
    case CK_ALLTOALL: return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    default: return MPI_ERR_ARG;
    }
}

/* ---------------------------------------------------------------- buffers as bytes */

static int type_info(MPI_Datatype t, int *size, int *contiguous)
{
    MPI_Aint lb, extent, tlb, textent;
    int rc = PMPI_Type_size(t, size);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_get_extent(t, &lb, &extent);
    if (rc == MPI_SUCCESS) rc = PMPI_Type_get_true_extent(t, &tlb, &textent);
    if (rc != MPI_SUCCESS) return rc;
    /* Elements packed end to end from the buffer's address, no gaps. */
    *contiguous = (lb == 0 && tlb == 0 && extent == *size && textent == *size);
    return MPI_SUCCESS;
}

/* A buffer of `count` elements of `type` seen as bytes: the user's memory when
 * contiguous, else a packed temporary. MPI_Pack's output on a homogeneous
 * machine is the elements' native bytes in Open MPI and MPICH, the same bytes
 * a contiguous rank sends (tests/preload checks a mixed call). */
typedef struct {
    void *user;
    int count;
    MPI_Datatype type;
    void *tmp;
    size_t bytes;
} view;

static int view_open(view *v, void *buf, int count, MPI_Datatype type, int load, MPI_Comm comm,
                     void **ptr)
{
    int size, contig;
    int rc = type_info(type, &size, &contig);
    if (rc != MPI_SUCCESS) return rc;
    v->user = buf;
    v->count = count;
    v->type = type;
    v->tmp = NULL;
    v->bytes = (size_t)count * (size_t)size;
    if (contig) {
        *ptr = buf;
        return MPI_SUCCESS;
    }
    v->tmp = malloc(v->bytes ? v->bytes : 1);
    if (!v->tmp) return MPI_ERR_NO_MEM;
    if (load && v->bytes > INT32_MAX) return MPI_ERR_COUNT;
    if (load) {
        int pos = 0;
        rc = PMPI_Pack(buf, count, type, v->tmp, (int)v->bytes, &pos, comm);
        if (rc != MPI_SUCCESS) return rc;
        if ((size_t)pos != v->bytes) return MPI_ERR_TYPE;
    }
    *ptr = v->tmp;
    return MPI_SUCCESS;
}

static int view_close(view *v, int store, MPI_Comm comm, int rc)
{
    if (v->tmp) {
        if (rc == MPI_SUCCESS && store) {
            int pos = 0;
            rc = PMPI_Unpack(v->tmp, (int)v->bytes, &pos, v->user, v->count, v->type, comm);
        }
        free(v->tmp);
        v->tmp = NULL;
    }
    return rc;
}

/* ---------------------------------------------------------------- the algorithms */

/* Data movement on bytes: b bytes a block, p blocks where the collective has p. */
static int run_bytes(const ck_algorithm *a, ck_collective c, const void *sbuf, int scount,
                     MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root,
                     size_t b, int p, MPI_Comm dup)
{
    int rank;
    int rc = PMPI_Comm_rank(dup, &rank);
    if (rc != MPI_SUCCESS) return rc;
    const int is_root = (rank == root);
    const int send_in_place = (sbuf == MPI_IN_PLACE);
    const int recv_in_place = (rbuf == MPI_IN_PLACE);
    view sv = {0}, rv = {0};
    void *s = NULL, *r = NULL;
    int use_s = 0, load_s = 1, use_r = 0, load_r = 0, store_r = 0, ns = 0, nr = 0;
    switch (c) {
    case CK_BCAST:
        use_r = 1, nr = rcount, load_r = is_root, store_r = !is_root;
        break;
    case CK_GATHER:
        use_s = !send_in_place, ns = scount;
        use_r = is_root, nr = p * rcount, load_r = send_in_place, store_r = 1;
        break;
    case CK_SCATTER:
        use_s = is_root, ns = p * scount;
        use_r = !recv_in_place, nr = rcount, store_r = 1;
        break;
    case CK_ALLGATHER:
    case CK_ALLTOALL:
        use_s = !send_in_place, ns = (c == CK_ALLTOALL) ? p * scount : scount;
        use_r = 1, nr = p * rcount, load_r = send_in_place, store_r = 1;
        break;
    default: return MPI_ERR_ARG;
    }
    if (p > 1 && (size_t)ns > SIZE_MAX / 2) return MPI_ERR_COUNT;
    if (use_s) rc = view_open(&sv, (void *)sbuf, ns, stype, load_s, dup, &s);
    if (rc == MPI_SUCCESS && use_r) rc = view_open(&rv, rbuf, nr, rtype, load_r, dup, &r);
    if (rc == MPI_SUCCESS) {
        const void *sarg = use_s ? s : (send_in_place ? MPI_IN_PLACE : sbuf);
        void *rarg = use_r ? r : (recv_in_place ? MPI_IN_PLACE : rbuf);
        rc = ck_algorithm_call(a, sarg, rarg, b, MPI_BYTE, MPI_OP_NULL, root, dup);
    }
    rc = view_close(&sv, 0, dup, rc);
    rc = view_close(&rv, store_r, dup, rc);
    return rc;
}

static int is_reduction(ck_collective c)
{
    return c == CK_REDUCE || c == CK_ALLREDUCE || c == CK_REDUCE_SCATTER;
}

/* Why algorithm a cannot run this call correctly, or -1 when it can. Every
 * input here agrees across ranks. */
static int fallback_reason(const ck_algorithm *a, ck_collective c, const ckp_comm_info *info,
                           size_t bytes, int count, MPI_Datatype dt, MPI_Op op, int root)
{
    if (info->inter) return CKP_FB_INTERCOMM;
    if (ck_collective_has_root(c) && (root < 0 || root >= info->size)) return CKP_FB_ROOT;
    if (bytes == 0 || bytes > CK_MAX_COUNT) return CKP_FB_COUNT;
    if (is_reduction(c)) {
        /* Reductions combine elements, so they keep the datatype: it must be a
         * predefined type laid out without gaps. */
        int ni, na, nd, comb, size, contig;
        if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS || comb != MPI_COMBINER_NAMED)
            return CKP_FB_DATATYPE;
        if (type_info(dt, &size, &contig) != MPI_SUCCESS || !contig) return CKP_FB_DATATYPE;
        int commute = 0;
        if (op == MPI_OP_NULL || PMPI_Op_commutative(op, &commute) != MPI_SUCCESS) return CKP_FB_OP;
        if (!commute && (a->constraints & CK_REQUIRES_COMMUTATIVE)) return CKP_FB_OP;
        if ((size_t)count < a->min_count) return CKP_FB_COUNT;
    } else if (bytes < a->min_count) {
        return CKP_FB_COUNT;
    }
    if ((a->constraints & CK_REQUIRES_POW2_RANKS) && (info->size & (info->size - 1)) != 0)
        return CKP_FB_RANKS;
    /* Constraint bits are the low byte; the shim cannot evaluate the others
     * (a topology given elsewhere), so it never risks them. */
    if (a->constraints & 0xffu & ~(unsigned)(CK_REQUIRES_COMMUTATIVE | CK_REQUIRES_POW2_RANKS))
        return CKP_FB_CONSTRAINT;
    return -1;
}

/* In-place MPI_Reduce_scatter_block leaves the receive buffer past the first
 * block as it was in Open MPI and MPICH, and programs test it (mpi4py does);
 * some libcollkit algorithms use that space as scratch when in place. The
 * input is copied once and the algorithm runs out of place, writing the first
 * block only. */
static int reduce_scatter_in_place(const ck_algorithm *a, void *rbuf, int count, MPI_Datatype dt,
                                   MPI_Op op, const ckp_comm_info *info)
{
    int size;
    int rc = PMPI_Type_size(dt, &size);
    if (rc != MPI_SUCCESS) return rc;
    const size_t bytes = (size_t)info->size * (size_t)count * (size_t)size;
    void *in = malloc(bytes ? bytes : 1);
    if (!in) return MPI_ERR_NO_MEM;
    memcpy(in, rbuf, bytes);
    rc = ck_algorithm_call(a, in, rbuf, (size_t)count, dt, op, 0, info->dup);
    free(in);
    return rc;
}

/* Bytes of one block as every rank sees it (see the file's comment). */
static int block_bytes(ck_collective c, const void *sbuf, int scount, MPI_Datatype stype, int rcount,
                       MPI_Datatype rtype, int root, MPI_Comm comm, size_t *bytes)
{
    int size = 0, rc, use_send;
    switch (c) {
    case CK_GATHER: {
        int rank;
        rc = PMPI_Comm_rank(comm, &rank);
        if (rc != MPI_SUCCESS) return rc;
        use_send = !(rank == root && sbuf == MPI_IN_PLACE);
        break;
    }
    case CK_SCATTER: {
        int rank;
        rc = PMPI_Comm_rank(comm, &rank);
        if (rc != MPI_SUCCESS) return rc;
        use_send = (rank == root);
        break;
    }
    default: use_send = 0; break;
    }
    const int count = use_send ? scount : rcount;
    if (count < 0) return MPI_ERR_COUNT;
    rc = PMPI_Type_size(use_send ? stype : rtype, &size);
    if (rc != MPI_SUCCESS) return rc;
    *bytes = (size_t)count * (size_t)size;
    return MPI_SUCCESS;
}

int ckp_dispatch(ck_collective c, const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, MPI_Op op, int root, MPI_Comm comm)
{
    if (!ckp_cfg.active) {
        /* Pass-through: nothing configured, only counted when reporting. */
        if (!ckp_cfg.report) return library(c, sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm);
        double t0 = PMPI_Wtime();
        int rc = library(c, sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm);
        ckp_stat_call(c, CKP_LIBRARY, 0, PMPI_Wtime() - t0);
        return rc;
    }
    ckp_comm_info *info;
    size_t bytes = 0;
    if (comm == MPI_COMM_NULL || comm_info(comm, &info) != MPI_SUCCESS ||
        block_bytes(c, sbuf, scount, stype, rcount, rtype, root, comm, &bytes) != MPI_SUCCESS)
        /* An erroneous call: the library raises the error as it would. */
        return library(c, sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm);
    int k = ckp_choose(c, info->size, bytes);
    int col = CKP_LIBRARY;
    if (k >= 0) {
        const ck_algorithm *a = ckp_algs[c][k];
        int why = fallback_reason(a, c, info, bytes, rcount, rtype, op, root);
        if (why < 0) col = k;
        else ckp_stat_fallback(c, k, (ckp_reason)why);
    }
    const int timed = ckp_cfg.report;
    double t0 = timed ? PMPI_Wtime() : 0.0;
    int rc;
    if (col == CKP_LIBRARY) {
        rc = library(c, sbuf, scount, stype, rbuf, rcount, rtype, op, root, comm);
    } else if (c == CK_REDUCE_SCATTER && sbuf == MPI_IN_PLACE) {
        rc = reduce_scatter_in_place(ckp_algs[c][col], rbuf, rcount, rtype, op, info);
    } else if (is_reduction(c)) {
        rc = ck_algorithm_call(ckp_algs[c][col], sbuf, rbuf, (size_t)rcount, rtype, op, root, info->dup);
    } else {
        /* A failed temporary is returned as MPI_ERR_NO_MEM, not turned into a
         * fallback: the other ranks may already be inside the algorithm. */
        rc = run_bytes(ckp_algs[c][col], c, sbuf, scount, stype, rbuf, rcount, rtype, root, bytes,
                       info->size, info->dup);
    }
    if (timed) ckp_stat_call(c, col, bytes, PMPI_Wtime() - t0);
    else ckp_stat_call(c, col, bytes, 0.0);
    return rc;
}
