/*
 * collkit-call-cost: one libcollkit algorithm called back to back, for
 * counting what a call costs outside its messages (issue #43): argument
 * checks, datatype queries, temporaries, copies. Run it under
 * `valgrind --tool=callgrind --toggle-collect=ck_algorithm_call` with two or
 * more ranks; scripts/bench_call_cost.py does that for every collective and
 * sorts the instructions into libcollkit's own, MPI's queries, allocation,
 * and the messages themselves. Instruction counts, not times: the same for
 * the same binary and inputs whatever else the machine is doing, so a
 * before/after is exact on a shared machine (the messages' part is not: a
 * rank waiting in MPI's progress loop runs instructions for as long as it
 * waits).
 *
 *   collkit-call-cost COLLECTIVE ALGORITHM [--count N] [--calls K] [--dtype NAME]
 *
 * Buffers of p blocks of count elements on every rank (the largest any
 * collective needs), root 0, MPI_SUM, out of place; every result is left
 * unchecked (the correctness matrix checks them). Rank 0 prints its pid
 * (`rank 0 pid N`: callgrind names its file by pid). Exit status 2 with one
 * line for a bad argument, 1 when a call fails.
 */
#include <collkit/collkit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: collkit-call-cost COLLECTIVE ALGORITHM [--count N] [--calls K] [--dtype NAME]";

static int bad(int rank, const char *what)
{
    if (rank == 0) fprintf(stderr, "collkit-call-cost: %s\n%s\n", what, usage);
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc < 3) return bad(rank, "give a collective and an algorithm");
    ck_collective coll;
    if (ck_collective_parse(argv[1], &coll) != 0) return bad(rank, "unknown collective");
    const ck_algorithm *a = ck_algorithm_find(coll, argv[2]);
    if (a == NULL) return bad(rank, "unknown algorithm of this collective");
    long count = 2, calls = 1000;
    const char *dtype = "int32";
    for (int i = 3; i < argc; i++) {
        char *end = NULL;
        if (i + 1 >= argc) return bad(rank, "an option without its value");
        if (strcmp(argv[i], "--count") == 0) {
            count = strtol(argv[++i], &end, 10);
            if (*end != '\0' || count < 0 || count > (1L << 24)) return bad(rank, "--count: 0 to 2^24");
        } else if (strcmp(argv[i], "--calls") == 0) {
            calls = strtol(argv[++i], &end, 10);
            if (*end != '\0' || calls < 1 || calls > 10000000) return bad(rank, "--calls: 1 to 10^7");
        } else if (strcmp(argv[i], "--dtype") == 0) {
            dtype = argv[++i];
        } else {
            return bad(rank, "unknown option");
        }
    }
    const ck_datatype_desc *d = ck_datatype_find(dtype);
    if (d == NULL) return bad(rank, "--dtype: a name of collkit's datatype table (int32, double, ...)");
    MPI_Datatype dt = ck_datatype_mpi(d);
    int size;
    MPI_Type_size(dt, &size);
    size_t bytes = (size_t)count * (size_t)p * (size_t)size + 1;
    char *s = calloc(bytes, 1), *r = calloc(bytes, 1);
    if (s == NULL || r == NULL) {
        fprintf(stderr, "collkit-call-cost: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < calls; i++) {
        int rc = ck_algorithm_call(a, s, r, (size_t)count, dt, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "collkit-call-cost: %s/%s returned MPI error %d\n", argv[1], argv[2], rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    /* which process is rank 0: its callgrind file is named by its pid */
    if (rank == 0) printf("rank 0 pid %ld\n", (long)getpid());
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
