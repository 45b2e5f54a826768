/* The `nccl` backend: GPUs, the NCCL communicator, device buffers (device.h). */
#include "device.h"

#include "agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_device {
    int device;
    ncclComm_t comm;
    cudaStream_t stream;
    const ck_nodes *nodes; /* of the launch's ranks: device choice, parallel_rings */
    char name[512]; /* the device's name (256 at most) and versions */
};

static void cuda_text(char *err, size_t len, const char *what, cudaError_t e)
{
    snprintf(err, len, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static void nccl_text(char *err, size_t len, const char *what, ncclResult_t r, ncclComm_t comm)
{
    /* ncclGetLastError names the cause (e.g. which check failed), where
     * ncclGetErrorString only names the class of error. */
    const char *last = comm != NULL ? ncclGetLastError(comm) : NULL;
    snprintf(err, len, "%s: %s%s%s", what, ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
}

/* This rank's index among the ranks of its node: libcollkit's node
 * structure (ck_nodes_get), the one Parallel Rings uses, so that
 * COLLKIT_RANKS_PER_NODE's virtual nodes pick devices the same way. */
static int local_rank(MPI_Comm ctrl, int *out, const ck_nodes **nodes)
{
    const ck_nodes *nd = NULL;
    int rc = ck_nodes_get(ctrl, &nd);
    if (rc == MPI_SUCCESS) {
        *out = nd->local_rank;
        *nodes = nd;
    }
    return rc;
}

/* COLLKIT_BENCH_DEVICE (device.h): the device for local index `local`.
 * Returns 0, or -1 with the reason. */
static int choose_device(int local, int ndev, int *dev, char *err, size_t len)
{
    const char *v = getenv("COLLKIT_BENCH_DEVICE");
    if (v == NULL || *v == '\0' || strcmp(v, "local_rank") == 0) {
        *dev = local % ndev;
        return 0;
    }
    int ids[1024], n = 0;
    const char *s = v;
    while (*s != '\0') {
        char *end = NULL;
        long id = strtol(s, &end, 10);
        if (end == s || id < 0 || id >= ndev || n == (int)(sizeof ids / sizeof ids[0]) ||
            (*end != ',' && *end != '\0')) {
            snprintf(err, len,
                     "COLLKIT_BENCH_DEVICE='%s' is not 'local_rank' or a list of device numbers below %d "
                     "(the devices this rank sees)",
                     v, ndev);
            return -1;
        }
        ids[n++] = (int)id;
        s = *end == ',' ? end + 1 : end;
    }
    if (n == 0) {
        snprintf(err, len, "COLLKIT_BENCH_DEVICE='%s' names no device", v);
        return -1;
    }
    *dev = ids[local % n];
    return 0;
}

/* Agrees a local failure: returns 1 (and rank 0's err holds the first
 * failing rank's line) when any rank failed. -1 when the agreement itself
 * failed. */
static int any_failed(int failed, char *err, size_t errlen, int rank, int p, MPI_Comm ctrl)
{
    double mark = agree_mark(failed, rank, p);
    if (agree_max(&mark, 1, ctrl) != MPI_SUCCESS) return -1;
    int src = agree_marked_rank(mark, p);
    if (src < 0) return 0;
    char text[BENCH_TEXT_LEN] = "";
    if (agree_text_to_root(src, err, text, rank, ctrl) != MPI_SUCCESS) return -1;
    if (rank == 0) snprintf(err, errlen, "%s", text);
    return 1;
}

bench_device *device_open(MPI_Comm ctrl, int rank, int p, char *err, size_t errlen)
{
    err[0] = '\0';
    bench_device *d = calloc(1, sizeof *d);
    int failed = d == NULL;
    if (failed) snprintf(err, errlen, "collkit-bench: out of memory (device state)");
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int hlen = 0;
    if (MPI_Get_processor_name(host, &hlen) != MPI_SUCCESS) snprintf(host, sizeof host, "?");
    int local = 0;
    if (!failed && local_rank(ctrl, &local, &d->nodes) != MPI_SUCCESS) {
        failed = 1;
        snprintf(err, errlen, "collkit-bench: rank %d cannot find its rank inside its node", rank);
    }
    if (!failed) {
        int ndev = 0;
        cudaError_t e = cudaGetDeviceCount(&ndev);
        char why[BENCH_TEXT_LEN] = "";
        if (e != cudaSuccess) {
            failed = 1;
            cuda_text(why, sizeof why, "cudaGetDeviceCount", e);
        } else if (ndev == 0) {
            failed = 1;
            snprintf(why, sizeof why, "cudaGetDeviceCount found 0 devices");
        }
        if (failed) {
            snprintf(err, errlen,
                     "collkit-bench: the nccl backend needs a GPU and %s has none usable (%s); run nccl "
                     "points on a GPU machine (docs/gpu.md)",
                     host, why);
        } else if (choose_device(local, ndev, &d->device, why, sizeof why) != 0) {
            failed = 1;
            snprintf(err, errlen, "collkit-bench: rank %d: %s", rank, why);
        } else if ((e = cudaSetDevice(d->device)) != cudaSuccess ||
                   (e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking)) != cudaSuccess) {
            failed = 1;
            cuda_text(why, sizeof why, "cudaSetDevice/cudaStreamCreate", e);
            snprintf(err, errlen, "collkit-bench: rank %d, device %d: %s", rank, d->device, why);
        }
    }
    int agreed = any_failed(failed, err, errlen, rank, p, ctrl);
    if (agreed != 0) {
        if (agreed < 0) snprintf(err, errlen, "collkit-bench: agreement failed while choosing devices");
        if (d != NULL && d->stream != NULL) cudaStreamDestroy(d->stream);
        free(d);
        return NULL;
    }

    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t nr = ncclSuccess;
    if (rank == 0) nr = ncclGetUniqueId(&id);
    double bad = nr != ncclSuccess;
    if (agree_bcast(&bad, 1, ctrl) != MPI_SUCCESS ||
        ck_bcast_binomial_doubling(&id, sizeof id, MPI_BYTE, 0, ctrl) != MPI_SUCCESS) {
        snprintf(err, errlen, "collkit-bench: sending the NCCL unique id failed");
        device_close(d);
        return NULL;
    }
    if (bad != 0.0) {
        nccl_text(err, errlen, "collkit-bench: ncclGetUniqueId", nr, NULL);
        device_close(d);
        return NULL;
    }
    nr = ncclCommInitRank(&d->comm, p, id, rank);
    failed = nr != ncclSuccess;
    if (failed) {
        nccl_text(err, errlen, "collkit-bench: ncclCommInitRank", nr, NULL);
        d->comm = NULL;
    }
    if (any_failed(failed, err, errlen, rank, p, ctrl) != 0) {
        device_close(d);
        return NULL;
    }

    struct cudaDeviceProp prop;
    int rt = 0, drv = 0, nv = 0;
    if (cudaGetDeviceProperties(&prop, d->device) != cudaSuccess) snprintf(prop.name, sizeof prop.name, "?");
    prop.name[sizeof prop.name - 1] = '\0';
    (void)cudaRuntimeGetVersion(&rt);
    (void)cudaDriverGetVersion(&drv);
    (void)ncclGetVersion(&nv);
    snprintf(d->name, sizeof d->name, "%s (device %d, CUDA runtime %d, driver %d, NCCL %d)", prop.name,
             d->device, rt, drv, nv);
    return d;
}

void device_close(bench_device *d)
{
    if (d == NULL) return;
    if (d->comm != NULL) {
        /* Finalize flushes outstanding work so that Destroy cannot race it. */
        (void)ncclCommFinalize(d->comm);
        (void)ncclCommDestroy(d->comm);
    }
    if (d->stream != NULL) cudaStreamDestroy(d->stream);
    free(d);
}

void device_describe(const bench_device *d, char *out, size_t len) { snprintf(out, len, "%s", d->name); }

static size_t whole(const ckv_buf *b) { return b->mem != NULL ? b->bytes + 2 * CKV_GUARD_BYTES : 0; }

int device_mirror_alloc(const ckv_buffers *b, device_mirror *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->send_bytes = whole(&b->send);
    m->recv_bytes = whole(&b->recv);
    cudaError_t e = cudaSuccess;
    if (m->send_bytes > 0) e = cudaMalloc((void **)&m->send, m->send_bytes);
    if (e == cudaSuccess && m->recv_bytes > 0) e = cudaMalloc((void **)&m->recv, m->recv_bytes);
    if (e != cudaSuccess) {
        cuda_text(err, errlen, "cudaMalloc", e);
        device_mirror_free(m);
        return -1;
    }
    return 0;
}

void device_mirror_free(device_mirror *m)
{
    if (m->send != NULL) cudaFree(m->send);
    if (m->recv != NULL) cudaFree(m->recv);
    memset(m, 0, sizeof *m);
}

int device_push(const ckv_buffers *b, const device_mirror *m, char *err, size_t errlen)
{
    cudaError_t e = cudaSuccess;
    if (m->send_bytes > 0) e = cudaMemcpy(m->send, b->send.mem, m->send_bytes, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && m->recv_bytes > 0)
        e = cudaMemcpy(m->recv, b->recv.mem, m->recv_bytes, cudaMemcpyHostToDevice);
    /* A copy from pageable host memory may return before its DMA to the
     * device has finished, and NCCL's stream is non-blocking, so nothing
     * orders the collective after it: on an H100 a 2 MiB allreduce read a
     * partly copied input. Wait for the copies here, outside the timed call. */
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        cuda_text(err, errlen, "copying buffers to the device", e);
        return -1;
    }
    return 0;
}

int device_pull(ckv_buffers *b, const device_mirror *m, char *err, size_t errlen)
{
    cudaError_t e = cudaSuccess;
    if (m->send_bytes > 0) e = cudaMemcpy(b->send.mem, m->send, m->send_bytes, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && m->recv_bytes > 0)
        e = cudaMemcpy(b->recv.mem, m->recv, m->recv_bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        cuda_text(err, errlen, "copying buffers from the device", e);
        return -1;
    }
    return 0;
}

static int nccl_type(const ck_datatype_desc *dt, ncclDataType_t *t)
{
    static const struct {
        const char *name;
        ncclDataType_t t;
    } map[] = {{"int8", ncclInt8}, {"int32", ncclInt32}, {"int64", ncclInt64},
               {"float", ncclFloat32}, {"double", ncclFloat64}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(dt->name, map[i].name) == 0) {
            *t = map[i].t;
            return 0;
        }
    return -1;
}

static int nccl_op(ckv_op op, ncclRedOp_t *o)
{
    switch (op) {
    case CKV_SUM: *o = ncclSum; return 0;
    case CKV_MAX: *o = ncclMax; return 0;
    case CKV_MIN: *o = ncclMin; return 0;
    case CKV_PROD: *o = ncclProd; return 0;
    default: return -1;
    }
}

const char *device_unsupported(const bench_point *pt)
{
    ncclDataType_t t;
    ncclRedOp_t o;
    if (nccl_type(pt->dtype, &t) != 0) return "NCCL has no equivalent of this datatype";
    if (ck_collective_describe(pt->coll)->has_op && nccl_op(pt->op, &o) != 0)
        return "NCCL has no equivalent of this op (only sum, max, min, prod)";
    if (pt->in_place && pt->coll == CK_REDUCE_SCATTER)
        return "NCCL's in-place reduce_scatter leaves the result at offset rank x count, MPI's at 0";
    if (pt->in_place && pt->coll == CK_ALLTOALL) return "NCCL has no in-place alltoall";
    if (strcmp(pt->algorithm, DEVICE_PARALLEL_RINGS) == 0 && pt->coll != CK_ALLGATHER)
        return "parallel_rings is an allgather";
    return NULL;
}

/* One block per peer through grouped ncclSend/ncclRecv: NCCL's own form of
 * alltoall, gather and scatter, available in every NCCL version that has
 * point-to-point (2.7 on). `skip_self`: the block that MPI_IN_PLACE leaves
 * where it is. */
static ncclResult_t p2p_blocks(bench_device *d, int coll, const unsigned char *s, unsigned char *r, size_t count,
                               size_t es, ncclDataType_t t, int root, int rank, int p, int in_place)
{
    size_t blk = count * es;
    ncclResult_t nr = ncclGroupStart();
    for (int peer = 0; peer < p && nr == ncclSuccess; peer++) {
        int self = peer == rank;
        if (coll == CK_ALLTOALL) {
            nr = ncclSend(s + (size_t)peer * blk, count, t, peer, d->comm, d->stream);
            if (nr == ncclSuccess) nr = ncclRecv(r + (size_t)peer * blk, count, t, peer, d->comm, d->stream);
        } else if (coll == CK_GATHER) {
            if (self && in_place) continue;
            if (rank == root) nr = ncclRecv(r + (size_t)peer * blk, count, t, peer, d->comm, d->stream);
            if (nr == ncclSuccess && self) nr = ncclSend(s, count, t, root, d->comm, d->stream);
        } else {
            if (self && in_place) continue;
            if (rank == root) nr = ncclSend(s + (size_t)peer * blk, count, t, peer, d->comm, d->stream);
            if (nr == ncclSuccess && self) nr = ncclRecv(r, count, t, root, d->comm, d->stream);
        }
    }
    /* Non-root ranks of gather/scatter only take part through their own
     * block: the loop above reaches them at peer == rank. */
    ncclResult_t end = ncclGroupEnd();
    return nr != ncclSuccess ? nr : end;
}

int backend_nccl_call(bench_device *d, const bench_point *pt, const ckv_buffers *b, const device_mirror *m,
                      int rank, int p, char *err, size_t errlen)
{
    ncclDataType_t t;
    ncclRedOp_t o = ncclSum;
    if (nccl_type(pt->dtype, &t) != 0 || (ck_collective_describe(pt->coll)->has_op && nccl_op(pt->op, &o) != 0)) {
        snprintf(err, errlen, "%s", device_unsupported(pt));
        return -1;
    }
    size_t es = pt->dtype->size, n = pt->count;
    /* The device copies of the host data (past the guard); NULL where the
     * host passes NULL. In place, the input lives in the receive buffer. */
    unsigned char *s = m->send != NULL ? m->send + CKV_GUARD_BYTES : NULL;
    unsigned char *r = m->recv != NULL ? m->recv + CKV_GUARD_BYTES : NULL;
    int ip = b->lay.send_in_place || b->lay.recv_in_place;
    ncclResult_t nr;
    switch (pt->coll) {
    case CK_ALLREDUCE: nr = ncclAllReduce(ip ? r : s, r, n, t, o, d->comm, d->stream); break;
    case CK_REDUCE:
        /* Only the root's receive buffer is significant; elsewhere NCCL is
         * given the send buffer, which a correct reduce leaves unchanged
         * (and the check would catch any write to it). */
        nr = ncclReduce(ip ? r : s, r != NULL ? r : s, n, t, o, pt->root, d->comm, d->stream);
        break;
    case CK_BCAST: nr = ncclBroadcast(r, r, n, t, pt->root, d->comm, d->stream); break;
    case CK_ALLGATHER:
        if (strcmp(pt->algorithm, DEVICE_PARALLEL_RINGS) == 0) {
            if (device_parallel_rings_allgather(d->nodes, ip ? NULL : s, r, n, es, t, rank, d->comm, d->stream, err,
                                                errlen) != 0)
                return -1;
            nr = ncclSuccess;
            break;
        }
        /* NCCL's in-place allgather is MPI's: the rank's block already sits
         * at rank x count of the receive buffer. */
        nr = ncclAllGather(ip ? r + (size_t)rank * n * es : s, r, n, t, d->comm, d->stream);
        break;
    case CK_REDUCE_SCATTER: nr = ncclReduceScatter(s, r, n, t, o, d->comm, d->stream); break;
    case CK_ALLTOALL:
    case CK_GATHER:
    case CK_SCATTER:
        nr = p2p_blocks(d, (int)pt->coll, s, r, n, es, t, pt->root, rank, p, ip);
        break;
    default: snprintf(err, errlen, "no NCCL form of %s", ck_collective_name(pt->coll)); return -1;
    }
    if (nr != ncclSuccess) {
        nccl_text(err, errlen, "NCCL", nr, d->comm);
        return -1;
    }
    cudaError_t e = cudaStreamSynchronize(d->stream);
    if (e != cudaSuccess) {
        cuda_text(err, errlen, "cudaStreamSynchronize", e);
        return -1;
    }
    /* A failure inside the kernels or the proxy shows here, not in the
     * enqueue's return value. */
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(d->comm, &async) == ncclSuccess && async != ncclSuccess) {
        nccl_text(err, errlen, "NCCL (asynchronous)", async, d->comm);
        return -1;
    }
    return 0;
}
