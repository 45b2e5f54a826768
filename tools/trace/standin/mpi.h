/*
 * A stand-in for <mpi.h>, only for ck_trace: the types, constants and
 * prototypes of exactly the part of MPI that libcollkit uses (see
 * lib/core/ck_core.h: every message goes through lib/core/p2p.c). libcollkit
 * is compiled a second time against this header and runs one rank at a time
 * inside ck_trace (standin.c explains the semantics).
 *
 * Keeping the subset exact is deliberate: if libcollkit starts calling
 * anything else, ck_trace stops compiling (implicit declarations are errors
 * under -Werror), instead of silently tracing something the real run does
 * differently.
 */
#ifndef CK_STANDIN_MPI_H
#define CK_STANDIN_MPI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Lets shared code tell which mpi.h it was compiled against. */
#define CK_MPI_STANDIN 1

/* Handles are small integers, as in MPICH: compared by value, never
 * dereferenced. */
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef ptrdiff_t MPI_Aint;

typedef struct {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
} MPI_Status;

/* Error classes. The values are the stand-in's own; ck_trace reports them by
 * name (MPI_ERR_OP, ...), which is what the real-MPI recorder prints too. */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_REQUEST 7
#define MPI_ERR_ROOT 8
#define MPI_ERR_OP 9
#define MPI_ERR_ARG 12
#define MPI_ERR_OTHER 15
#define MPI_ERR_NO_MEM 34

#define MPI_COMM_NULL ((MPI_Comm)0)
#define MPI_COMM_WORLD ((MPI_Comm)1)
#define MPI_COMM_SELF ((MPI_Comm)2)

#define MPI_DATATYPE_NULL ((MPI_Datatype)0)
#define MPI_INT8_T ((MPI_Datatype)1)
#define MPI_INT32_T ((MPI_Datatype)2)
#define MPI_INT64_T ((MPI_Datatype)3)
#define MPI_FLOAT ((MPI_Datatype)4)
#define MPI_DOUBLE ((MPI_Datatype)5)

/* The predefined reduction ops are all commutative; the stand-in adds one
 * non-commutative op (standin.h) so both answers of MPI_Op_commutative exist. */
#define MPI_OP_NULL ((MPI_Op)0)
#define MPI_SUM ((MPI_Op)1)
#define MPI_PROD ((MPI_Op)2)
#define MPI_MAX ((MPI_Op)3)
#define MPI_MIN ((MPI_Op)4)

#define MPI_REQUEST_NULL ((MPI_Request)0)

#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)

/* The address of an object of our own: distinct from every user buffer
 * without a cast of an arbitrary integer to a pointer. */
extern char ck_standin_in_place;
#define MPI_IN_PLACE ((void *)&ck_standin_in_place)


int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]);
int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype,
                     MPI_Op op);
int MPI_Op_commutative(MPI_Op op, int *commute);
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);
int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent);
/* Datatypes of blocks at scattered addresses (lib/core/scattered.c): the
 * stand-in keeps only their size, which is all a trace records. */
int MPI_Get_address(const void *location, MPI_Aint *address);
MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2);
int MPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *datatype);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_test_inter(MPI_Comm comm, int *flag);

/* The MPI library's own collectives exist here only because libcollkit's
 * collective descriptors point at them (ck_library_call, for harnesses);
 * no algorithm calls them, and in the stand-in they refuse with
 * MPI_ERR_OTHER: there is no library to fall back on. */
int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm);
int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
               MPI_Datatype rdt, int root, MPI_Comm comm);
int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                MPI_Datatype rdt, int root, MPI_Comm comm);
int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                  MPI_Datatype rdt, MPI_Comm comm);
int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                             MPI_Op op, MPI_Comm comm);
int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm);
int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                 MPI_Datatype rdt, MPI_Comm comm);

/* The same collectives under their profiling names, for the descriptors'
 * ck_pmpi_call (libcollkit-preload's fallback); they refuse alike. */
#define PMPI_Bcast MPI_Bcast
#define PMPI_Reduce MPI_Reduce
#define PMPI_Gather MPI_Gather
#define PMPI_Scatter MPI_Scatter
#define PMPI_Allgather MPI_Allgather
#define PMPI_Reduce_scatter_block MPI_Reduce_scatter_block
#define PMPI_Allreduce MPI_Allreduce
#define PMPI_Alltoall MPI_Alltoall

#ifdef __cplusplus
}
#endif

#endif /* CK_STANDIN_MPI_H */
