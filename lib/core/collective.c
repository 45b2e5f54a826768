/* The collective descriptors: what each collective is, as data, and how to
 * call an algorithm of it (or the MPI library's own collective) through one
 * argument list. This is the one place that knows the eight collectives;
 * everything else reads the descriptors (collkit.h). */
#include "collkit/collkit.h"
#include "ck_core.h"

#include <string.h>

/* ---------------------------------------------------------------- trampolines */

/* One per collective: unpack the uniform argument list into the algorithm's
 * own signature. Unused arguments are ignored on purpose. */
#define UNUSED(x) (void)(x)

static int call_bcast(const ck_algorithm *a, const void *s, void *r, size_t n, MPI_Datatype dt,
                      MPI_Op op, int root, MPI_Comm comm)
{
    UNUSED(s), UNUSED(op);
    return a->fn.bcast(r, n, dt, root, comm);
}

static int call_reduce(const ck_algorithm *a, const void *s, void *r, size_t n, MPI_Datatype dt,
                       MPI_Op op, int root, MPI_Comm comm)
{
    return a->fn.reduce(s, r, n, dt, op, root, comm);
}

static int call_gather(const ck_algorithm *a, const void *s, void *r, size_t n, MPI_Datatype dt,
                       MPI_Op op, int root, MPI_Comm comm)
{
    UNUSED(op);
    return a->fn.gather(s, r, n, dt, root, comm);
}

static int call_scatter(const ck_algorithm *a, const void *s, void *r, size_t n, MPI_Datatype dt,
                        MPI_Op op, int root, MPI_Comm comm)
{
    UNUSED(op);
    return a->fn.scatter(s, r, n, dt, root, comm);
}

static int call_allgather(const ck_algorithm *a, const void *s, void *r, size_t n,
                          MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    UNUSED(op), UNUSED(root);
    return a->fn.allgather(s, r, n, dt, comm);
}

static int call_reduce_scatter(const ck_algorithm *a, const void *s, void *r, size_t n,
                               MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    UNUSED(root);
    return a->fn.reduce_scatter(s, r, n, dt, op, comm);
}

static int call_allreduce(const ck_algorithm *a, const void *s, void *r, size_t n,
                          MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    UNUSED(root);
    return a->fn.allreduce(s, r, n, dt, op, comm);
}

static int call_alltoall(const ck_algorithm *a, const void *s, void *r, size_t n,
                         MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    UNUSED(op), UNUSED(root);
    return a->fn.alltoall(s, r, n, dt, comm);
}

/* The MPI library's collectives. Counts above CK_MAX_COUNT cannot be said in
 * an int; MPI_ERR_COUNT, as the algorithms answer. */
#define LIB_COUNT(n)                                                            \
    if ((n) > CK_MAX_COUNT) return MPI_ERR_COUNT;                               \
    int c = (int)(n)

static int lib_bcast(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                     MPI_Comm comm)
{
    UNUSED(s), UNUSED(op);
    LIB_COUNT(n);
    return MPI_Bcast(r, c, dt, root, comm);
}

static int lib_reduce(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                      MPI_Comm comm)
{
    LIB_COUNT(n);
    return MPI_Reduce(s, r, c, dt, op, root, comm);
}

static int lib_gather(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                      MPI_Comm comm)
{
    UNUSED(op);
    LIB_COUNT(n);
    return MPI_Gather(s, c, dt, r, c, dt, root, comm);
}

static int lib_scatter(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                       MPI_Comm comm)
{
    UNUSED(op);
    LIB_COUNT(n);
    return MPI_Scatter(s, c, dt, r, c, dt, root, comm);
}

static int lib_allgather(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                         MPI_Comm comm)
{
    UNUSED(op), UNUSED(root);
    LIB_COUNT(n);
    return MPI_Allgather(s, c, dt, r, c, dt, comm);
}

static int lib_reduce_scatter(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op,
                              int root, MPI_Comm comm)
{
    UNUSED(root);
    LIB_COUNT(n);
    return MPI_Reduce_scatter_block(s, r, c, dt, op, comm);
}

static int lib_allreduce(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                         MPI_Comm comm)
{
    UNUSED(root);
    LIB_COUNT(n);
    return MPI_Allreduce(s, r, c, dt, op, comm);
}

static int lib_alltoall(const void *s, void *r, size_t n, MPI_Datatype dt, MPI_Op op, int root,
                        MPI_Comm comm)
{
    UNUSED(op), UNUSED(root);
    LIB_COUNT(n);
    return MPI_Alltoall(s, c, dt, r, c, dt, comm);
}

/* The library's collectives through PMPI_*, with MPI's own arguments: an
 * interposer on MPI_* falls back on these without calling itself. */
static int pmpi_bcast(const ck_mpi_args *a)
{
    return PMPI_Bcast(a->rbuf, a->rcount, a->rtype, a->root, a->comm);
}

static int pmpi_reduce(const ck_mpi_args *a)
{
    return PMPI_Reduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->root, a->comm);
}

static int pmpi_gather(const ck_mpi_args *a)
{
    return PMPI_Gather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype, a->root,
                       a->comm);
}

static int pmpi_scatter(const ck_mpi_args *a)
{
    return PMPI_Scatter(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype, a->root,
                        a->comm);
}

static int pmpi_allgather(const ck_mpi_args *a)
{
    return PMPI_Allgather(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype, a->comm);
}

static int pmpi_reduce_scatter(const ck_mpi_args *a)
{
    return PMPI_Reduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm);
}

static int pmpi_allreduce(const ck_mpi_args *a)
{
    return PMPI_Allreduce(a->sbuf, a->rbuf, a->rcount, a->rtype, a->op, a->comm);
}

static int pmpi_alltoall(const ck_mpi_args *a)
{
    return PMPI_Alltoall(a->sbuf, a->scount, a->stype, a->rbuf, a->rcount, a->rtype, a->comm);
}

/* ---------------------------------------------------------------- the table */

/* Indexed by ck_collective, so a row cannot sit at another collective's
 * place. Every field is written, 0 included: a row is all there is to know
 * about its collective (collkit.h says what each field means). */
static const ck_collective_desc descriptors[CK_NUM_COLLECTIVES] = {
    [CK_BCAST] = {
        .id = CK_BCAST, .name = "bcast", .mpi_name = "MPI_Bcast",
        .has_root = 1, .has_op = 0, .per_block = 0, .in_place = CK_IN_PLACE_NONE,
        .send_blocks_root = 0, .send_blocks_other = 0,
        .recv_blocks_root = 1, .recv_blocks_other = 1,
        .from_root = 1, .source_slot_is_dest = 0, .result_is_own_block = 0, .replicated = 1,
        .busbw_const = 1.0, .busbw_per_p = 0.0,
        .call = call_bcast, .library_call = lib_bcast, .pmpi_call = pmpi_bcast,
    },
    [CK_REDUCE] = {
        .id = CK_REDUCE, .name = "reduce", .mpi_name = "MPI_Reduce",
        .has_root = 1, .has_op = 1, .per_block = 0, .in_place = CK_IN_PLACE_SEND,
        .send_blocks_root = 1, .send_blocks_other = 1,
        .recv_blocks_root = 1, .recv_blocks_other = 0,
        .from_root = 0, .source_slot_is_dest = 0, .result_is_own_block = 0, .replicated = 0,
        .busbw_const = 1.0, .busbw_per_p = 0.0,
        .call = call_reduce, .library_call = lib_reduce, .pmpi_call = pmpi_reduce,
    },
    [CK_GATHER] = {
        .id = CK_GATHER, .name = "gather", .mpi_name = "MPI_Gather",
        .has_root = 1, .has_op = 0, .per_block = 1, .in_place = CK_IN_PLACE_SEND,
        .send_blocks_root = 1, .send_blocks_other = 1,
        .recv_blocks_root = CK_BLOCKS_P, .recv_blocks_other = 0,
        .from_root = 0, .source_slot_is_dest = 0, .result_is_own_block = 0, .replicated = 0,
        .busbw_const = 0.0, .busbw_per_p = 1.0,
        .call = call_gather, .library_call = lib_gather, .pmpi_call = pmpi_gather,
    },
    [CK_SCATTER] = {
        .id = CK_SCATTER, .name = "scatter", .mpi_name = "MPI_Scatter",
        .has_root = 1, .has_op = 0, .per_block = 1, .in_place = CK_IN_PLACE_RECV,
        .send_blocks_root = CK_BLOCKS_P, .send_blocks_other = 0,
        .recv_blocks_root = 1, .recv_blocks_other = 1,
        .from_root = 1, .source_slot_is_dest = 1, .result_is_own_block = 0, .replicated = 0,
        .busbw_const = 0.0, .busbw_per_p = 1.0,
        .call = call_scatter, .library_call = lib_scatter, .pmpi_call = pmpi_scatter,
    },
    [CK_ALLGATHER] = {
        .id = CK_ALLGATHER, .name = "allgather", .mpi_name = "MPI_Allgather",
        .has_root = 0, .has_op = 0, .per_block = 1, .in_place = CK_IN_PLACE_SEND,
        .send_blocks_root = 1, .send_blocks_other = 1,
        .recv_blocks_root = CK_BLOCKS_P, .recv_blocks_other = CK_BLOCKS_P,
        .from_root = 0, .source_slot_is_dest = 0, .result_is_own_block = 0, .replicated = 1,
        .busbw_const = 0.0, .busbw_per_p = 1.0,
        .call = call_allgather, .library_call = lib_allgather, .pmpi_call = pmpi_allgather,
    },
    [CK_REDUCE_SCATTER] = {
        .id = CK_REDUCE_SCATTER, .name = "reduce_scatter", .mpi_name = "MPI_Reduce_scatter_block",
        .has_root = 0, .has_op = 1, .per_block = 1, .in_place = CK_IN_PLACE_SEND,
        .send_blocks_root = CK_BLOCKS_P, .send_blocks_other = CK_BLOCKS_P,
        .recv_blocks_root = 1, .recv_blocks_other = 1,
        .from_root = 0, .source_slot_is_dest = 0, .result_is_own_block = 1, .replicated = 0,
        .busbw_const = 0.0, .busbw_per_p = 1.0,
        .call = call_reduce_scatter, .library_call = lib_reduce_scatter, .pmpi_call = pmpi_reduce_scatter,
    },
    [CK_ALLREDUCE] = {
        .id = CK_ALLREDUCE, .name = "allreduce", .mpi_name = "MPI_Allreduce",
        .has_root = 0, .has_op = 1, .per_block = 0, .in_place = CK_IN_PLACE_SEND,
        .send_blocks_root = 1, .send_blocks_other = 1,
        .recv_blocks_root = 1, .recv_blocks_other = 1,
        .from_root = 0, .source_slot_is_dest = 0, .result_is_own_block = 0, .replicated = 1,
        .busbw_const = 0.0, .busbw_per_p = 2.0,
        .call = call_allreduce, .library_call = lib_allreduce, .pmpi_call = pmpi_allreduce,
    },
    [CK_ALLTOALL] = {
        .id = CK_ALLTOALL, .name = "alltoall", .mpi_name = "MPI_Alltoall",
        .has_root = 0, .has_op = 0, .per_block = 1, .in_place = CK_IN_PLACE_SEND,
        .send_blocks_root = CK_BLOCKS_P, .send_blocks_other = CK_BLOCKS_P,
        .recv_blocks_root = CK_BLOCKS_P, .recv_blocks_other = CK_BLOCKS_P,
        .from_root = 0, .source_slot_is_dest = 1, .result_is_own_block = 0, .replicated = 0,
        .busbw_const = 0.0, .busbw_per_p = 1.0,
        .call = call_alltoall, .library_call = lib_alltoall, .pmpi_call = pmpi_alltoall,
    },
};

const ck_collective_desc *ck_collective_describe(ck_collective coll)
{
    if ((int)coll < 0 || coll >= CK_NUM_COLLECTIVES) return NULL;
    return &descriptors[coll];
}

const char *ck_collective_name(ck_collective coll)
{
    const ck_collective_desc *d = ck_collective_describe(coll);
    return d ? d->name : NULL;
}

int ck_collective_parse(const char *name, ck_collective *coll)
{
    if (name == NULL) return -1;
    for (int c = 0; c < CK_NUM_COLLECTIVES; c++) {
        if (strcmp(descriptors[c].name, name) == 0) {
            *coll = (ck_collective)c;
            return 0;
        }
    }
    return -1;
}

int ck_collective_has_op(ck_collective coll)
{
    const ck_collective_desc *d = ck_collective_describe(coll);
    return d != NULL && d->has_op;
}

int ck_collective_has_root(ck_collective coll)
{
    const ck_collective_desc *d = ck_collective_describe(coll);
    return d != NULL && d->has_root;
}

/* ---------------------------------------------------------------- buffer sizes */

static size_t blocks_elems(int blocks, size_t count, int p)
{
    return blocks == CK_BLOCKS_P ? (size_t)p * count : (size_t)blocks * count;
}

static int is_root_at(const ck_collective_desc *d, int rank, int root)
{
    return d->has_root && rank == root;
}

int ck_collective_in_place_at(const ck_collective_desc *d, int in_place, int rank, int root)
{
    if (!in_place || d->in_place == CK_IN_PLACE_NONE) return 0;
    return d->has_root ? rank == root : 1;
}

static int send_blocks(const ck_collective_desc *d, int rank, int root)
{
    return is_root_at(d, rank, root) ? d->send_blocks_root : d->send_blocks_other;
}

static int recv_blocks(const ck_collective_desc *d, int rank, int root)
{
    return is_root_at(d, rank, root) ? d->recv_blocks_root : d->recv_blocks_other;
}

size_t ck_collective_send_elems(const ck_collective_desc *d, size_t count, int p, int rank,
                                int root, int in_place)
{
    if (ck_collective_in_place_at(d, in_place, rank, root) && d->in_place == CK_IN_PLACE_SEND)
        return 0;
    return blocks_elems(send_blocks(d, rank, root), count, p);
}

size_t ck_collective_recv_elems(const ck_collective_desc *d, size_t count, int p, int rank,
                                int root, int in_place)
{
    size_t r = blocks_elems(recv_blocks(d, rank, root), count, p);
    if (!ck_collective_in_place_at(d, in_place, rank, root)) return r;
    if (d->in_place == CK_IN_PLACE_RECV) return 0;
    /* The input sits in the receive buffer: it holds the larger of the two. */
    size_t s = blocks_elems(send_blocks(d, rank, root), count, p);
    return s > r ? s : r;
}

size_t ck_collective_result_elems(const ck_collective_desc *d, size_t count, int p, int rank,
                                  int root)
{
    return blocks_elems(recv_blocks(d, rank, root), count, p);
}

double ck_collective_vector_bytes(const ck_collective_desc *d, double bytes, int p)
{
    return d->per_block ? bytes * (double)p : bytes;
}

double ck_collective_busbw_factor(const ck_collective_desc *d, int p)
{
    if (p <= 0) return 0.0;
    return d->busbw_const + d->busbw_per_p * (double)(p - 1) / (double)p;
}

/* ---------------------------------------------------------------- calls */

int ck_algorithm_call(const ck_algorithm *a, const void *sbuf, void *rbuf, size_t count,
                      MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    if (a == NULL) return MPI_ERR_ARG;
    const ck_collective_desc *d = ck_collective_describe(a->collective);
    if (d == NULL || a->fn.bcast == NULL) return MPI_ERR_ARG;
    /* Under SimGrid, local work is charged in batches between messages; the
     * work after the last message is charged before returning, so it stays
     * part of this call's time (buffer.c). */
    int was = ck_local_work_batch(1);
    int rc = d->call(a, sbuf, rbuf, count, dt, op, root, comm);
    if (!was) (void)ck_local_work_batch(0);
    return rc;
}

int ck_library_call(ck_collective coll, const void *sbuf, void *rbuf, size_t count,
                    MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    const ck_collective_desc *d = ck_collective_describe(coll);
    if (d == NULL) return MPI_ERR_ARG;
    return d->library_call(sbuf, rbuf, count, dt, op, root, comm);
}

int ck_pmpi_call(ck_collective coll, const ck_mpi_args *args)
{
    const ck_collective_desc *d = ck_collective_describe(coll);
    if (d == NULL || args == NULL) return MPI_ERR_ARG;
    return d->pmpi_call(args);
}

/* ---------------------------------------------------------------- MPI's arguments at a rank */

int ck_mpi_roles_of(ck_collective coll, const ck_mpi_args *args, int p, int rank,
                    ck_mpi_roles *roles)
{
    const ck_collective_desc *d = ck_collective_describe(coll);
    if (d == NULL || args == NULL) return -1;
    const int root = args->root;
    /* MPI_IN_PLACE is read only where it may appear: the root of a rooted
     * collective (ck_collective_in_place_at), every rank of the others. */
    const int ip = (d->in_place == CK_IN_PLACE_SEND && args->sbuf == MPI_IN_PLACE) ||
                   (d->in_place == CK_IN_PLACE_RECV && args->rbuf == MPI_IN_PLACE);
    const int ip_here = ck_collective_in_place_at(d, ip, rank, root);
    /* Which sides MPI reads at this rank, from the descriptor alone (one
     * element a block): scatter's send side and gather's receive side only at
     * the root, reduce's receive side only at the root, neither count of the
     * side MPI_IN_PLACE replaces. A side that is not significant may hold
     * anything (NULL, -1, MPI_DATATYPE_NULL: MPI allows it), so only a
     * significant count is validated or used: an interposer that refused the
     * call at the ranks passing -1 there, and ran it elsewhere, would hang. */
    const int send_sig = ck_collective_send_elems(d, 1, p, rank, root, ip) > 0;
    const int recv_sig = ck_collective_recv_elems(d, 1, p, rank, root, ip) > 0;
    if ((send_sig && args->scount < 0) || (recv_sig && args->rcount < 0)) return -1;
    const size_t scount = send_sig ? (size_t)args->scount : 0;
    const size_t rcount = recv_sig ? (size_t)args->rcount : 0;
    roles->send_elems = ck_collective_send_elems(d, scount, p, rank, root, ip);
    roles->recv_elems = ck_collective_recv_elems(d, rcount, p, rank, root, ip);
    /* A rank that contributes input but passes no send buffer keeps it in the
     * receive buffer: in place, or bcast's root (one buffer for both). Read
     * from the descriptor (one element a block), not from a count that may
     * not be significant here. */
    const int source = d->has_op || !d->from_root || (d->has_root && rank == root);
    const int no_send = ck_collective_send_elems(d, 1, p, rank, root, 0) == 0;
    roles->recv_in = (ip_here && d->in_place == CK_IN_PLACE_SEND) || (no_send && source);
    /* bcast's root already holds the result: it is its input. */
    const int result = ck_collective_result_elems(d, 1, p, rank, root) > 0;
    roles->recv_out = roles->recv_elems > 0 && result && !(no_send && source && !ip_here);
    /* Whether rbuf is significant at all, whatever the count (a count of 0
     * still names its datatype there). */
    roles->block_from_send = !recv_sig;
    return 0;
}

/* The bytes the rules and the profile count a call by. An empty block is
 * empty at every rank (type signatures match), so its datatype is never asked
 * its size: an empty side may name MPI_DATATYPE_NULL, and every rank must
 * come to 0 alike. */
int ck_mpi_block_bytes(const ck_mpi_roles *roles, const ck_mpi_args *args, size_t *bytes)
{
    const int count = roles->block_from_send ? args->scount : args->rcount;
    int size = 0;
    if (count == 0) {
        *bytes = 0;
        return MPI_SUCCESS;
    }
    int rc = MPI_Type_size(roles->block_from_send ? args->stype : args->rtype, &size);
    if (rc != MPI_SUCCESS) return rc;
    *bytes = (size_t)count * (size_t)size;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- datatypes */

static const ck_datatype_desc datatypes[] = {
    {"int8", 1, 0},
    {"int32", 4, 0},
    {"int64", 8, 0},
    {"float", sizeof(float), 1},
    {"double", sizeof(double), 1},
};

#define NDATATYPES (sizeof datatypes / sizeof datatypes[0])

size_t ck_datatype_count(void) { return NDATATYPES; }

const ck_datatype_desc *ck_datatype_at(size_t i)
{
    return i < NDATATYPES ? &datatypes[i] : NULL;
}

const ck_datatype_desc *ck_datatype_find(const char *name)
{
    if (name == NULL) return NULL;
    for (size_t i = 0; i < NDATATYPES; i++)
        if (strcmp(datatypes[i].name, name) == 0) return &datatypes[i];
    return NULL;
}

MPI_Datatype ck_datatype_mpi(const ck_datatype_desc *d)
{
    /* Built at run time: some MPIs' handles are not compile-time constants.
     * Same order as the table above. */
    const MPI_Datatype handles[NDATATYPES] = {MPI_INT8_T, MPI_INT32_T, MPI_INT64_T, MPI_FLOAT,
                                              MPI_DOUBLE};
    for (size_t i = 0; i < NDATATYPES; i++)
        if (d == &datatypes[i]) return handles[i];
    return MPI_DATATYPE_NULL;
}
