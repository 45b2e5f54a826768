/*
 * The `nccl` backend's device side (built only with COLLKIT_NCCL): one GPU
 * per rank, one NCCL communicator over all ranks, and device copies of the
 * validator's buffers.
 *
 * The validator (validate/) stays the one judge of results: every iteration
 * the host buffers are filled as for the CPU backends, copied whole (guards
 * included) to the device, the collective runs there, and the device copies
 * come back whole before the host check. A write past a device buffer's end
 * therefore changes a guard exactly as it would on the host. The copies are
 * outside the timed region; the timed region ends with the stream
 * synchronised, so it covers the collective's work, not just its launch.
 */
#ifndef CK_BENCH_DEVICE_H
#define CK_BENCH_DEVICE_H

#include "backend.h"
#include "points.h"
#include "validate.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>
#include <stddef.h>

typedef struct bench_device bench_device;

/* Picks this rank's GPU and creates the NCCL communicator over `ctrl`'s
 * ranks (the ncclUniqueId travels from rank 0 on libcollkit's binomial
 * broadcast, never the MPI library's own). The device is
 * COLLKIT_BENCH_DEVICE: unset or "local_rank" = the rank's index among the
 * ranks of its node modulo the number of visible devices; a comma-separated
 * list of device numbers = the entry at that local index (modulo its
 * length). Every rank must call it. Returns NULL with one line in err (the
 * first failing rank's, after agreement) when any rank has no device or
 * NCCL cannot start. */
bench_device *device_open(MPI_Comm ctrl, int rank, int p, char *err, size_t errlen);
void device_close(bench_device *d);

/* For the launch record: "NVIDIA H100 80GB HBM3 (device 0, CUDA runtime
 * 13000, driver 13000, NCCL 22809)". */
void device_describe(const bench_device *d, char *out, size_t len);

/* Device copies of a point's host buffers (each with its guards). */
typedef struct {
    unsigned char *send, *recv; /* NULL where the host buffer has no memory */
    size_t send_bytes, recv_bytes;
} device_mirror;

int device_mirror_alloc(const ckv_buffers *b, device_mirror *m, char *err, size_t errlen);
void device_mirror_free(device_mirror *m);
/* Host -> device and device -> host, whole allocations, synchronous.
 * 0, or -1 with the CUDA error in err. */
int device_push(const ckv_buffers *b, const device_mirror *m, char *err, size_t errlen);
int device_pull(ckv_buffers *b, const device_mirror *m, char *err, size_t errlen);

/* Why NCCL cannot run this point as MPI defines it (NULL when it can):
 * datatypes and ops without an NCCL equivalent, and in-place forms whose
 * NCCL layout differs from MPI's (reduce_scatter puts the result at
 * rank x count, alltoall has none). Depends only on the point, so every
 * rank reaches the same verdict. */
const char *device_unsupported(const bench_point *pt);

/* The collective on the device copies; returns after the stream has
 * finished. 0, or -1 with NCCL's or CUDA's error in err. */
int backend_nccl_call(bench_device *d, const bench_point *pt, const ckv_buffers *b, const device_mirror *m,
                      int rank, int p, char *err, size_t errlen);

/* The nccl backend's own algorithms (algorithm=NAME in the points file;
 * every other name is NCCL's collective, forced through the environment). */
#define DEVICE_PARALLEL_RINGS "parallel_rings"

/* Parallel Rings allgather on device buffers (device_parallel_rings.c):
 * rbuf holds p blocks of count elements of es bytes; sbuf is this rank's
 * block, or NULL in place (already at rank x count). Enqueues on `stream`;
 * the caller synchronises. 0, or -1 with the reason in err. */
int device_parallel_rings_allgather(const ck_nodes *nd, const void *sbuf, void *rbuf, size_t count, size_t es,
                                    ncclDataType_t t, int rank, ncclComm_t comm, cudaStream_t stream,
                                    char *err, size_t errlen);

#endif
