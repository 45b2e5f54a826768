/* Blocks that sit at scattered places, possibly in two buffers, moved in one
 * message without packing them first: a datatype of the blocks' addresses,
 * as the libraries' own Bruck exchanges send and receive a step's blocks in
 * place (Open MPI coll/base and MPICH build an indexed datatype per step).
 * The addresses are taken relative to the lowest block, which is the buffer
 * the message names: SimGrid's SMPI refuses MPI_BOTTOM as a message buffer.
 * For large blocks a packed copy per step is the cost that matters; for a
 * few bytes, building the datatype costs more than the copy it saves
 * (ck_scattered_pays says which). */
#ifndef CK_SCATTERED_H
#define CK_SCATTERED_H

#include "ck_core.h"

/* At least this many bytes per message before a datatype of addresses pays
 * for itself over packing into a contiguous buffer: at 2 ranks, Bruck's
 * alltoall with 4 KiB steps was 1.1 times slower through datatypes than
 * packed, with 32 KiB steps 1.2 times faster (docs/benchmarks.md, "Same
 * schedule, no slower"). */
#define CK_SCATTERED_MIN_BYTES 16384

/* Whether a message of nb blocks of count elements of dt is worth sending
 * from (or receiving into) scattered places rather than packed. Decided from
 * values equal on every rank of the call (count, dt's size, nb), so every
 * rank takes the same path. */
int ck_scattered_pays(int nb, size_t count, MPI_Datatype dt);

/* nb blocks of count elements of dt, block i at blocks[i], as one message:
 * *base (the lowest block) and a committed datatype of the blocks relative
 * to it. disp is scratch of nb entries. Free the type with MPI_Type_free. */
typedef struct {
    void *base;
    int count;              /* of type: 1 for a made datatype, the elements of a run */
    MPI_Datatype type;
    int made;               /* the type is ours to free */
} ck_scattered;

int ck_scattered_make(int nb, char *const *blocks, MPI_Aint *disp, size_t count, MPI_Datatype dt,
                      ck_scattered *out);
/* One contiguous run of count elements of dt at start, in the same form (no
 * datatype made: a message whose blocks happen to be adjacent). */
int ck_scattered_run(void *start, size_t count, MPI_Datatype dt, ck_scattered *out);
void ck_scattered_free(ck_scattered *s);

/* One exchange of two such messages (ck_sendrecv's counterpart: the local
 * work charged so far goes first, the message is tagged "comm"). */
int ck_sendrecv_scattered(const ck_scattered *send, int dst, const ck_scattered *recv, int src,
                          int tag, MPI_Comm comm);

#endif
