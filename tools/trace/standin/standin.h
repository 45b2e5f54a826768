/* Control of the in-process MPI stand-in (ck_trace only). */
#ifndef CK_STANDIN_H
#define CK_STANDIN_H

#include <mpi.h>

#include "../msgs.h"

#ifndef CK_MPI_STANDIN
#error "standin.h needs the stand-in mpi.h (tools/trace/standin) first on the include path"
#endif

/* A non-commutative op, so that MPI_Op_commutative can answer both ways. */
#define CK_STANDIN_OP_NONCOMMUTATIVE ((MPI_Op)5)

/* From now on MPI_COMM_WORLD has `size` ranks and the caller is `rank`; every
 * send on it is appended to `sink`, steps counting from 0. */
void ck_standin_begin(int rank, int size, ck_msgs *sink);

/* Ends the rank's execution; returns how many of its non-blocking requests
 * were never completed by MPI_Waitall (0 for a well-formed schedule). */
long ck_standin_end(void);

#endif /* CK_STANDIN_H */
