/* One call of one collective, for comparing the messages SMPI's own
 * algorithms send (SimGrid's Paje trace with tracing/smpi/internals) with
 * ck_trace's (tests/python/test_parity.py). Usage: smpi_one_call COLLECTIVE
 * COUNT ROOT, int8 data, MPI_SUM; COUNT is the per-call count of libcollkit's
 * signature (the per-rank block for the block collectives), so both sides
 * move the same bytes. Nothing else communicates, so every message in the
 * trace belongs to the collective. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, rc = MPI_SUCCESS;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc != 4) {
        fprintf(stderr, "usage: smpi_one_call COLLECTIVE COUNT ROOT\n");
        MPI_Finalize();
        return 2;
    }
    const char *c = argv[1];
    int n = atoi(argv[2]), root = atoi(argv[3]);
    /* Room for p blocks of n on both sides covers every collective here. */
    signed char *a = calloc((size_t)n * (size_t)p + 1, 1), *b = calloc((size_t)n * (size_t)p + 1, 1);
    if (a == NULL || b == NULL) {
        MPI_Finalize();
        return 1;
    }
    const MPI_Datatype t = MPI_INT8_T;
    const MPI_Comm w = MPI_COMM_WORLD;
    if (!strcmp(c, "bcast")) rc = MPI_Bcast(a, n, t, root, w);
    else if (!strcmp(c, "reduce")) rc = MPI_Reduce(a, b, n, t, MPI_SUM, root, w);
    else if (!strcmp(c, "allreduce")) rc = MPI_Allreduce(a, b, n, t, MPI_SUM, w);
    else if (!strcmp(c, "gather")) rc = MPI_Gather(a, n, t, b, n, t, root, w);
    else if (!strcmp(c, "scatter")) rc = MPI_Scatter(a, n, t, b, n, t, root, w);
    else if (!strcmp(c, "allgather")) rc = MPI_Allgather(a, n, t, b, n, t, w);
    else if (!strcmp(c, "alltoall")) rc = MPI_Alltoall(a, n, t, b, n, t, w);
    else if (!strcmp(c, "reduce_scatter")) rc = MPI_Reduce_scatter_block(a, b, n, t, MPI_SUM, w);
    else {
        fprintf(stderr, "smpi_one_call: unknown collective %s\n", c);
        rc = MPI_ERR_ARG;
    }
    free(a);
    free(b);
    MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : 3;
}
