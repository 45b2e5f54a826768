/*
 * Parallel Rings allgather on GPUs (Barati Sedeh, Grant & Afsahi,
 * "Scalable, Topology- and Multi-HCA-Aware Hierarchical GPU Allgather Using
 * Parallel Rings"), for the nccl backend: the message schedule of libcollkit's
 * `parallel_rings` allgather (lib/core/parallel_rings.c, ck_pr_allgather), with
 * NCCL point-to-point on device buffers instead of MPI on host buffers.
 *
 * N nodes of k ranks (libcollkit's node structure, ck_nodes_get; equal
 * counts required), one GPU per rank: the ranks with local rank l form rail
 * l, a ring over the nodes (one per local GPU, one NIC each where every GPU
 * has its own). Round r (0 <= r < N): a rank holds the rail block of node
 * d = n - r (its own at r = 0), sends it to its k - 1 node peers and receives
 * theirs (over NVLink/PCIe between the node's GPUs), and, for r < N - 1,
 * sends it to the right ring neighbour (node n + 1) and receives the block of
 * node d - 1 from the left (node n - 1). The intra-node exchange and the
 * ring step of a round are one NCCL group, so NCCL runs them concurrently
 * (the overlap of the paper); rounds follow each other in stream order.
 */
#include "device.h"

#include <stdio.h>

int device_parallel_rings_allgather(const ck_nodes *nd, const void *sbuf, void *rbuf, size_t count, size_t es,
                                    ncclDataType_t t, int rank, ncclComm_t comm, cudaStream_t stream,
                                    char *err, size_t errlen)
{
    if (!nd->equal) {
        snprintf(err, errlen, "parallel_rings needs the same number of ranks on every node");
        return -1;
    }
    const int N = nd->nodes, k = nd->local_size, n = nd->node, l = nd->local_rank;
    const size_t blk = count * es;
    unsigned char *buf = rbuf;
    /* Out of place, the own block first moves into place: round 0 sends it
     * from there, as ck_pr_allgather does after ck_allgather_open. */
    if (sbuf != NULL && sbuf != buf + (size_t)rank * blk && blk > 0) {
        cudaError_t e = cudaMemcpyAsync(buf + (size_t)rank * blk, sbuf, blk, cudaMemcpyDeviceToDevice, stream);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "cudaMemcpyAsync: %s", cudaGetErrorString(e));
            return -1;
        }
    }
    const int right = ck_nodes_rank(nd, (n + 1) % N, l), left = ck_nodes_rank(nd, (n - 1 + N) % N, l);
    for (int r = 0; r < N; r++) {
        const int d = (n - r + N) % N;
        const int mine = ck_nodes_rank(nd, d, l);
        ncclResult_t nr = ncclGroupStart();
        for (int j = 0; j < k && nr == ncclSuccess; j++) {
            if (j == l) continue;
            const int peer = ck_nodes_rank(nd, n, j), theirs = ck_nodes_rank(nd, d, j);
            nr = ncclRecv(buf + (size_t)theirs * blk, count, t, peer, comm, stream);
            if (nr == ncclSuccess) nr = ncclSend(buf + (size_t)mine * blk, count, t, peer, comm, stream);
        }
        if (nr == ncclSuccess && r < N - 1) {
            const int next = ck_nodes_rank(nd, (d - 1 + N) % N, l);
            nr = ncclRecv(buf + (size_t)next * blk, count, t, left, comm, stream);
            if (nr == ncclSuccess) nr = ncclSend(buf + (size_t)mine * blk, count, t, right, comm, stream);
        }
        ncclResult_t end = ncclGroupEnd();
        if (nr == ncclSuccess) nr = end;
        if (nr != ncclSuccess) {
            const char *last = ncclGetLastError(comm);
            snprintf(err, errlen, "NCCL (parallel_rings round %d): %s%s%s", r, ncclGetErrorString(nr),
                     last && *last ? ": " : "", last ? last : "");
            return -1;
        }
    }
    return 0;
}
