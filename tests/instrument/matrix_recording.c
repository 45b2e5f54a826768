/*
 * Linked into ck_matrix_instr (tests/matrix.c against collkit_instr): turns
 * tag recording on for the whole run, so that every algorithm call of the
 * correctness matrix executes with its tags recording. The matrix then
 * checks results against its reference exactly as in the plain build, so
 * both builds passing means tags on and off give identical results.
 *
 * The matrix agrees on each configuration's verdict with MPI_Allreduce
 * between algorithm calls, and reduces the tallies with MPI_Reduce at the
 * end; PMPI wrappers of those two check there that no tag was left open by
 * the calls before (an unbalanced BEGIN/END on any path, error paths of the
 * invalid-argument checks included) and empty the buffer, so it never fills.
 * At exit a rank that saw unbalanced tags, or recorded nothing at all, fails
 * the run (exit status 1).
 */
#include <collkit/spans.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

static uint64_t records, dropped, unbalanced, checkpoints;

static void checkpoint(void)
{
    checkpoints++;
    records += ck_spans_count();
    dropped += ck_spans_dropped();
    unbalanced += ck_spans_unbalanced() + (uint64_t)ck_spans_open();
    ck_spans_reset();
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    checkpoint();
    return PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    checkpoint();
    return PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
}

static void verdict(void)
{
    checkpoint();
    ck_spans_finalize();
    if (unbalanced > 0 || records == 0) {
        fprintf(stderr,
                "ck_matrix_instr: %llu records, %llu dropped, %llu unbalanced or left open over %llu "
                "checkpoints: %s\n",
                (unsigned long long)records, (unsigned long long)dropped, (unsigned long long)unbalanced,
                (unsigned long long)checkpoints, unbalanced ? "tags do not nest" : "nothing was recorded");
        _Exit(1);
    }
}

/* Before main: the buffer exists and records from the first call on. */
__attribute__((constructor)) static void start_recording(void)
{
    if (ck_spans_init((size_t)1 << 16) != 0) {
        fprintf(stderr, "ck_matrix_instr: cannot allocate the tag buffer\n");
        _Exit(3);
    }
    ck_spans_enable(1);
    atexit(verdict);
}
