/* The replay input that `collkit replay` writes (python/collkit/program/replay_input.py
 * documents the format): communicators to rebuild, call classes, and each
 * rank's calls in order with the gap before each. */
#ifndef CK_REPLAY_INPUT_H
#define CK_REPLAY_INPUT_H

#include <mpi.h>
#include <stddef.h>

#include "collkit/collkit.h"

/* comm index 0 is MPI_COMM_WORLD, 1 is MPI_COMM_SELF, 2.. the listed ones. */
#define RP_FIRST_SPLIT 2

typedef struct {
    int size;
    int *members; /* world ranks, in the order of their rank in the communicator */
} rp_comm;

typedef struct {
    int barrier;                /* MPI_Barrier: no buffers, always the library */
    ck_collective coll;         /* else this collective */
    int comm;                   /* comm index */
    size_t count;               /* elements of dt: bytes / element size */
    MPI_Datatype dt;
    MPI_Op op;                  /* MPI_OP_NULL where the collective has none */
    int root;
    int in_place;
    const ck_algorithm *alg;    /* NULL: the library's own collective */
} rp_class;

typedef struct {
    int cls;
    double gap_s;               /* simulated computation before the call */
} rp_call;

typedef struct {
    int ranks;
    int ncomms;                 /* listed communicators (indices RP_FIRST_SPLIT..) */
    rp_comm *comms;
    int nclasses;
    rp_class *classes;
    long ncalls;
    rp_call *calls;             /* this rank's */
} rp_input;

/* Reads DIR/replay.txt and DIR/rank-<rank>.txt. Returns 0, or -1 after
 * writing one line naming the file and the problem into err. */
int rp_input_read(const char *dir, int rank, rp_input *in, char *err, size_t errlen);
void rp_input_free(rp_input *in);

#endif
