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

/* At least this many bytes per step (all blocks of one message) before a
 * datatype of addresses pays for itself over packing into a contiguous
 * buffer (measured: docs/benchmarks.md, "Bruck without the extra copies"). */
#define CK_SCATTERED_MIN_BYTES 4096

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
    MPI_Datatype type;
} ck_scattered;

int ck_scattered_make(int nb, char *const *blocks, MPI_Aint *disp, size_t count, MPI_Datatype dt,
                      ck_scattered *out);
void ck_scattered_free(ck_scattered *s);

/* One exchange of two such messages (ck_sendrecv's counterpart: the local
 * work charged so far goes first, the message is tagged "comm"). */
int ck_sendrecv_scattered(const ck_scattered *send, int dst, const ck_scattered *recv, int src,
                          int tag, MPI_Comm comm);

#endif
