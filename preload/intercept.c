/* The C entry points: MPI_Init*, MPI_Finalize and the eight collectives,
 * each handing its arguments to ckp_dispatch (the ones only profiled are in
 * profile_intercept.c). */
#include "ck_preload.h"

#include <stdio.h>
#include <stdlib.h>


int ckp_after_init(void)
{
    char err[1024] = "";
    int bad = ckp_config_load(err, sizeof err) != 0;
    if (!bad && ckp_autotune_setup(err, sizeof err) != 0) bad = 1;
    if (!bad && ckp_tune_cfg.on) ckp_cfg.active = 1;
    if (!bad && ckp_profile_setup(err, sizeof err) != 0) bad = 1;
    if (!bad && (ckp_cfg.active || ckp_profile_on) && ckp_comms_create() != MPI_SUCCESS) {
        snprintf(err, sizeof err, "could not create the attribute key of its communicators (MPI error)");
        bad = 1;
    }
    /* Agree first: a rules file or profile directory missing on some ranks
     * must stop them all, not leave the others waiting in the program's
     * first collective. The lowest failing rank says why. */
    int rank = 0, size = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    /* In the same reduction: whether every rank profiles, with one clock
     * mode, since the profile's set-up is collective (a rank left out would
     * leave the others waiting in it). */
    const int mode = bad ? 0 : ckp_profile_mode();
    /* And whether every rank found the same library algorithms (library_algs.c). */
    const int lib = ckp_lib_algs_signature();
    int mine[5] = {bad ? rank : size, mode, -mode, lib, -lib}, agreed[5];
    PMPI_Allreduce(mine, agreed, 5, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (agreed[3] != -agreed[4]) ckp_lib_algs_disable();
    const int first = agreed[0];
    if (first == size && agreed[1] != -agreed[2]) {
        if (rank == 0)
            snprintf(err, sizeof err, "COLLKIT_PROFILE or COLLKIT_PROFILE_CLOCK differs between ranks; fix: give "
                                      "every rank the same environment (mpirun -x / -genv)");
        bad = 1;
    }
    if (first < size || bad) {
        if (rank == (first < size ? first : 0)) fprintf(stderr, "collkit-preload: %s\n", err);
        fflush(stderr);
        PMPI_Finalize();
        exit(2);
    }
    ckp_profile_started();
    ckp_autotune_started();
    return MPI_SUCCESS;
}

int ckp_before_finalize(void)
{
    int rank = 0;
    ckp_profile_finish();
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    ckp_autotune_close();
    if (ckp_cfg.report && rank == 0) ckp_report_write();
    ckp_autotune_stopped();
    ckp_autotune_finish(rank);
    ckp_comms_release();
    return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv)
{
    ckp_profile_mark_init();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) ckp_after_init();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    ckp_profile_mark_init();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) ckp_after_init();
    return rc;
}

int MPI_Finalize(void)
{
    ckp_before_finalize();
    return PMPI_Finalize();
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    return ckp_dispatch(CK_BCAST, NULL, 0, MPI_DATATYPE_NULL, buf, count, dt, MPI_OP_NULL, root, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm)
{
    return ckp_dispatch(CK_REDUCE, sbuf, count, dt, rbuf, count, dt, op, root, comm);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return ckp_dispatch(CK_ALLREDUCE, sbuf, count, dt, rbuf, count, dt, op, 0, comm);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    return ckp_dispatch(CK_REDUCE_SCATTER, sbuf, count, dt, rbuf, count, dt, op, 0, comm);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return ckp_dispatch(CK_GATHER, sbuf, scount, stype, rbuf, rcount, rtype, MPI_OP_NULL, root, comm);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    return ckp_dispatch(CK_SCATTER, sbuf, scount, stype, rbuf, rcount, rtype, MPI_OP_NULL, root, comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    return ckp_dispatch(CK_ALLGATHER, sbuf, scount, stype, rbuf, rcount, rtype, MPI_OP_NULL, 0, comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    return ckp_dispatch(CK_ALLTOALL, sbuf, scount, stype, rbuf, rcount, rtype, MPI_OP_NULL, 0, comm);
}

#if MPI_VERSION >= 4
/* MPI-4's large-count variants: a program built against an MPI-4 library may
 * call these instead (mpi4py 4 under MPICH calls only these). A count that
 * fits an int takes the same path as the int call; a larger one goes to the
 * library. Ranks cannot disagree: a count above INT_MAX makes the call's
 * bytes exceed CK_MAX_COUNT, which sends every other rank to the library too.
 * Only counts significant at this rank are tested (ckp_int_counts): a
 * non-root's scatter send count, say, may be -1, and testing it would send
 * that rank alone to the library (issue #32). bcast's and the reductions'
 * one count is significant everywhere. */
#include <limits.h>

static int fits(MPI_Count n)
{
    return n >= 0 && n <= INT_MAX;
}

int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (!fits(count)) return PMPI_Bcast_c(buf, count, dt, root, comm);
    return MPI_Bcast(buf, (int)count, dt, root, comm);
}

int MPI_Reduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
                 MPI_Comm comm)
{
    if (!fits(count)) return PMPI_Reduce_c(sbuf, rbuf, count, dt, op, root, comm);
    return MPI_Reduce(sbuf, rbuf, (int)count, dt, op, root, comm);
}

int MPI_Allreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                    MPI_Comm comm)
{
    if (!fits(count)) return PMPI_Allreduce_c(sbuf, rbuf, count, dt, op, comm);
    return MPI_Allreduce(sbuf, rbuf, (int)count, dt, op, comm);
}

int MPI_Reduce_scatter_block_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm)
{
    if (!fits(count)) return PMPI_Reduce_scatter_block_c(sbuf, rbuf, count, dt, op, comm);
    return MPI_Reduce_scatter_block(sbuf, rbuf, (int)count, dt, op, comm);
}

int MPI_Gather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
                 MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int sc, rc;
    if (!ckp_int_counts(CK_GATHER, sbuf, scount, rbuf, rcount, root, comm, &sc, &rc))
        return PMPI_Gather_c(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    return MPI_Gather(sbuf, sc, stype, rbuf, rc, rtype, root, comm);
}

int MPI_Scatter_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
                  MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int sc, rc;
    if (!ckp_int_counts(CK_SCATTER, sbuf, scount, rbuf, rcount, root, comm, &sc, &rc))
        return PMPI_Scatter_c(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    return MPI_Scatter(sbuf, sc, stype, rbuf, rc, rtype, root, comm);
}

int MPI_Allgather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
                    MPI_Datatype rtype, MPI_Comm comm)
{
    int sc, rc;
    if (!ckp_int_counts(CK_ALLGATHER, sbuf, scount, rbuf, rcount, 0, comm, &sc, &rc))
        return PMPI_Allgather_c(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    return MPI_Allgather(sbuf, sc, stype, rbuf, rc, rtype, comm);
}

int MPI_Alltoall_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
                   MPI_Datatype rtype, MPI_Comm comm)
{
    int sc, rc;
    if (!ckp_int_counts(CK_ALLTOALL, sbuf, scount, rbuf, rcount, 0, comm, &sc, &rc))
        return PMPI_Alltoall_c(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    return MPI_Alltoall(sbuf, sc, stype, rbuf, rc, rtype, comm);
}
#endif
